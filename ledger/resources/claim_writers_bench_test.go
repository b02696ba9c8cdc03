package resources_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berthd/berth/internal/pgcluster"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/internal/dbwork"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// backendCPU is the CPU time, in clock ticks, the backend pid has used.
func backendCPU(t testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// newBackendBench is a benchmark's unprobed dbWorkEnv on 2,000 seeded
// providers, and the pid of the one backend its Store (MaxConns 1) uses,
// for backendCPU.
func newBackendBench(b *testing.B, ctx context.Context) (*benchEnv, int) {
	b.Helper()
	e := newBenchEnv(b, ctx, dbwork.StartCluster(b, ctx, false), 2000)
	// The claims' project, user and consumer type, which the fast path's
	// statements refuse while they do not exist: created by one claim
	// through the store, whose general path creates names.
	_, rp := e.seededProvider(0)
	if err := e.store.Allocations.ClaimWrite(ctx, dbwork.ClaimAt(dbwork.MD5UUID("names"), rp, 1)); err != nil {
		b.Fatal(err)
	}
	return e, e.pid
}

// newBenchEnv creates a database on c, seeds n providers and opens a
// Store of one connection over it.
func newBenchEnv(b *testing.B, ctx context.Context, c *pgcluster.Cluster, n int) *benchEnv {
	b.Helper()
	name := fmt.Sprintf("dbwork_%d", n)
	if err := c.CreateDatabase(ctx, name); err != nil {
		b.Fatal(err)
	}
	url := c.URL(name)
	if err := ledger.Migrate(ctx, url); err != nil {
		b.Fatal(err)
	}
	s, err := ledger.Open(ctx, ledger.Config{DatabaseURL: url, MaxConns: 1, ClaimWriters: 1,
		SnapshotRefresh: -1, ClaimFailureTTL: -1, ClaimRequestTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = admin.Close(context.Background()) })
	if _, err := admin.Exec(ctx, fmt.Sprintf(dbwork.SeedSQL, n)); err != nil {
		b.Fatalf("seed %d providers: %v", n, err)
	}
	pid, err := resources.BackendPID(ctx, s.Allocations)
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{n: n, store: s, admin: admin, pid: pid}
}

// benchEnv is one seeded database (dbwork.SeedSQL) and a Store over it
// with one connection, whose backend the benchmarks measure.
type benchEnv struct {
	n     int
	store *ledger.Store
	admin *pgx.Conn
	pid   int
}

func (e *benchEnv) seededProvider(i int) (id int, uuid string) { return dbwork.SeededProvider(e.n, i) }

// BenchmarkClaimBatchStatement compares, in PostgreSQL's CPU per claim
// (the backend's, from /proc/<pid>/stat, in clock ticks of 10 ms),
// batches of 16 claims written with one statement per claim (sendWrites)
// and with batchWriteSQL (sendBatchWrite), in alternating rounds of 10
// batches each, on 2,000 seeded providers:
//
//	go test -run '^$' -bench ClaimBatchStatement -benchtime 20x -count 3 ./ledger/
func BenchmarkClaimBatchStatement(b *testing.B) {
	ctx := context.Background()
	e, pid := newBackendBench(b, ctx)
	const batch, rounds = 16, 10
	seq := 0
	claims := func() []resources.FastClaim {
		fcs := make([]resources.FastClaim, batch)
		for j := range fcs {
			seq++
			_, rp := e.seededProvider(seq)
			w := dbwork.ClaimAt(dbwork.MD5UUID(fmt.Sprint("bench", seq)), rp, 1).Consumers
			fc, ok := resources.FastClaimOf(w)
			if !ok {
				b.Fatal("not a fast claim")
			}
			fc = resources.Recorded(fc)
			fcs[j] = fc
		}
		return fcs
	}
	perClaim := func() {
		for range rounds {
			ws, err := resources.SendWrites(ctx, e.store.Allocations, claims())
			if err != nil {
				b.Fatal(err)
			}
			for _, w := range ws {
				if w == nil {
					b.Fatal("a claim refused")
				}
			}
		}
	}
	set := func() {
		for range rounds {
			ws, first, err := resources.SendBatchWrite(ctx, e.store.Allocations, claims())
			if err != nil {
				b.Fatal(err)
			}
			if first != batch || slices.Contains(ws, nil) {
				b.Fatalf("the batch statement refused claim %d of %d", first, batch)
			}
		}
	}
	perClaim() // warm both up
	set()
	var cpuA, cpuB int64
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			before := backendCPU(b, pid)
			if (i+k)%2 == 0 {
				perClaim()
				cpuA += backendCPU(b, pid) - before
			} else {
				set()
				cpuB += backendCPU(b, pid) - before
			}
		}
	}
	n := float64(b.N * rounds * batch)
	b.ReportMetric(float64(cpuA)*10/n, "pg-ms/claim-per-statement")
	b.ReportMetric(float64(cpuB)*10/n, "pg-ms/claim-set")
}

// BenchmarkChangeLogTriggers is what the change log's triggers
// (migrations/0008) cost PostgreSQL per claim: alternating rounds, with
// the triggers on and off (ALTER TABLE ... DISABLE TRIGGER USER, from
// another connection, before each round), of 10 lone claims (one
// pipeline each, as an idle writer sends them) and of 10 batches of 16
// (batchWriteSQL), on 2,000 seeded providers, in the backend's CPU:
//
//	go test -run '^$' -bench ChangeLogTriggers -benchtime 20x -count 3 ./ledger/
func BenchmarkChangeLogTriggers(b *testing.B) {
	ctx := context.Background()
	e, pid := newBackendBench(b, ctx)
	const batch, rounds = 16, 10
	seq := 0
	claims := func(n int) []resources.FastClaim {
		fcs := make([]resources.FastClaim, n)
		for j := range fcs {
			seq++
			_, rp := e.seededProvider(seq)
			fc, ok := resources.FastClaimOf(dbwork.ClaimAt(dbwork.MD5UUID(fmt.Sprint("trig", seq)), rp, 1).Consumers)
			if !ok {
				b.Fatal("not a fast claim")
			}
			fcs[j] = fc
		}
		return fcs
	}
	triggers := func(on bool) {
		verb := map[bool]string{true: "ENABLE", false: "DISABLE"}[on]
		for _, table := range []string{"allocations", "resource_providers", "inventories", "resource_provider_traits", "resource_provider_aggregates"} {
			if _, err := e.admin.Exec(ctx, "ALTER TABLE "+table+" "+verb+" TRIGGER USER"); err != nil {
				b.Fatal(err)
			}
		}
	}
	lone := func() {
		for range rounds {
			if ws, err := resources.SendWrites(ctx, e.store.Allocations, claims(1)); err != nil || ws[0] == nil {
				b.Fatal("lone claim:", err)
			}
		}
	}
	batched := func() {
		for range rounds {
			if _, first, err := resources.SendBatchWrite(ctx, e.store.Allocations, claims(batch)); err != nil || first != batch {
				b.Fatal("batch:", err, first)
			}
		}
	}
	lone()
	batched()
	var cpu [2][2]int64 // [triggers on][batched]
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			on := (i+k)%2 == 0
			triggers(on)
			lone() // replans after the ALTER, unmeasured
			before := backendCPU(b, pid)
			lone()
			mid := backendCPU(b, pid)
			batched()
			after := backendCPU(b, pid)
			o := map[bool]int{true: 1, false: 0}[on]
			cpu[o][0] += mid - before
			cpu[o][1] += after - mid
		}
	}
	triggers(true)
	nLone, nBatched := float64(b.N*rounds), float64(b.N*rounds*batch)
	b.ReportMetric(float64(cpu[0][0])*10/nLone, "pg-ms/lone-claim-off")
	b.ReportMetric(float64(cpu[1][0])*10/nLone, "pg-ms/lone-claim-on")
	b.ReportMetric(float64(cpu[0][1])*10/nBatched, "pg-ms/batched-claim-off")
	b.ReportMetric(float64(cpu[1][1])*10/nBatched, "pg-ms/batched-claim-on")
}

// batchArgOIDs are the types of the batch statement's arguments, in
// order (batchWriteSQL's $1 to $23).
var batchArgOIDs = []uint32{pgtype.Int4ArrayOID, pgtype.UUIDArrayOID, pgtype.TextArrayOID, pgtype.Int8ArrayOID,
	pgtype.UUIDArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID,
	pgtype.JSONBArrayOID, pgtype.BoolArrayOID, pgtype.TextArrayOID, pgtype.ByteaArrayOID, pgtype.JSONArrayOID,
	pgtype.JSONArrayOID, pgtype.TextArrayOID, pgtype.JSONBArrayOID, pgtype.UUIDArrayOID, pgtype.Int4ArrayOID,
	pgtype.BoolArrayOID, pgtype.Int4ArrayOID, pgtype.TextArrayOID, pgtype.Int8ArrayOID}

// BenchmarkClaimBatchArgs is berthd's side of a batch statement of 8
// claims (dbwork.ClaimAt's, with their records) before it is sent: its
// arguments built (their arrays from the pool, as batches take them) and
// encoded, per batch, by pgx's extended query builder (pgx) and as
// core.SendBatch encodes them (sent), into buffers kept from one batch
// to the next:
//
//	go test -run '^$' -bench ClaimBatchArgs -benchmem ./ledger/resources/
func BenchmarkClaimBatchArgs(b *testing.B) {
	fcs := make([]resources.FastClaim, 8)
	for i := range fcs {
		rp := dbwork.MD5UUID(fmt.Sprint("provider", i))
		p := dbwork.ClaimAt(dbwork.MD5UUID(fmt.Sprint("bench", i)), rp, 1)
		fc, ok := resources.FastClaimOf(p.Consumers)
		if !ok {
			b.Fatal("not a fast claim")
		}
		fcs[i] = resources.WithRecords(fc, p)
	}
	m := pgtype.NewMap()
	sd := &pgconn.StatementDescription{ParamOIDs: batchArgOIDs}
	b.Run("pgx", func(b *testing.B) {
		var eqb pgx.ExtendedQueryBuilder
		b.ReportAllocs()
		for b.Loop() {
			_, args, release := resources.BatchArgs(fcs)
			sd.ParamOIDs = batchArgOIDs[:len(args)]
			if err := eqb.Build(m, sd, args); err != nil {
				b.Fatal(err)
			}
			release()
		}
	})
	b.Run("sent", func(b *testing.B) {
		var e core.ArgEncoder
		sds := []*pgconn.StatementDescription{sd}
		b.ReportAllocs()
		for b.Loop() {
			sql, args, release := resources.BatchArgs(fcs)
			sd.ParamOIDs = batchArgOIDs[:len(args)]
			var batch pgx.Batch
			batch.Queue(sql, args...)
			if err := e.Encode(m, sds, &batch); err != nil {
				b.Fatal(err)
			}
			release()
		}
	})
}
