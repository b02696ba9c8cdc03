package placement

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
	"github.com/labstack/echo/v4"
)

// listSample is a provider list with what could trip an encoder up: HTML
// characters, quotes, backslashes, non-ASCII, control characters, roots
// and children.
func listSample() []engine.Provider {
	names := []string{"cn1", `<b>&"quoted"</b>`, `back\slash`, "ünïcødé ☃", "tab\tand\nnewline", "\u2028sep", "\b\f\x01\x7f\xff\u2029 <>&", ""}
	var out []engine.Provider
	for i, n := range names {
		p := engine.Provider{
			UUID: fmt.Sprintf("%08d-0000-0000-0000-000000000000", i), Name: n, Generation: int64(i * 7),
		}
		p.RootUUID = p.UUID
		if i%2 == 1 {
			p.ParentUUID, p.RootUUID = out[0].UUID, out[0].UUID
		}
		out = append(out, p)
	}
	return out
}

// oldProviderList is how GET /resource_providers answered before it
// streamed: every provider as a generic map, encoded in one piece.
func oldProviderList(t testing.TB, v wire.Version, providers []engine.Provider) []byte {
	t.Helper()
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/resource_providers", nil), rec)
	wire.SetVersion(c, v)
	list := make([]any, len(providers))
	for i, p := range providers {
		list[i] = providerJSON(c, p)
	}
	if err := wire.WriteJSON(c, http.StatusOK, map[string]any{"resource_providers": list}); err != nil {
		t.Fatal(err)
	}
	return rec.Body.Bytes()
}

func TestProviderListStreamSameBytes(t *testing.T) {
	for _, providers := range [][]engine.Provider{listSample(), {}, nil} {
		for minor := wire.MinVersion.Minor; minor <= wire.MaxVersion.Minor; minor++ {
			v := wire.Version{Major: 1, Minor: minor}
			var got bytes.Buffer
			if err := writeProviderList(&got, v, slices.Values(providers)); err != nil {
				t.Fatal(err)
			}
			if want := oldProviderList(t, v, providers); !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("1.%d, %d providers:\n got %s\nwant %s", minor, len(providers), got.Bytes(), want)
			}
		}
	}
	// A list longer than the flush threshold comes out whole too.
	var many []engine.Provider
	for i := 0; i < 2000; i++ {
		many = append(many, listSample()...)
	}
	var got bytes.Buffer
	if err := writeProviderList(&got, wire.MaxVersion, slices.Values(many)); err != nil {
		t.Fatal(err)
	}
	if want := oldProviderList(t, wire.MaxVersion, many); !bytes.Equal(got.Bytes(), want) {
		t.Fatal("a long list differs from the one-piece encoding")
	}
}

// BenchmarkProviderList measures the memory GET /resource_providers'
// encoding takes for 100,000 providers, old (maps, one piece) and new
// (streaming): B/op is everything it allocates; peak-heap-MiB is the heap
// in use right after (what the answer still held), both from
// runtime.MemStats. The body goes to io.Discard-like counting, not kept.
func BenchmarkProviderList(b *testing.B) {
	const n = 100000
	providers := make([]engine.Provider, n)
	for i := range providers {
		u := fmt.Sprintf("%08d-0000-0000-0000-%012d", i, i)
		providers[i] = engine.Provider{UUID: u, RootUUID: u, Name: fmt.Sprintf("compute-%d", i), Generation: 3}
	}
	for _, mode := range []string{"maps", "stream"} {
		b.Run(fmt.Sprintf("N=%d/%s", n, mode), func(b *testing.B) {
			b.ReportAllocs()
			var maxInuse uint64
			for b.Loop() {
				var before runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				var size int
				if mode == "maps" {
					size = len(oldProviderList(b, wire.MaxVersion, providers))
				} else {
					cw := &countingWriter{}
					if err := writeProviderList(cw, wire.MaxVersion, slices.Values(providers)); err != nil {
						b.Fatal(err)
					}
					size = cw.n
				}
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				maxInuse = max(maxInuse, after.HeapInuse-min(after.HeapInuse, before.HeapInuse))
				if size < n*100 {
					b.Fatalf("answer of %d bytes", size)
				}
			}
			b.ReportMetric(float64(maxInuse)/(1<<20), "heap-growth-MiB")
		})
	}
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// candidatesSample is an answer of n allocation requests over n compute
// nodes, each with a child, with odd names to escape.
func candidatesSample(n int) *engine.Candidates {
	c := &engine.Candidates{}
	for i := 0; i < n; i++ {
		root := fmt.Sprintf("%08d-0000-0000-0000-000000000000", i)
		child := fmt.Sprintf("%08d-0000-0000-0000-000000000001", i)
		// The element types are not named: httpapi sees them through
		// ledger's aliases only.
		c.Requests = slices.Grow(c.Requests, 1)[:len(c.Requests)+1]
		ar := &c.Requests[len(c.Requests)-1]
		ar.Allocations = slices.Grow(ar.Allocations, 2)[:2]
		ar.Allocations[0].ProviderUUID = root
		ar.Allocations[0].Resources = []engine.ResourceAmount{{Class: "DISK_GB", Amount: 20}}
		ar.Allocations[1].ProviderUUID = child
		ar.Allocations[1].Resources = []engine.ResourceAmount{{Class: "MEMORY_MB", Amount: 4096}, {Class: "VCPU", Amount: 2}}
		ar.Mappings = slices.Grow(ar.Mappings, 2)[:2]
		ar.Mappings[0].ProviderUUIDs = []string{root}
		ar.Mappings[1].Suffix, ar.Mappings[1].ProviderUUIDs = `_"x"\`, []string{child}
		rs := engine.ProviderSummary{Provider: engine.Provider{UUID: root, RootUUID: root}, Traits: []string{"CUSTOM_<&>"}}
		rs.Resources = slices.Grow(rs.Resources, 1)[:1]
		rs.Resources[0].ResourceClass, rs.Resources[0].Capacity, rs.Resources[0].Used = "DISK_GB", 3900, int64(i)
		cs := engine.ProviderSummary{Provider: engine.Provider{UUID: child, ParentUUID: root, RootUUID: root}}
		cs.Resources = slices.Grow(cs.Resources, 3)[:3]
		cs.Resources[0].ResourceClass, cs.Resources[0].Capacity = "MEMORY_MB", 1<<20
		cs.Resources[1].ResourceClass, cs.Resources[1].Capacity, cs.Resources[1].Used = "VCPU", 256, 4
		cs.Resources[2].ResourceClass, cs.Resources[2].Capacity = "FPGA\t", 1
		c.Summaries = append(c.Summaries, rs, cs)
	}
	return c
}

func TestCandidatesStreamSameBytes(t *testing.T) {
	groups := []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 2}, {Class: "MEMORY_MB", Amount: 4096}, {Class: "DISK_GB", Amount: 20}}}}
	for _, n := range []int{0, 1, 3, 2000} {
		c := candidatesSample(n)
		for minor := wire.MinVersion.Minor; minor <= wire.MaxVersion.Minor; minor++ {
			v := wire.Version{Major: 1, Minor: minor}
			want := appendCandidates(nil, c, groups, v)
			var got bytes.Buffer
			w := &chunkCounter{w: &got}
			if _, err := writeCandidates(w, nil, c, groups, v); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("1.%d, %d requests: streamed answer differs", minor, n)
			}
			if n == 2000 && w.writes < 2 {
				t.Fatalf("1.%d: %d bytes written in %d pieces, want it streamed", minor, got.Len(), w.writes)
			}
		}
	}
}

type chunkCounter struct {
	w      *bytes.Buffer
	writes int
}

func (c *chunkCounter) Write(p []byte) (int, error) {
	c.writes++
	if len(p) > 2*wire.StreamFlushBytes {
		return 0, fmt.Errorf("a piece of %d bytes", len(p))
	}
	return c.w.Write(p)
}

// BenchmarkCandidatesAnswer measures the encoding of a 10,000-request
// answer (the engine's default cap): whole (one buffer, as before) or
// streamed through a small buffer. B/op is what it allocates.
func BenchmarkCandidatesAnswer(b *testing.B) {
	c := candidatesSample(10000)
	for _, mode := range []string{"whole", "stream"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cw := &countingWriter{}
				if mode == "whole" {
					_, _ = cw.Write(appendCandidates(nil, c, nil, wire.MaxVersion))
				} else if _, err := writeCandidates(cw, nil, c, nil, wire.MaxVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkProviderListSnapshot is GET /resource_providers of every
// provider of a snapshot of 100,000, less HTTP: the list resolved, the
// Last-Modified found (engine.ProviderList.Newest), the answer written (to a counting writer) at 1.39
// and at 1.0.
func BenchmarkProviderListSnapshot(b *testing.B) {
	s := flatSnapshot(100000)
	for _, v := range []wire.Version{wire.MaxVersion, {Major: 1, Minor: 0}} {
		b.Run(fmt.Sprintf("N=100000/v=%s", v), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, err := s.ProviderList(&engine.ProviderFilter{})
				if err != nil {
					b.Fatal(err)
				}
				_ = l.Newest()
				cw := &countingWriter{}
				if err := writeProviderList(cw, v, l.All()); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(cw.n))
			}
		})
	}
}
