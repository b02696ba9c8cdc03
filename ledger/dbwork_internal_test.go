package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/pgcluster"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/dbwork"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// The database work of a write, measured per statement at two cluster
// sizes (TestDatabaseWorkPerWrite).
//
// A throwaway cluster of its own loads pg_stat_statements, which counts
// every shared buffer a statement touches (hit or read), its triggers
// (foreign-key checks) and its data-modifying CTEs included, and
// auto_explain, whose plans (sent to the client as NOTICEs) show each
// executed node: which tables are scanned sequentially and how many rows
// every scan reads. The Store under test runs with one pooled connection,
// so every statement runs on a connection that has run it before and
// uses the plan PostgreSQL settled on (a generic one after five
// executions, or at once under fastPlanSQL), as a server in steady state
// does.

// dbWorkSizes are the cluster sizes compared: the work of each write at
// the larger must stay within a small constant of the smaller's. The
// smaller is not tinier because PostgreSQL reads tables of a few pages
// whole (a sequential scan is cheaper there than an index): at 200
// providers the plans differ, and the comparison would be of plans, not
// of sizes.
var dbWorkSizes = []int{2000, 20000}

// providerSized are the tables whose size grows with the number of
// providers (or of consumers on them): no write may scan them in full.
var providerSized = []string{
	"resource_providers", "inventories", "allocations", "consumers",
	"resource_provider_traits", "resource_provider_aggregates",
	"provider_placement_keys", "consumer_placement_keys", "provider_state",
	"claim_requests", "claim_failures", "claim_moves", "claim_state", "provider_evacuations",
}

// dbProbe collects what the Store's connections report: auto_explain's
// plans and the round trips they make.
type dbProbe struct {
	mu    sync.Mutex
	plans map[string]*planWork // by query text
	trips atomic.Int64
	bad   []string // notices that could not be read
}

// planWork sums what auto_explain showed of one statement.
type planWork struct {
	calls   int64
	scanned int64 // rows read by scans, filtered out ones included
	seq     map[string]bool
	byScan  map[string]int64 // rows read, by scan ("Index Scan on allocations using ...")
}

func newDBProbe() *dbProbe { return &dbProbe{plans: map[string]*planWork{}} }

func (p *dbProbe) reset() {
	p.mu.Lock()
	p.plans = map[string]*planWork{}
	p.mu.Unlock()
	p.trips.Store(0)
}

// ignored are statements the Store sends in the background (change
// notifications after commit), not as part of a write.
func ignored(sql string) bool { return strings.Contains(sql, "pg_notify") }

func (p *dbProbe) onNotice(_ *pgconn.PgConn, n *pgconn.Notice) {
	_, plan, ok := strings.Cut(n.Message, "plan:\n")
	if n.Severity != "NOTICE" || !ok {
		return
	}
	var doc struct {
		Query string         `json:"Query Text"`
		Plan  map[string]any `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		p.mu.Lock()
		p.bad = append(p.bad, err.Error())
		p.mu.Unlock()
		return
	}
	if ignored(doc.Query) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.plans[doc.Query]
	if w == nil {
		w = &planWork{seq: map[string]bool{}, byScan: map[string]int64{}}
		p.plans[doc.Query] = w
	}
	w.calls++
	walkPlan(doc.Plan, w)
}

// walkPlan adds node's scans, and its children's, to w.
func walkPlan(node map[string]any, w *planWork) {
	num := func(k string) int64 { f, _ := node[k].(float64); return int64(f) }
	loops := num("Actual Loops")
	switch node["Node Type"] {
	case "Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan", "Tid Scan":
		rows := loops * (num("Actual Rows") + num("Rows Removed by Filter") + num("Rows Removed by Index Recheck"))
		w.scanned += rows
		if w.byScan != nil {
			scan := fmt.Sprint(node["Node Type"], " on ", node["Relation Name"])
			if ix, ok := node["Index Name"].(string); ok {
				scan += " using " + ix
			}
			w.byScan[scan] += rows
		}
		if node["Node Type"] == "Seq Scan" && loops > 0 {
			w.seq[fmt.Sprint(node["Relation Name"])] = true
		}
	}
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		if m, ok := c.(map[string]any); ok {
			walkPlan(m, w)
		}
	}
}

// The tracer counts round trips: one per statement sent alone (BEGIN and
// COMMIT included), one per pipeline.
func (p *dbProbe) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !ignored(d.SQL) {
		p.trips.Add(1)
	}
	return ctx
}
func (p *dbProbe) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (p *dbProbe) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	p.trips.Add(1)
	return ctx
}
func (p *dbProbe) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (p *dbProbe) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (p *dbProbe) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}
func (p *dbProbe) TracePrepareEnd(_ context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if !d.AlreadyPrepared {
		p.trips.Add(1) // a statement's first use on a connection
	}
}

// stmtWork is what pg_stat_statements counted of one statement.
type stmtWork struct {
	calls, buffers, rows int64
}

// opWork is the database work of n runs of one kind of write.
type opWork struct {
	n     int
	stmts map[string]stmtWork // by (normalised) query text
	plans map[string]*planWork
	trips int64
}

func (w *opWork) totals() (stmts, buffers int64) {
	for _, s := range w.stmts {
		stmts += s.calls
		buffers += s.buffers
	}
	return stmts, buffers
}

// dbWorkEnv is one seeded database and a Store over it.
type dbWorkEnv struct {
	t     testing.TB
	ctx   context.Context
	n     int
	store *Store
	admin *pgx.Conn // as the probe role: not counted
	url   string    // as the probe role
	probe *dbProbe
}

// seededProvider is the uuid of the i-th seeded provider to write to:
// a stride through the ids, so that writes land all over the tables.
func (e *dbWorkEnv) seededProvider(i int) (id int, uuid string) {
	return dbwork.SeededProvider(e.n, i)
}

// newDBWorkEnv creates a database on c, seeds n providers and opens a
// Store over it with the probe attached.
func newDBWorkEnv(t testing.TB, ctx context.Context, c *pgcluster.Cluster, n int) *dbWorkEnv {
	return newDBWorkEnvProbed(t, ctx, c, n, true)
}

// newDBWorkEnvProbed is newDBWorkEnv, with the probe left out of the
// Store's connections unless probed (a benchmark of PostgreSQL's CPU
// must not pay for auto_explain).
func newDBWorkEnvProbed(t testing.TB, ctx context.Context, c *pgcluster.Cluster, n int, probed bool) *dbWorkEnv {
	t.Helper()
	name := fmt.Sprintf("dbwork_%d", n)
	if err := c.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	url := c.URL(name)
	if err := Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	probe := newDBProbe()
	s, err := Open(ctx, Config{DatabaseURL: url, MaxConns: 1, ClaimWriters: 1,
		SnapshotRefresh: -1, ClaimFailureTTL: -1, ClaimRequestTTL: -1,
		poolHook: func(pc *pgxpool.Config) {
			if !probed {
				return
			}
			onNotice := pc.ConnConfig.OnNotice
			pc.ConnConfig.OnNotice = func(c *pgconn.PgConn, n *pgconn.Notice) {
				onNotice(c, n)
				probe.onNotice(c, n)
			}
			pc.ConnConfig.Tracer = probe
			for k, v := range map[string]string{
				"auto_explain.log_min_duration": "0", "auto_explain.log_analyze": "on",
				"auto_explain.log_buffers": "on", "auto_explain.log_timing": "off",
				"auto_explain.log_format": "json", "auto_explain.log_level": "notice",
			} {
				pc.ConnConfig.RuntimeParams[k] = v
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	if _, err := admin.Exec(ctx, fmt.Sprintf(dbwork.SeedSQL, n)); err != nil {
		t.Fatalf("seed %d providers: %v", n, err)
	}
	if probed {
		if _, err := admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SET ROLE dbwork_probe`); err != nil {
			t.Fatal(err)
		}
	}
	return &dbWorkEnv{t: t, ctx: ctx, n: n, store: s, admin: admin, url: url, probe: probe}
}

// measure runs run(i) for i in [0, warm) unmeasured, to settle the
// plans, then for i in [warm, warm+n) and returns the work counted.
func (e *dbWorkEnv) measure(warm, n int, run func(i int)) *opWork {
	e.t.Helper()
	for i := range warm {
		run(i)
	}
	if _, err := e.admin.Exec(e.ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		e.t.Fatal(err)
	}
	e.probe.reset()
	for i := warm; i < warm+n; i++ {
		run(i)
	}
	w := &opWork{n: n, stmts: map[string]stmtWork{}, trips: e.probe.trips.Load()}
	e.probe.mu.Lock()
	w.plans, e.probe.plans = e.probe.plans, map[string]*planWork{}
	e.probe.mu.Unlock()
	rows, err := e.admin.Query(e.ctx, `
		SELECT query, calls, shared_blks_hit + shared_blks_read, rows FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND userid <> 'dbwork_probe'::regrole AND query NOT LIKE '%pg_notify%'`)
	if err != nil {
		e.t.Fatal(err)
	}
	var q string
	var s stmtWork
	if _, err := pgx.ForEachRow(rows, []any{&q, &s.calls, &s.buffers, &s.rows}, func() error {
		w.stmts[q] = s
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// holdProvider locks provider uuid's row from a connection of its own
// (as the probe role: not counted) and returns the function that ends
// that transaction.
func (e *dbWorkEnv) holdProvider(uuid string) (release func()) {
	conn, err := pgx.Connect(e.ctx, e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := conn.Exec(e.ctx, `SET ROLE dbwork_probe; BEGIN`); err != nil {
		e.t.Fatal(err)
	}
	if _, err := conn.Exec(e.ctx, `SELECT 1 FROM resource_providers WHERE uuid = $1 FOR UPDATE`, uuid); err != nil {
		e.t.Fatal(err)
	}
	return func() {
		_, _ = conn.Exec(e.ctx, `ROLLBACK`)
		_ = conn.Close(e.ctx)
	}
}

// dbWorkOp is one kind of write measured: run(e, i) makes it once, on
// different rows for every i.
type dbWorkOp struct {
	name       string
	warm, runs int
	// perRun is how many claims or writes one run makes (a batch: many);
	// the figures are per claim or write.
	perRun int
	run    func(e *dbWorkEnv, i int)
}

// claimBatchOp is the op of a claim batch: batch claims queued behind one
// whose provider is held, so that they go out in one transaction, with
// the limits q (nil: none checked); kind names its consumers, and its
// providers are the seeded ones from offset on.
func claimBatchOp(name, kind string, batch, offset int, q *quotas.Quota) dbWorkOp {
	newUUID := func(kind string, i int) string { return dbwork.MD5UUID(fmt.Sprint(kind, i)) }
	claimAt := func(consumer, provider string) resources.ClaimWriteParams {
		cw := dbwork.ClaimAt(consumer, provider, 2)
		cw.Quota = q
		return cw
	}
	return dbWorkOp{name: name, warm: 1, runs: 2, perRun: batch + 1, run: func(e *dbWorkEnv, i int) {
		_, held := e.seededProvider(offset + i)
		release := e.holdProvider(held)
		defer release()
		errs := make(chan error, batch+1)
		first := claimGroups(e.store)
		go func() { errs <- e.store.Allocations.ClaimWrite(e.ctx, claimAt(newUUID("held"+kind, i), held)) }()
		// The writer took the held claim and waits for its lock.
		waitUntil(e.t, func() bool { return claimGroups(e.store) == first+1 && QueuedClaims(e.store) == 0 })
		before := first + 1
		for j := range batch {
			_, rp := e.seededProvider(offset + 20 + i*batch + j)
			go func() {
				errs <- e.store.Allocations.ClaimWrite(e.ctx, claimAt(newUUID(fmt.Sprint("batch", kind, i, "-"), j), rp))
			}()
		}
		waitUntil(e.t, func() bool { return QueuedClaims(e.store) == batch })
		release()
		for range batch + 1 {
			if err := <-errs; err != nil {
				e.t.Fatal(err)
			}
		}
		if got := claimGroups(e.store) - before; got != 1 {
			e.t.Fatalf("the %d queued claims went out in %d transactions, want 1", batch, got)
		}
	}}
}

func dbWorkOps() []dbWorkOp {
	newUUID := func(kind string, i int) string { return dbwork.MD5UUID(fmt.Sprint(kind, i)) }
	const batch = 16
	return []dbWorkOp{
		{name: "claim (POST /claims, fast path, alone)", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			_, rp := e.seededProvider(i)
			if err := e.store.Allocations.ClaimWrite(e.ctx, dbwork.ClaimAt(newUUID("claim", i), rp, 2)); err != nil {
				e.t.Fatal(err)
			}
		}},
		claimBatchOp(fmt.Sprintf("claim batch (%d claims queued behind one)", batch), "", batch, 100, nil),
		// berthd's default: the stored limits (--limits-source berth), none set.
		claimBatchOp(fmt.Sprintf("claim batch, limits stored, none set (%d queued behind one)", batch), "q", batch, 500,
			&quotas.Quota{}),
		{name: "claim refused (no room; fast path, then the general path's error)", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			_, rp := e.seededProvider(200 + i)
			err := e.store.Allocations.ClaimWrite(e.ctx, dbwork.ClaimAt(newUUID("refused", i), rp, 1000))
			if !errors.Is(err, fault.ErrConflict) {
				e.t.Fatalf("claim for 1000 VCPU: %v, want a conflict", err)
			}
		}},
		{name: "consumer update (PUT /allocations with a generation: general path)", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			id, rp := e.seededProvider(300 + i)
			gen := int64(1)
			if err := e.store.Allocations.AllocationsReplace(e.ctx, []resources.ConsumerAllocations{{
				ConsumerUUID: dbwork.MD5UUID(fmt.Sprint("vm", id)), ProjectID: "seed-project", UserID: "seed-user",
				CheckGeneration: true, Generation: &gen,
				Allocations: []engine.Allocation{{ProviderUUID: rp, Resources: []engine.ResourceAmount{
					{Class: "VCPU", Amount: 8}, {Class: "MEMORY_MB", Amount: 16384}, {Class: "DISK_GB", Amount: 100}}}},
			}}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "consumer delete (DELETE /allocations)", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			id, _ := e.seededProvider(400 + i)
			if err := e.store.Allocations.AllocationsDelete(e.ctx, dbwork.MD5UUID(fmt.Sprint("vm", id))); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "POST /resource_providers", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			if _, err := e.store.Providers.ProviderCreate(e.ctx, resources.ProviderCreateParams{UUID: newUUID("new", i), Name: fmt.Sprint("new-", i)}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "PUT inventories", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			if _, err := e.store.Providers.InventoriesReplace(e.ctx, resources.InventoryParams{ProviderUUID: newUUID("new", i), Generation: new(int64)}, []engine.Inventory{
				{ResourceClass: "VCPU", Total: 64, MinUnit: 1, MaxUnit: 64, StepSize: 1, AllocationRatio: 4},
				{ResourceClass: "MEMORY_MB", Total: 262144, Reserved: 4096, MinUnit: 1, MaxUnit: 262144, StepSize: 1, AllocationRatio: 1},
				{ResourceClass: "DISK_GB", Total: 4000, Reserved: 100, MinUnit: 1, MaxUnit: 4000, StepSize: 1, AllocationRatio: 1},
			}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "PUT aggregates", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			gen := int64(1)
			if _, err := e.store.Providers.ProviderAggregatesReplace(e.ctx, newUUID("new", i), []string{dbwork.MD5UUID(fmt.Sprint("agg", i%10))},
				resources.AggregatesReplaceParams{Generation: &gen}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "PUT traits", warm: 8, runs: 8, perRun: 1, run: func(e *dbWorkEnv, i int) {
			if _, _, err := e.store.Providers.ProviderTraitsReplace(e.ctx, newUUID("new", i), 2, []string{"CUSTOM_BENCH_TRAIT"}); err != nil {
				e.t.Fatal(err)
			}
		}},
	}
}

// waitUntil polls cond, failing the test after a bound only a broken
// implementation reaches.
func waitUntil(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startDBWorkCluster starts the throwaway cluster with the two
// extensions loaded and the probe role created.
func startDBWorkCluster(t testing.TB, ctx context.Context) *pgcluster.Cluster {
	return dbwork.StartCluster(t, ctx, true)
}

// TestDatabaseWorkPerWrite measures, per statement, the shared buffers
// and the rows scanned by each write a claim or the seeding of a cluster
// makes (a claim alone, a claim batch, a refused claim, the general
// path's update and delete, POST /resource_providers, PUT inventories,
// aggregates and traits) in clusters of 2,000 and 20,000 providers, and
// fails if any grows with the cluster: more than a small constant of
// buffers (index descents get a level deeper), more rows scanned, a
// different count of statements, or a sequential scan of a table that
// grows with providers. Buffer counts are deterministic; no time is
// measured. go test -v prints the table docs/performance.md quotes.
func TestDatabaseWorkPerWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := startDBWorkCluster(t, ctx)
	ops := dbWorkOps()
	work := make([][]*opWork, len(dbWorkSizes)) // [size][op]
	for si, n := range dbWorkSizes {
		e := newDBWorkEnv(t, ctx, c, n)
		for _, op := range ops {
			w := e.measure(op.warm, op.runs, func(i int) { op.run(e, i) })
			work[si] = append(work[si], w)
		}
		if len(e.probe.bad) > 0 {
			t.Errorf("unreadable auto_explain notices: %v", e.probe.bad)
		}
	}
	small, large := 0, len(dbWorkSizes)-1
	for oi, op := range ops {
		ws, wl := work[small][oi], work[large][oi]
		claims := int64(op.runs * op.perRun)
		stmtsS, bufS := ws.totals()
		stmtsL, bufL := wl.totals()
		t.Logf("%s: per %s: %.2f statements, %.2f round trips, %.0f buffers at %d providers; %.2f, %.2f, %.0f at %d",
			op.name, map[bool]string{true: "claim", false: "write"}[op.perRun > 1],
			float64(stmtsS)/float64(claims), float64(ws.trips)/float64(claims), float64(bufS)/float64(claims), dbWorkSizes[small],
			float64(stmtsL)/float64(claims), float64(wl.trips)/float64(claims), float64(bufL)/float64(claims), dbWorkSizes[large])
		if stmtsS != stmtsL || ws.trips != wl.trips {
			t.Errorf("%s: %d statements in %d round trips at %d providers, %d in %d at %d: the same writes should send the same statements",
				op.name, stmtsS, ws.trips, dbWorkSizes[small], stmtsL, wl.trips, dbWorkSizes[large])
		}
		queries := slices.Sorted(func(yield func(string) bool) {
			for q := range ws.stmts {
				if !yield(q) {
					return
				}
			}
		})
		for q := range wl.stmts {
			if _, ok := ws.stmts[q]; !ok {
				queries = append(queries, q)
			}
		}
		for _, q := range queries {
			s, l := ws.stmts[q], wl.stmts[q]
			perS, perL := perCall(s.buffers, s.calls), perCall(l.buffers, l.calls)
			t.Logf("    %5.1f calls  %6.1f -> %6.1f buffers/call  %s", float64(l.calls)/float64(op.runs), perS, perL, label(q))
			// A descent into an index one level deeper costs one buffer
			// more; a statement makes a handful. A scan of anything that
			// grows with the cluster costs hundreds at 20,000.
			if s.calls != l.calls || perL > perS*1.25+8 {
				t.Errorf("%s: %s: %d calls, %.1f buffers per call at %d providers; %d calls, %.1f at %d",
					op.name, label(q), s.calls, perS, dbWorkSizes[small], l.calls, perL, dbWorkSizes[large])
			}
		}
		if strings.HasPrefix(op.name, "claim (") || strings.HasPrefix(op.name, "claim batch") {
			checkCapacitySumIndexOnly(t, op.name, ws, wl)
		}
		var scannedS, scannedL int64
		for q, p := range ws.plans {
			scannedS += p.scanned
			for table := range p.seq {
				t.Logf("    at %d providers, a sequential scan of %s (%d rows in %d calls): %s",
					dbWorkSizes[small], table, p.scanned, p.calls, label(q))
			}
			if lp := wl.plans[q]; lp != nil && lp.scanned > p.scanned+int64(p.calls) {
				t.Errorf("%s: %s: scans read %d rows at %d providers, %d at %d",
					op.name, label(q), p.scanned, dbWorkSizes[small], lp.scanned, dbWorkSizes[large])
			}
		}
		for q, p := range wl.plans {
			scannedL += p.scanned
			for _, table := range providerSized {
				if p.seq[table] {
					t.Errorf("%s: %s: a sequential scan of %s at %d providers", op.name, label(q), table, dbWorkSizes[large])
				}
			}
		}
		t.Logf("    rows scanned per %s: %.1f -> %.1f",
			map[bool]string{true: "claim", false: "write"}[op.perRun > 1],
			float64(scannedS)/float64(claims), float64(scannedL)/float64(claims))
	}
}

// checkCapacitySumIndexOnly fails if a claim's statements read the heap
// of allocations: its capacity check sums the allocations of each
// provider and class it writes to, and does so from the index that holds
// their amounts (migration 0018), an index-only scan; an index or bitmap
// scan of allocations reads a heap page per allocation summed.
func checkCapacitySumIndexOnly(t *testing.T, name string, works ...*opWork) {
	t.Helper()
	for _, w := range works {
		for q, p := range w.plans {
			for scan := range p.byScan {
				if strings.HasPrefix(scan, "Index Scan on allocations") || strings.HasPrefix(scan, "Bitmap Heap Scan on allocations") {
					t.Errorf("%s: %s: %s, not an index-only scan", name, label(q), scan)
				}
			}
		}
	}
}

func perCall(total, calls int64) float64 {
	if calls == 0 {
		return 0
	}
	return float64(total) / float64(calls)
}

// label is the first words of a statement, on one line.
func label(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 90 {
		q = q[:90] + "…"
	}
	return q
}

// TestClaimPlansAfterEmptyAnalyze gives the claim statements the worst
// statistics they can meet: allocations and consumers analysed while
// empty (as a fresh cloud's are, and as scale.sh's VACUUM (ANALYZE) after
// seeding left them), then filled with a consumer per provider before
// autovacuum analyses them again. No claim statement may then read those
// tables in full: not sequentially, and not through a whole index. The
// fast paths plan each statement once per connection
// (force_generic_plan), so the statistics of that moment decide the plan
// for as long as the connection lives; PostgreSQL used to choose
// sequential scans of allocations and consumers, whose cost then grew
// with every claim.
func TestClaimPlansAfterEmptyAnalyze(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := startDBWorkCluster(t, ctx)
	const n = 2000
	e := newDBWorkEnv(t, ctx, c, n)
	if _, err := e.admin.Exec(ctx, `
		RESET ROLE;
		ALTER TABLE allocations SET (autovacuum_enabled = false);
		ALTER TABLE consumers SET (autovacuum_enabled = false);
		CREATE TEMP TABLE saved_consumers AS SELECT * FROM consumers;
		CREATE TEMP TABLE saved_allocations AS SELECT * FROM allocations;
		TRUNCATE allocations, consumers CASCADE;
		ANALYZE;
		INSERT INTO consumers SELECT * FROM saved_consumers;
		INSERT INTO allocations SELECT * FROM saved_allocations;
		SET ROLE dbwork_probe`); err != nil {
		t.Fatal(err)
	}
	for _, op := range dbWorkOps()[:2] { // a claim alone, then a batch of claims
		w := e.measure(0, op.warm+op.runs, func(i int) { op.run(e, i) })
		if len(w.plans) == 0 {
			t.Fatalf("%s: no plans recorded", op.name)
		}
		for q, p := range w.plans {
			t.Logf("%s: %d rows scanned in %d calls: %s", op.name, p.scanned, p.calls, label(q))
			for _, table := range providerSized {
				if p.seq[table] {
					t.Errorf("%s: a sequential scan of %s after an ANALYZE of empty tables: %s", op.name, table, label(q))
				}
			}
			// A claim reads a handful of rows per provider it writes (a
			// batch of 17 claims, some 260); a scan of the n consumers,
			// or of their allocations, reads n or more.
			if per := p.scanned / int64(p.calls); per > n/2 {
				t.Errorf("%s: %d rows scanned per call after an ANALYZE of empty tables: %s; by scan: %v", op.name, per, label(q), p.byScan)
			}
		}
	}
}

// claimGroups is how many transactions s's claim writers sent.
func claimGroups(s *Store) int64 {
	groups, _ := ClaimBatches(s)
	return groups
}
