package resources_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// holdCounter changes project's usage counter of resource by delta in a
// transaction of f's connection that stays open, as a concurrent writer
// that has counted a claim and not committed yet; commit ends it.
func holdCounter(t *testing.T, f *fixture, project, resource string, delta int64) (tx pgx.Tx) {
	t.Helper()
	tx, err := f.DB.Begin(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := tx.Exec(f.Ctx, `
		UPDATE project_usages SET used = used + $3
		WHERE project_id = (SELECT id FROM projects WHERE external_id = $1) AND resource = $2`, project, resource, delta)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("holding %s's %s counter: %v (%d rows)", project, resource, err, tag.RowsAffected())
	}
	return tx
}

// waitForLockWait waits until some transaction waits for a lock that tx
// (open on f's connection) holds.
func waitForLockWait(t *testing.T, f *fixture, tx pgx.Tx) {
	t.Helper()
	ledgertest.WaitFor(t, func() bool {
		var n int
		if err := tx.QueryRow(f.Ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}

// TestQuotaCheckedAtNewestUsage: a claim of a limited project whose
// usage counter another writer holds waits for that writer and checks
// the usage it committed, not the usage its own statement's snapshot
// holds; alone and in a batch. Here the other writer takes the project
// up to its limit while the claims wait: a claim checked against the
// snapshot's usage would be written, and the project would end over its
// limit.
func TestQuotaCheckedAtNewestUsage(t *testing.T) {
	q := &quotas.Quota{Given: map[string]quotas.Limits{"demo": {"VCPU": 8}}}
	write := func(s *ledger.Store, w resources.ConsumerAllocations) error {
		return s.Allocations.ClaimWrite(context.Background(), resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w}, Quota: q})
	}
	t.Run("alone", func(t *testing.T) {
		f := newFixture(t)
		rp := f.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536))
		// The first claim creates the project's counters (the general
		// path), the second finds them (the fast path): demo holds 4.
		for range 2 {
			if err := write(f.Store, claimIn("demo", rp, 2, 1)); err != nil {
				t.Fatal(err)
			}
		}
		tx := holdCounter(t, f, "demo", "VCPU", 4)
		done := make(chan error, 1)
		go func() { done <- write(f.Store, claimIn("demo", rp, 2, 1)) }()
		waitForLockWait(t, f, tx)
		if err := tx.Commit(f.Ctx); err != nil {
			t.Fatal(err)
		}
		quotaRefusal(t, <-done, "project demo: VCPU 2 requested, 8 of 8 used")
		if _, err := f.DB.Exec(f.Ctx, `UPDATE project_usages SET used = used - 4 WHERE resource = 'VCPU'
			AND project_id = (SELECT id FROM projects WHERE external_id = 'demo')`); err != nil {
			t.Fatal(err)
		}
		f.checkUsages()
	})
	t.Run("batch", func(t *testing.T) {
		bf, _ := newBatchFixture(t)
		rp := bf.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536))
		// Two consumers in one write (the general path: the store's
		// claim writer is held busy) create demo's counters: it holds 2,
		// 6 once the other writer commits; of three claims of 2 queued
		// together, one fits.
		err := bf.store.Allocations.ClaimWrite(bf.Ctx, resources.ClaimWriteParams{Quota: q,
			Consumers: []resources.ConsumerAllocations{claimIn("demo", rp, 1, 1), claimIn("demo", rp, 1, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		tx := holdCounter(t, bf.fixture, "demo", "VCPU", 4)
		queued := queuedClaims(bf.store)
		var answers []chan error
		for range 3 {
			a := make(chan error, 1)
			answers = append(answers, a)
			w := claimIn("demo", rp, 2, 1)
			go func() { a <- write(bf.store, w) }()
		}
		ledgertest.WaitFor(t, func() bool { return queuedClaims(bf.store) == queued+3 })
		bf.release()
		if err := <-bf.first; err != nil {
			t.Fatal(err)
		}
		waitForLockWait(t, bf.fixture, tx)
		if err := tx.Commit(bf.Ctx); err != nil {
			t.Fatal(err)
		}
		written := 0
		for _, a := range answers {
			switch err := <-a; {
			case err == nil:
				written++
			case fault.HasCode(err, fault.ErrForbidden, fault.CodeOverQuota):
			default:
				t.Errorf("claim: %v", err)
			}
		}
		if written != 1 {
			t.Fatalf("%d of the batch's claims written, want 1", written)
		}
		if b, c := claimBatches(bf.store); c-b < 2 {
			t.Fatalf("%d batches of %d claims: the claims did not go out together", b, c)
		}
		if _, err := bf.DB.Exec(bf.Ctx, `UPDATE project_usages SET used = used - 4 WHERE resource = 'VCPU'
			AND project_id = (SELECT id FROM projects WHERE external_id = 'demo')`); err != nil {
			t.Fatal(err)
		}
		bf.checkUsages()
	})
}

// TestQuotaAtTheLimitRace races claims of two limited projects right at
// their limits, and of an unlimited one, from three stores at once: two
// whose claims go out in batches (each store's writer held busy until
// its claims have queued) and one that writes each claim alone. While
// they run, every other writer of the same counters and providers runs
// too (quotaRaceMix): moves confirmed and reverted, the lease reaper's
// revert racing the client's, reschedules, a write of two projects'
// consumers and their deletes, and changes of limits that do not bind.
// It does so in rounds, each with projects of its own whose counters
// exist only in part when the round starts (its movers hold memory
// only), so that counters are created while the claims race as well as
// locked at the limit.
//
// In every round, exactly as many claims of each limited project are
// written as its limit holds (one limited in VCPU, the other in
// consumers, each with a second limit that does not bind), every other
// claim of it is refused over quota, the unlimited project's claims are
// all written, every operation of the mix succeeds (of a reaper's and a
// client's revert of one move, exactly one), and the counters are exact.
// At the end, no transaction of the test's database deadlocked.
func TestQuotaAtTheLimitRace(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	// A provider per claim: the claims share no provider lock, so only
	// the counters' locks order them; the mix moves between them.
	const perStore, rounds = 36, 3
	var rps []string
	for i := range 3 * perStore {
		rps = append(rps, f.Provider(fmt.Sprintf("rp%d", i), ledgertest.Inv("VCPU", 1024), ledgertest.Inv("MEMORY_MB", 1<<20)))
	}
	q := &quotas.Quota{}
	var batched []*ledger.Store
	var held []string
	for i := range 2 {
		s, err := ledger.Open(f.Ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4, ClaimWriters: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		batched = append(batched, s)
		held = append(held, f.Provider(fmt.Sprintf("held%d", i), ledgertest.Inv("VCPU", 8), ledgertest.Inv("MEMORY_MB", 8)))
	}
	lone := ledgertest.OpenStore(t, dbURL)
	stores := append([]*ledger.Store{lone, f.Store}, batched...)

	for round := range rounds {
		const vcpuLimit, consumerLimit, size, movers = 24, 10, 2, 2
		edge, edge2, free := fmt.Sprintf("edge%d", round), fmt.Sprintf("edge2-%d", round), fmt.Sprintf("free%d", round)
		projects := []string{edge, edge2, free}
		// The movers count as consumers of edge2: its limit leaves room
		// for consumerLimit claims.
		if err := f.Store.Quotas.LimitsSet(f.Ctx, edge, quotas.Limits{"VCPU": vcpuLimit, "MEMORY_MB": 1 << 30}); err != nil {
			t.Fatal(err)
		}
		if err := f.Store.Quotas.LimitsSet(f.Ctx, edge2, quotas.Limits{quotas.ResourceConsumers: consumerLimit + movers, "VCPU": 1 << 30}); err != nil {
			t.Fatal(err)
		}
		mix := newQuotaRaceMix(t, f, stores, q, rps, projects, movers)
		mix.vcpuLimit = vcpuLimit

		var mu sync.Mutex
		written, refused := map[string]int{}, map[string]int{}
		var wg sync.WaitGroup
		claim := func(s *ledger.Store, i int) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := projects[i%3]
				err := s.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{
					Consumers: []resources.ConsumerAllocations{claimIn(p, rps[i], size, 64)}, Quota: q})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					written[p]++
				case fault.HasCode(err, fault.ErrForbidden, fault.CodeOverQuota):
					refused[p]++
				default:
					t.Errorf("claim of %s: %v", p, err)
				}
			}()
		}
		// Each batched store's writer waits on a held provider while 36
		// claims queue behind it; then the holds go, and the lone
		// store's 36 claims and the mix start, all at once.
		var releases []func()
		firsts := make(chan error, len(batched))
		var batches0, claims0 []int64
		for i, s := range batched {
			b0, c0 := claimBatches(s)
			batches0, claims0 = append(batches0, b0), append(claims0, c0)
			releases = append(releases, holdProvider(t, f, dbURL, held[i]))
			go func() {
				firsts <- s.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{claimIn(free, held[i], 1, 1)})
			}()
			ledgertest.WaitFor(t, func() bool { b, _ := claimBatches(s); return b == b0+1 })
			for j := range perStore {
				claim(s, i*perStore+j)
			}
			ledgertest.WaitFor(t, func() bool { return queuedClaims(s) == perStore })
		}
		mixed := mix.start()
		for _, release := range releases {
			release()
		}
		for j := range perStore {
			claim(lone, 2*perStore+j)
		}
		wg.Wait()
		for range batched {
			if err := <-firsts; err != nil {
				t.Fatal(err)
			}
		}
		mixed.Wait()
		if t.Failed() {
			t.FailNow()
		}
		if written[edge] != vcpuLimit/size || written[edge2] != consumerLimit || refused[free] != 0 ||
			written[edge]+refused[edge] != 36 || written[edge2]+refused[edge2] != 36 || written[free] != 36 {
			t.Fatalf("round %d: written %v, refused %v; want %s %d, %s %d and %s 36 written of 36 claims each",
				round, written, refused, edge, vcpuLimit/size, edge2, consumerLimit, free)
		}
		if got := f.projectUsage(edge)["VCPU"]; got != vcpuLimit {
			t.Fatalf("%s holds VCPU %d, want its limit %d", edge, got, vcpuLimit)
		}
		if got := f.projectUsage(edge2)[quotas.ResourceConsumers]; got != consumerLimit+movers {
			t.Fatalf("%s holds %d consumers, want its limit %d", edge2, got, consumerLimit+movers)
		}
		for i, s := range batched {
			if b, c := claimBatches(s); (c-claims0[i])-(b-batches0[i]) < 2 {
				t.Fatalf("round %d: %d batches of %d claims: the claims did not go out together", round, b-batches0[i], c-claims0[i])
			}
		}
		f.checkUsages()
	}

	// No deadlock: the stores' backends report their statistics as they
	// exit.
	for _, s := range stores {
		s.Close()
	}
	if err := f.DB.Close(f.Ctx); err != nil {
		t.Fatal(err)
	}
	if deadlocks := ledgertest.Deadlocks(t, dbURL); deadlocks != 0 {
		t.Fatalf("%d transactions deadlocked", deadlocks)
	}
}

// quotaRaceMix is what TestQuotaAtTheLimitRace runs beside its claims:
// every other kind of write of the same projects' counters and the same
// providers, through the general path, none of which changes what the
// claims may hold (the movers hold memory only, which no limit binds).
type quotaRaceMix struct {
	t        *testing.T
	f        *fixture
	dbMu     *sync.Mutex // f.DB is one connection
	stores   []*ledger.Store
	q        *quotas.Quota
	rps      []string
	projects []string
	// movers are consumers of each project, seeded before the round:
	// memory only, so their project's VCPU counter does not exist yet.
	movers []*quotaMover
	// vcpuLimit is the first project's limit of VCPU, which binds.
	vcpuLimit int64
}

// quotaMover is a seeded instance and where it is.
type quotaMover struct {
	uuid, project string
	rp            int // index into rps
	mem           int64
}

// newQuotaRaceMix seeds n movers in each of projects.
func newQuotaRaceMix(t *testing.T, f *fixture, stores []*ledger.Store, q *quotas.Quota, rps, projects []string, n int) *quotaRaceMix {
	m := &quotaRaceMix{t: t, f: f, dbMu: &sync.Mutex{}, stores: stores, q: q, rps: rps, projects: projects}
	for i, p := range projects {
		for j := range n {
			mv := &quotaMover{uuid: uuid.NewString(), project: p, rp: (7*i + 13*j) % len(rps), mem: 128}
			w := ledgertest.Alloc(mv.uuid, rps[mv.rp], ledgertest.Res("MEMORY_MB", mv.mem))
			w.ProjectID, w.ConsumerType = p, "INSTANCE"
			if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}); err != nil {
				t.Fatal(err)
			}
			m.movers = append(m.movers, mv)
		}
	}
	return m
}

// start runs the mix in goroutines; Wait waits for it.
func (m *quotaRaceMix) start() *sync.WaitGroup {
	var wg sync.WaitGroup
	for i, mv := range m.movers {
		wg.Add(1)
		go func() { defer wg.Done(); m.move(m.stores[i%len(m.stores)], mv, i) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); m.pairs(m.stores[1]) }()
	go func() { defer wg.Done(); m.limits(m.stores[0]) }()
	return &wg
}

// write runs one ClaimWrite of the mix, which must succeed.
func (m *quotaRaceMix) write(s *ledger.Store, what string, p resources.ClaimWriteParams) {
	m.t.Helper()
	if err := s.Allocations.ClaimWrite(m.f.Ctx, p); err != nil {
		m.t.Errorf("%s: %v", what, err)
	}
}

// generation reads consumer's generation.
func (m *quotaRaceMix) generation(s *ledger.Store, consumer string) *int64 {
	cur, err := s.Allocations.AllocationsByConsumer(m.f.Ctx, consumer)
	if err != nil || cur.Consumer == nil {
		m.t.Errorf("reading %s: %v (consumer %v)", consumer, err, cur.Consumer)
		return ledgertest.Gen(0)
	}
	return ledgertest.Gen(cur.Consumer.Generation)
}

// instance is mv's write of mem on rps[rp] at generation g.
func (m *quotaRaceMix) instance(mv *quotaMover, rp int, mem int64, g *int64) resources.ConsumerAllocations {
	w := ledgertest.Alloc(mv.uuid, m.rps[rp], ledgertest.Res("MEMORY_MB", mem))
	w.ProjectID, w.ConsumerType, w.CheckGeneration, w.Generation = mv.project, "INSTANCE", true, g
	return w
}

// move moves mv three times, as claims' Move does it (the instance
// gets a destination, a new migration consumer takes over its source),
// and ends the moves in turn by a confirm, by the client's revert, and
// by the lease reaper's revert racing the client's; after each, a
// reschedule. The migration consumer's uuid sorts before the
// instance's, so a writer that locked the instance first and the
// migration consumer then would lock them out of order.
func (m *quotaRaceMix) move(s *ledger.Store, mv *quotaMover, seed int) {
	for it := range 3 {
		g := m.generation(s, mv.uuid)
		mig := uuid.NewString()
		for mig >= mv.uuid {
			mig = uuid.NewString()
		}
		dst, mem := (mv.rp+11+seed+it)%len(m.rps), int64(128+64*((seed+it)%3))
		src := ledgertest.Alloc(mig, m.rps[mv.rp], ledgertest.Res("MEMORY_MB", mv.mem))
		src.ProjectID, src.ConsumerType, src.CheckGeneration = mv.project, resources.MigrationConsumerType, true
		m.write(s, "move", resources.ClaimWriteParams{
			Consumers: []resources.ConsumerAllocations{m.instance(mv, dst, mem, g), src}, Quota: m.q,
			Move:  &claimrecords.MoveRecord{ConsumerUUID: mv.uuid, MigrationUUID: mig, Reason: "relocation", SourceRoot: m.rps[mv.rp]},
			State: &claimrecords.ClaimStateWrite{Op: "move", RootUUID: m.rps[dst], LeaseSeconds: 3600, Mode: claimrecords.LeaseMove}})
		migration := resources.ConsumerAllocations{ConsumerUUID: mig, ProjectID: mv.project, UserID: "user",
			CheckGeneration: true, Generation: ledgertest.Gen(1)}
		revert := resources.ClaimWriteParams{ForgetMove: mv.uuid, MoveEnd: claimrecords.MoveReverted,
			Consumers: []resources.ConsumerAllocations{m.instance(mv, mv.rp, mv.mem, ledgertest.Gen(*g+1)), migration}}
		switch it {
		case 0:
			m.write(s, "confirm", resources.ClaimWriteParams{ForgetMove: mv.uuid, MoveEnd: claimrecords.MoveConfirmed,
				Consumers: []resources.ConsumerAllocations{migration}})
			mv.rp, mv.mem = dst, mem
		case 1:
			revert.Quota = m.q
			m.write(s, "revert", revert)
		case 2:
			m.dbMu.Lock()
			m.f.Expire(mv.uuid)
			m.dbMu.Unlock()
			reaper := revert
			reaper.IfLeaseExpired = mv.uuid
			client := revert
			client.Quota = m.q
			errs := make(chan error, 2)
			for _, p := range []resources.ClaimWriteParams{reaper, client} {
				go func() { errs <- s.Allocations.ClaimWrite(m.f.Ctx, p) }()
			}
			ok := 0
			for range 2 {
				switch err := <-errs; {
				case err == nil:
					ok++
				case !errors.Is(err, fault.ErrConflict):
					m.t.Errorf("revert racing the reaper's: %v", err)
				}
			}
			if ok != 1 {
				m.t.Errorf("%d of the reaper's and the client's reverts written, want 1", ok)
			}
		}
		// A reschedule: the instance's allocations replaced, checked.
		rp, mem := (mv.rp+5+it)%len(m.rps), int64(64+64*it)
		m.write(s, "reschedule", resources.ClaimWriteParams{Quota: m.q,
			Consumers: []resources.ConsumerAllocations{m.instance(mv, rp, mem, m.generation(s, mv.uuid))}})
		mv.rp, mv.mem = rp, mem
	}
}

// pairs writes two new consumers of two projects in one checked write
// (the first project's and the last's: not the one limited in
// consumers), as a Placement-API write of several consumers does, and
// deletes them.
func (m *quotaRaceMix) pairs(s *ledger.Store) {
	for it := range 4 {
		var ws []resources.ConsumerAllocations
		for j, p := range []string{m.projects[0], m.projects[2]} {
			w := ledgertest.Alloc(uuid.NewString(), m.rps[(17*it+29*j)%len(m.rps)], ledgertest.Res("MEMORY_MB", 32))
			w.ProjectID, w.CheckGeneration = p, true
			ws = append(ws, w)
		}
		if err := s.Allocations.AllocationsReplaceChecked(m.f.Ctx, ws, m.q); err != nil {
			m.t.Errorf("two consumers' write: %v", err)
			return
		}
		for _, w := range ws {
			if err := s.Allocations.AllocationsDelete(m.f.Ctx, w.ConsumerUUID); err != nil {
				m.t.Errorf("delete: %v", err)
			}
		}
	}
}

// limits changes limits that do not bind while the claims run: the
// registered limit of memory (the unlimited project's, and the
// consumer-limited project's memory) on and off, and the VCPU-limited
// project's memory limit.
func (m *quotaRaceMix) limits(s *ledger.Store) {
	for it := range 6 {
		reg := quotas.Limits{}
		if it%2 == 0 {
			reg["MEMORY_MB"] = 1 << 40
		}
		if err := s.Quotas.RegisteredLimitsSet(m.f.Ctx, reg); err != nil {
			m.t.Errorf("registered limits: %v", err)
		}
		if err := s.Quotas.LimitsSet(m.f.Ctx, m.projects[0], quotas.Limits{"VCPU": m.vcpuLimit, "MEMORY_MB": 1<<30 + int64(it)}); err != nil {
			m.t.Errorf("limits: %v", err)
		}
	}
}

// TestQuotaRemaindersRace races, in rounds, two stores' batches
// whose first claim never fits, so that every claim of each batch is
// sent again one statement each (the batch's remainder), claims of two
// projects without limits in opposite orders on the two stores and of
// different classes, and writes of both projects' consumers at once by
// the general path. Each remainder locks its claims' usage counters in
// one step and in the global order, so nothing deadlocks; every claim
// that fits is written and the counters are exact.
func TestQuotaRemaindersRace(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	const rounds, perStore = 4, 12
	projects := []string{"pa", "pb"}
	f.Known(projects, nil, nil)
	var rps []string
	for i := range 2 * perStore {
		rps = append(rps, f.Provider(fmt.Sprintf("rp%d", i), ledgertest.Inv("VCPU", 1024), ledgertest.Inv("MEMORY_MB", 1<<20), ledgertest.Inv("DISK_GB", 1<<20)))
	}
	var batched []*ledger.Store
	var held, tiny []string
	for i := range 2 {
		s, err := ledger.Open(f.Ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4, ClaimWriters: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		batched = append(batched, s)
		held = append(held, f.Provider(fmt.Sprintf("held%d", i), ledgertest.Inv("VCPU", 64)))
		tiny = append(tiny, f.Provider(fmt.Sprintf("tiny%d", i), ledgertest.Inv("VCPU", 1)))
	}
	// claim is a claim of project p on rp of VCPU, or (odd j) of memory and
	// disk: its counters differ with j.
	claim := func(p, rp string, j int) resources.ConsumerAllocations {
		w := ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))
		if j%2 == 1 {
			w = ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("MEMORY_MB", 64), ledgertest.Res("DISK_GB", 1))
		}
		w.ProjectID = p
		return w
	}
	for round := range rounds {
		var wg sync.WaitGroup
		write := func(what string, f func() error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := f(); err != nil {
					t.Errorf("round %d: %s: %v", round, what, err)
				}
			}()
		}
		var releases []func()
		firsts := make(chan error, len(batched))
		for i, s := range batched {
			b0, _ := claimBatches(s)
			releases = append(releases, holdProvider(t, f, dbURL, held[i]))
			go func() {
				firsts <- s.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), held[i], ledgertest.Res("VCPU", 1))})
			}()
			ledgertest.WaitFor(t, func() bool { b, _ := claimBatches(s); return b == b0+1 })
			// The batch's first claim asks for more than its tiny provider
			// holds.
			queued := 0
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := ledgertest.NewClaim(uuid.NewString(), tiny[i], ledgertest.Res("VCPU", 2))
				w.ProjectID = projects[i]
				if err := s.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}); !errors.Is(err, fault.ErrConflict) {
					t.Errorf("round %d: the claim that does not fit: %v", round, err)
				}
			}()
			queued++
			ledgertest.WaitFor(t, func() bool { return queuedClaims(s) == queued })
			for j := range perStore {
				p := projects[(i+j)%2] // store 0: pa, pb, ...; store 1: pb, pa, ...
				w := claim(p, rps[i*perStore+j], j/2)
				write("claim", func() error { return s.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}) })
				queued++
				ledgertest.WaitFor(t, func() bool { return queuedClaims(s) == queued })
			}
		}
		// Both projects' consumers at once, by the general path.
		for j := range 4 {
			ws := []resources.ConsumerAllocations{claim("pa", rps[j], j), claim("pb", rps[perStore+j], j+1)}
			write("two projects' consumers", func() error { return f.Store.Allocations.AllocationsReplace(f.Ctx, ws) })
		}
		for _, release := range releases {
			release()
		}
		wg.Wait()
		for range batched {
			if err := <-firsts; err != nil {
				t.Fatal(err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		f.checkUsages()
	}
	for _, s := range append(batched, f.Store) {
		s.Close()
	}
	if err := f.DB.Close(f.Ctx); err != nil {
		t.Fatal(err)
	}
	if deadlocks := ledgertest.Deadlocks(t, dbURL); deadlocks != 0 {
		t.Fatalf("%d transactions deadlocked", deadlocks)
	}
}
