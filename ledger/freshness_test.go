package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// Reads across processes (snapshot/changelog.go, docs/architecture.md "Reads
// across replicas"): a read through any Store reflects every write
// answered before it began, whichever Store wrote it.

// TestReadsAcrossStoresNeverStale is the measurement as a test:
// 600 times an inventory write through one Store, then at once, through
// another, the provider by uuid, the provider list filtered by the new
// capacity and the allocation candidates for it. The writer never
// notifies (as a writer killed after each commit), so only the change log
// can tell the reader. Not one read may be stale.
func TestReadsAcrossStoresNeverStale(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	ctx := context.Background()
	writer := openMuted(t, dbURL)
	reader := ledgertest.OpenStore(t, dbURL)
	p, err := writer.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: "node"})
	if err != nil {
		t.Fatal(err)
	}
	// The reader has a snapshot, and listens, before the writes start.
	if _, err := reader.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{}); err != nil {
		t.Fatal(err)
	}
	ledgertest.WaitFor(t, func() bool { return ledger.Listening(reader) })
	gen := p.Generation
	stale := map[string]int{}
	const writes = 600
	for i := range writes {
		total := int64(10 + i)
		out, err := writer.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: p.UUID, Generation: &gen},
			[]engine.Inventory{ledgertest.Inv("VCPU", total)})
		if err != nil {
			t.Fatal(err)
		}
		gen = out.Generation
		fits := engine.RequestGroup{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: total}}}
		list, err := reader.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{UUID: p.UUID, Group: fits})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Generation != gen {
			stale["provider list"]++
		}
		cands, err := reader.Snapshots.AllocationCandidates(ctx, engine.CandidatesParams{Groups: []engine.RequestGroup{fits}, NestedAware: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(cands.Requests) != 1 {
			stale["allocation candidates"]++
		}
	}
	for what, n := range stale {
		t.Errorf("%s: %d stale reads of %d", what, n, writes)
	}
}

// TestClaimBatchesSeenAcrossStores: claims written in batches through a
// Store that never notifies are seen through another Store at once. A
// batch statement writes the change log's row of what it changed itself,
// and the change log's triggers do not run for it (migrations/0019), so
// that row alone can tell the reader: after every round of concurrent
// claims, the reader's providers carry the generations the database
// holds. Rounds go on until the writer has sent a batch of several claims
// (its claim writers batch the claims that queue while they are busy).
func TestClaimBatchesSeenAcrossStores(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	ctx := context.Background()
	writer := openMuted(t, dbURL)
	reader := ledgertest.OpenStore(t, dbURL)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	const providers, clients = 4, 32
	rps := make([]string, providers)
	for i := range rps {
		p, err := writer.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: fmt.Sprint("node", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writer.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: p.UUID, Generation: &p.Generation},
			[]engine.Inventory{ledgertest.Inv("VCPU", 100000)}); err != nil {
			t.Fatal(err)
		}
		rps[i] = p.UUID
	}
	claim := func(rp string) error {
		return writer.Allocations.ClaimWrite(ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{
			ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))}})
	}
	if err := claim(rps[0]); err != nil { // the project, user and type, by the general path
		t.Fatal(err)
	}
	if _, err := reader.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{}); err != nil {
		t.Fatal(err)
	}
	ledgertest.WaitFor(t, func() bool { return ledger.Listening(reader) })
	deadline := time.Now().Add(5 * time.Minute) // a hang guard, not a measure
	for round := 0; ; round++ {
		errs := make(chan error, clients)
		for i := range clients {
			go func() { errs <- claim(rps[i%providers]) }()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]int64{}
		rows, err := conn.Query(ctx, `SELECT uuid::text, generation FROM resource_providers`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var u string
			var g int64
			if err := rows.Scan(&u, &g); err != nil {
				t.Fatal(err)
			}
			want[u] = g
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		list, err := reader.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list {
			if p.Generation != want[p.UUID] {
				t.Fatalf("round %d: the reader has provider %s at generation %d, the database at %d", round, p.UUID, p.Generation, want[p.UUID])
			}
		}
		if batches, claims := ledger.ClaimBatches(writer); claims > batches && round > 0 {
			t.Logf("%d rounds, %d claims in %d transactions", round+1, claims, batches)
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no batch of several claims formed")
		}
	}
}

// TestOwnWritesNeedNoReload: a claim applied to the snapshot at commit is
// not reloaded by the next catch-up, which knows its transaction as the
// Store's own; a write behind the Store's back is.
func TestOwnWritesNeedNoReload(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("node", ledgertest.Inv("VCPU", 64))
	if _, err := f.Store.Snapshots.Snapshot(f.Ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))}); err != nil {
			t.Fatal(err)
		}
	}
	_, before, _ := ledger.SnapshotWork(f.Store)
	if _, err := f.Store.Snapshots.Snapshot(f.Ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, after, _ := ledger.SnapshotWork(f.Store); after != before {
		t.Errorf("%d partial reloads after the Store's own claims, want none", after-before)
	}
	if _, err := f.DB.Exec(f.Ctx, `UPDATE inventories SET reserved = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Store.Snapshots.Snapshot(f.Ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, after, _ := ledger.SnapshotWork(f.Store); after != before+1 {
		t.Errorf("%d partial reloads after a write behind the Store's back, want 1", after-before)
	}
}

// TestLeaseAndAuditWritesSeenAcrossStores: the writers that release
// allocations outside the Placement API, the lease reaper's release
// (ClaimWriteParams.IfLeaseExpired) and POST /audit/fix's confirm of a
// stale move, are seen through another Store at once. They write through
// a Store that never notifies, so only the change log can tell the
// reader: the candidates and the provider list filtered by the capacity
// they free find the provider right after the write.
func TestLeaseAndAuditWritesSeenAcrossStores(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	writer := openMuted(t, dbURL)
	reader := ledgertest.OpenStore(t, dbURL)
	rp := ledgertest.AuditCloud(f.Fixture)
	lease := f.Provider("lease", ledgertest.Inv("VCPU", 1))
	c := uuid.NewString()
	if err := writer.Allocations.ClaimWrite(f.Ctx, claimWith(c, lease, nil, 60, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	// fits reports whether the reader's candidates and provider list
	// both find rp with n VCPU free.
	fits := func(rp string, n int64) bool {
		t.Helper()
		g := engine.RequestGroup{Resources: []engine.ResourceAmount{ledgertest.Res("VCPU", n)}, InTree: rp}
		list, err := reader.Snapshots.ProvidersMatching(f.Ctx, engine.ProviderFilter{UUID: rp, Group: g})
		if err != nil {
			t.Fatal(err)
		}
		cands, err := reader.Snapshots.AllocationCandidates(f.Ctx, engine.CandidatesParams{Groups: []engine.RequestGroup{g}, NestedAware: true})
		if err != nil {
			t.Fatal(err)
		}
		if (len(list) == 1) != (len(cands.Requests) == 1) {
			t.Errorf("provider %s with %d VCPU: %d in the list, %d candidates", rp, n, len(list), len(cands.Requests))
		}
		return len(list) == 1
	}
	// cn1 holds 5 of its 8 VCPU, 2 of them the stale move's source.
	if fits(lease, 1) || fits(rp["cn1"], 5) {
		t.Fatal("before the writes: capacity free that is held")
	}
	ledgertest.WaitFor(t, func() bool { return ledger.Listening(reader) })

	f.Expire(c)
	if err := writer.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{IfLeaseExpired: c,
		Consumers: []resources.ConsumerAllocations{{ConsumerUUID: c, CheckGeneration: true, Generation: ledgertest.Gen(1)}}}); err != nil {
		t.Fatal(err)
	}
	if !fits(lease, 1) {
		t.Error("the reaper's release: stale read of the provider it freed")
	}
	if _, err := writer.Auditor.AuditFix(f.Ctx, audit.AuditFixParams{Kind: audit.AuditStaleMigration, ConsumerUUID: ledgertest.AuditMigrate,
		ConsumerGeneration: 1, Thresholds: audit.AuditThresholds{}}); err != nil {
		t.Fatal(err)
	}
	if !fits(rp["cn1"], 5) {
		t.Error("the audit's fix: stale read of the provider it freed")
	}
}

// TestTrimmedChangeLogReloadsAll: a Store whose snapshot is older than
// the change log's trim horizon (it was idle while another Store wrote
// and trimmed) reloads everything on its next read, and sees the writes.
func TestTrimmedChangeLogReloadsAll(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	ctx := context.Background()
	trimmer, err := ledger.OpenMuted(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4, ChangeLogRetention: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(trimmer.Close)
	idle := ledgertest.OpenStore(t, dbURL)
	if _, err := idle.Snapshots.Snapshot(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The listener's first connection wakes a catch-up in the background:
	// let it run before the write, or it may catch up with the write
	// before the trim and need no full load.
	ledgertest.WaitFor(t, func() bool {
		catchUps, _, _ := ledger.SnapshotWork(idle)
		return idle.Snapshots.SnapshotListening() && catchUps > 0
	})
	p, err := trimmer.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: "node"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ledgertest.WaitFor(t, func() bool {
		var rows int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM ledger_changes`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return rows == 0
	})
	_, _, fullBefore := ledger.SnapshotWork(idle)
	list, err := idle.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{UUID: p.UUID})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("the provider created while the Store was idle: %d found", len(list))
	}
	if _, _, full := ledger.SnapshotWork(idle); full != fullBefore+1 {
		t.Errorf("%d full loads past the horizon, want 1", full-fullBefore)
	}
}

// BenchmarkSnapshotRead is what a read of the snapshot costs before it
// computes: fresh is a Placement route's (a catch-up with the change log,
// one round trip, nothing found), ranking a claim's (none). Run with
// -bench SnapshotRead ./ledger/; the difference is the promise's price
// for a read (docs/performance.md, "Reads across replicas").
func BenchmarkSnapshotRead(b *testing.B) {
	dbURL := ledgertest.NewDB(b)
	ctx := context.Background()
	s, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	for i := range 1000 {
		if _, err := s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: fmt.Sprintf("node%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		read func(context.Context, []string, []string) (*engine.Snapshot, error)
	}{{"fresh", s.Snapshots.Snapshot}, {"ranking", s.Snapshots.RankingSnapshot}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := bc.read(ctx, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// openMuted opens a Store on dbURL that never notifies (ledger.OpenMuted),
// closed when the test ends.
func openMuted(t *testing.T, dbURL string) *ledger.Store {
	t.Helper()
	s, err := ledger.OpenMuted(context.Background(), ledger.Config{DatabaseURL: dbURL, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
