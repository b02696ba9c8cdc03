package ledger

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
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
func newBackendBench(b *testing.B, ctx context.Context) (*dbWorkEnv, int) {
	b.Helper()
	c := startDBWorkClusterWith(b, ctx, false)
	e := newDBWorkEnvProbed(b, ctx, c, 2000, false)
	var pid int
	if err := e.store.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	return e, pid
}

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
	claims := func() []fastClaim {
		fcs := make([]fastClaim, batch)
		for j := range fcs {
			seq++
			_, rp := e.seededProvider(seq)
			w := claimAt(md5UUID(fmt.Sprint("bench", seq)), rp, 1).Consumers
			fc, ok := fastClaimOf(w)
			if !ok {
				b.Fatal("not a fast claim")
			}
			fc.request = &ClaimRequest{ConsumerUUID: fc.consumer, Op: "claim", Fingerprint: []byte{1}, Request: []byte(`{}`), Result: []byte(`{}`)}
			fcs[j] = fc
		}
		return fcs
	}
	perClaim := func() {
		for range rounds {
			ws, err := e.store.sendWrites(ctx, claims())
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
			ws, first, err := e.store.sendBatchWrite(ctx, claims())
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
