package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
)

// holdCounter changes project's usage counter of resource by delta in a
// transaction of f's connection that stays open, as a concurrent writer
// that has counted a claim and not committed yet; commit ends it.
func holdCounter(t *testing.T, f *fixture, project, resource string, delta int64) (tx pgx.Tx) {
	t.Helper()
	tx, err := f.db.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := tx.Exec(f.ctx, `
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
	waitFor(t, func() bool {
		var n int
		if err := tx.QueryRow(f.ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n); err != nil {
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
	q := &ledger.Quota{Given: map[string]ledger.Limits{"demo": {"VCPU": 8}}}
	write := func(s *ledger.Store, w ledger.ConsumerAllocations) error {
		return s.ClaimWrite(context.Background(), ledger.ClaimWriteParams{Consumers: []ledger.ConsumerAllocations{w}, Quota: q})
	}
	t.Run("alone", func(t *testing.T) {
		f := newFixture(t)
		rp := f.provider("rp", inv("VCPU", 64), inv("MEMORY_MB", 65536))
		// The first claim creates the project's counters (the general
		// path), the second finds them (the fast path): demo holds 4.
		for range 2 {
			if err := write(f.store, claimIn("demo", rp, 2, 1)); err != nil {
				t.Fatal(err)
			}
		}
		tx := holdCounter(t, f, "demo", "VCPU", 4)
		done := make(chan error, 1)
		go func() { done <- write(f.store, claimIn("demo", rp, 2, 1)) }()
		waitForLockWait(t, f, tx)
		if err := tx.Commit(f.ctx); err != nil {
			t.Fatal(err)
		}
		quotaRefusal(t, <-done, "project demo: VCPU 2 requested, 8 of 8 used")
		if _, err := f.db.Exec(f.ctx, `UPDATE project_usages SET used = used - 4 WHERE resource = 'VCPU'
			AND project_id = (SELECT id FROM projects WHERE external_id = 'demo')`); err != nil {
			t.Fatal(err)
		}
		f.checkUsages()
	})
	t.Run("batch", func(t *testing.T) {
		bf, _ := newBatchFixture(t)
		rp := bf.provider("rp", inv("VCPU", 64), inv("MEMORY_MB", 65536))
		// Two consumers in one write (the general path: the store's
		// claim writer is held busy) create demo's counters: it holds 2,
		// 6 once the other writer commits; of three claims of 2 queued
		// together, one fits.
		err := bf.store.ClaimWrite(bf.ctx, ledger.ClaimWriteParams{Quota: q,
			Consumers: []ledger.ConsumerAllocations{claimIn("demo", rp, 1, 1), claimIn("demo", rp, 1, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		tx := holdCounter(t, bf.fixture, "demo", "VCPU", 4)
		queued := ledger.QueuedClaims(bf.store)
		var answers []chan error
		for range 3 {
			a := make(chan error, 1)
			answers = append(answers, a)
			w := claimIn("demo", rp, 2, 1)
			go func() { a <- write(bf.store, w) }()
		}
		waitFor(t, func() bool { return ledger.QueuedClaims(bf.store) == queued+3 })
		bf.release()
		if err := <-bf.first; err != nil {
			t.Fatal(err)
		}
		waitForLockWait(t, bf.fixture, tx)
		if err := tx.Commit(bf.ctx); err != nil {
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
		if b, c := ledger.ClaimBatches(bf.store); c-b < 2 {
			t.Fatalf("%d batches of %d claims: the claims did not go out together", b, c)
		}
		if _, err := bf.db.Exec(bf.ctx, `UPDATE project_usages SET used = used - 4 WHERE resource = 'VCPU'
			AND project_id = (SELECT id FROM projects WHERE external_id = 'demo')`); err != nil {
			t.Fatal(err)
		}
		bf.checkUsages()
	})
}

// TestQuotaAtTheLimitRace races claims of two limited projects right at
// their limits, and of an unlimited one, from three stores at once: two
// whose claims go out in batches (each store's writer held busy until
// its claims have queued) and one that writes each claim alone. Exactly
// as many claims of each limited project are written as its limit holds
// (one limited in VCPU, the other in consumers, each with a second limit
// that does not bind), every other claim of it is refused over quota, the
// unlimited project's claims are all written, the counters are exact, and
// no transaction deadlocked.
func TestQuotaAtTheLimitRace(t *testing.T) {
	dbURL := newTestDB(t)
	f := newFixtureOn(t, dbURL)
	// A provider per claim: the claims share no provider lock, so only
	// the counters' locks order them.
	const perStore = 36
	var rps []string
	for i := range 3 * perStore {
		rps = append(rps, f.provider(fmt.Sprintf("rp%d", i), inv("VCPU", 1024), inv("MEMORY_MB", 1<<20)))
	}
	const vcpuLimit, consumerLimit, size = 24, 10, 2
	if err := f.store.LimitsSet(f.ctx, "edge", ledger.Limits{"VCPU": vcpuLimit, "MEMORY_MB": 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.LimitsSet(f.ctx, "edge2", ledger.Limits{ledger.ResourceConsumers: consumerLimit, "VCPU": 1 << 30}); err != nil {
		t.Fatal(err)
	}
	q := &ledger.Quota{}
	projects := []string{"edge", "edge2", "free"}
	var batched []*ledger.Store
	for range 2 {
		s, err := ledger.Open(f.ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4, ClaimWriters: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		batched = append(batched, s)
	}
	lone := openStore(t, dbURL)

	var mu sync.Mutex
	written, refused := map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	claim := func(s *ledger.Store, i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := projects[i%3]
			err := s.ClaimWrite(f.ctx, ledger.ClaimWriteParams{
				Consumers: []ledger.ConsumerAllocations{claimIn(p, rps[i], size, 64)}, Quota: q})
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
	// claims queue behind it; then the holds go and the lone store's 36
	// claims start, all at once.
	var releases []func()
	firsts := make(chan error, len(batched))
	for i, s := range batched {
		held := f.provider(fmt.Sprintf("held%d", i), inv("VCPU", 8), inv("MEMORY_MB", 8))
		releases = append(releases, holdProvider(t, f, dbURL, held))
		go func() {
			firsts <- s.AllocationsReplace(f.ctx, []ledger.ConsumerAllocations{claimIn("free", held, 1, 1)})
		}()
		waitFor(t, func() bool { b, _ := ledger.ClaimBatches(s); return b == 1 })
		for j := range perStore {
			claim(s, i*perStore+j)
		}
		waitFor(t, func() bool { return ledger.QueuedClaims(s) == perStore })
	}
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
	if written["edge"] != vcpuLimit/size || written["edge2"] != consumerLimit || refused["free"] != 0 ||
		written["edge"]+refused["edge"] != 36 || written["edge2"]+refused["edge2"] != 36 || written["free"] != 36 {
		t.Fatalf("written %v, refused %v; want edge %d, edge2 %d and free 36 written of 36 claims each",
			written, refused, vcpuLimit/size, consumerLimit)
	}
	if got := f.projectUsage("edge")["VCPU"]; got != vcpuLimit {
		t.Fatalf("edge holds VCPU %d, want its limit %d", got, vcpuLimit)
	}
	if got := f.projectUsage("edge2")[ledger.ResourceConsumers]; got != consumerLimit {
		t.Fatalf("edge2 holds %d consumers, want its limit %d", got, consumerLimit)
	}
	for _, s := range batched {
		if b, c := ledger.ClaimBatches(s); c-b < 2 {
			t.Fatalf("%d batches of %d claims: the claims did not go out together", b, c)
		}
	}
	f.checkUsages()

	// No deadlock: the stores' backends report their statistics as they
	// exit.
	for _, s := range append(batched, lone, f.store) {
		s.Close()
	}
	waitFor(t, func() bool {
		var n int
		if err := f.db.QueryRow(f.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	var deadlocks int64
	if err := f.db.QueryRow(f.ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&deadlocks); err != nil {
		t.Fatal(err)
	}
	if deadlocks != 0 {
		t.Fatalf("%d transactions deadlocked", deadlocks)
	}
}
