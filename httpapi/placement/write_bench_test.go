package placement_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/internal/telemetry"
	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger/ledgertest"
)

// benchWriter is a minimal http.ResponseWriter that keeps the status and
// the body of the last answer.
type benchWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.h }

func (w *benchWriter) WriteHeader(s int) { w.status = s }

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

// seedRequest is one request of the seeding, built before it is timed.
func seedRequest(tb testing.TB, method, path, body string) *http.Request {
	req, err := http.NewRequest(method, "http://berth.test"+path, bytes.NewReader([]byte(body)))
	if err != nil {
		tb.Fatal(err)
	}
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	return req
}

// BenchmarkSeedWrites measures berthd's own cost of the writes that seed
// a cloud, as berth-load's seeding makes them (docs/performance.md):
// per compute node POST /resource_providers, PUT .../inventories, PUT
// .../aggregates and, on one node in ten, PUT .../traits, at microversion
// 1.39, through the whole handler stack (Server.ServeHTTP: request id,
// span, metrics, the "request" log line at info level into a text
// handler, microversion, authentication, policy, schema, ledger) against
// a real PostgreSQL, with the telemetry berthd installs by default
// (Prometheus metrics, no trace exporter). Each round seeds 200 new
// nodes, each kind of write in a phase of its own. It reports, per write
// of each kind and over all writes, the test process's CPU (cpu-us: the
// handler stack, the ledger and pgx; PostgreSQL's own CPU is not in it)
// and its heap allocations (allocs, B), from getrusage and
// runtime.MemStats around each phase:
//
//	go test -run '^$' -bench SeedWrites -benchtime 10x ./httpapi/placement/
//
// The ledger's share is the same from one build of httpapi to the next,
// so a change of cpu-us/write between two builds is the change of the
// HTTP layer's cost. On a shared machine the CPU figures are noisy; the
// allocation counts are not.
func BenchmarkSeedWrites(b *testing.B) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{Prometheus: true, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(ctx) })
	store := ledgertest.NewStore(b)
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := build(httpapi.Config{}, store, nil, log)
	if err != nil {
		b.Fatal(err)
	}
	w := &benchWriter{h: http.Header{}}
	send := func(req *http.Request, want int) {
		clear(w.h)
		w.status = 0
		w.body.Reset()
		s.ServeHTTP(w, req)
		if w.status != want {
			b.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, w.status, w.body.Bytes())
		}
	}
	send(seedRequest(b, http.MethodPut, "/traits/"+placement.SeedTrait, ""), http.StatusCreated)

	const nodes = 200
	kinds := []string{"create", "inventories", "aggregates", "traits"}
	cpu := make([]time.Duration, len(kinds))
	allocs, bytes := make([]uint64, len(kinds)), make([]uint64, len(kinds))
	writes := make([]int, len(kinds))
	seq := 0
	// round seeds nodes new nodes, phase by phase; measured, it adds each
	// phase's costs to the totals.
	round := func(measured bool) {
		base := seq
		seq += nodes
		node := func(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", base+i, base+i) }
		phases := []func(i int) *http.Request{
			func(i int) *http.Request {
				return seedRequest(b, http.MethodPost, "/resource_providers",
					fmt.Sprintf(`{"uuid":%q,"name":"compute-%d"}`, node(i), base+i))
			},
			func(i int) *http.Request {
				return seedRequest(b, http.MethodPut, "/resource_providers/"+node(i)+"/inventories", placement.SeedInventories)
			},
			func(i int) *http.Request {
				return seedRequest(b, http.MethodPut, "/resource_providers/"+node(i)+"/aggregates",
					fmt.Sprintf(`{"aggregates":["%08x-aaaa-4000-8000-000000000000"],"resource_provider_generation":1}`, i%10))
			},
			func(i int) *http.Request {
				if i%10 != 0 {
					return nil
				}
				return seedRequest(b, http.MethodPut, "/resource_providers/"+node(i)+"/traits",
					`{"traits":["`+placement.SeedTrait+`"],"resource_provider_generation":2}`)
			},
		}
		for k, phase := range phases {
			var reqs []*http.Request
			for i := range nodes {
				if req := phase(i); req != nil {
					reqs = append(reqs, req)
				}
			}
			want := http.StatusOK
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpuBefore := proctest.ProcessCPU(b)
			for _, req := range reqs {
				send(req, want)
			}
			cpuAfter := proctest.ProcessCPU(b)
			runtime.ReadMemStats(&after)
			if measured {
				cpu[k] += cpuAfter - cpuBefore
				allocs[k] += after.Mallocs - before.Mallocs
				bytes[k] += after.TotalAlloc - before.TotalAlloc
				writes[k] += len(reqs)
			}
		}
	}
	round(false) // warm up: prepared statements, plans, pools
	b.ResetTimer()
	for range b.N {
		round(true)
	}
	b.StopTimer()
	var all struct {
		cpu           time.Duration
		allocs, bytes uint64
		writes        int
	}
	for k, kind := range kinds {
		n := float64(writes[k])
		b.ReportMetric(float64(cpu[k].Microseconds())/n, "cpu-us/"+kind)
		b.ReportMetric(float64(allocs[k])/n, "allocs/"+kind)
		b.ReportMetric(float64(bytes[k])/n, "B/"+kind)
		all.cpu += cpu[k]
		all.allocs += allocs[k]
		all.bytes += bytes[k]
		all.writes += writes[k]
	}
	n := float64(all.writes)
	b.ReportMetric(float64(all.cpu.Microseconds())/n, "cpu-us/write")
	b.ReportMetric(float64(all.allocs)/n, "allocs/write")
	b.ReportMetric(float64(all.bytes)/n, "B/write")
}
