package engine

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
)

// BenchmarkPatch is what a claim batch costs the snapshot
// (ledger.applyOwnWrites): 16 providers get new usage and generations and
// a new snapshot is published. Its allocations must not grow with the
// cluster.
func BenchmarkPatch(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		s := cloud(n)
		b.Run(fmt.Sprintf("N=%d/touched=16", n), func(b *testing.B) {
			b.ReportAllocs()
			changed := make(map[int64]*ProviderRecord, 16)
			k := 0
			for b.Loop() {
				clear(changed)
				for j := 0; j < 16; j++ {
					old := s.provs.at(int32((k*16 + j*61) % n))
					p := *old
					p.Generation++
					changed[p.ID] = &p
				}
				k++
				if next := s.WithProviders(changed, nil, s.Names()); next.Len() != n {
					b.Fatalf("%d providers, want %d", next.Len(), n)
				}
			}
		})
	}
}

// BenchmarkSnapshotBytes builds the benchmark's flat cloud at 10k, 100k and
// 1M providers and reports the live heap it holds per provider
// (bytes/provider), measured with runtime.MemStats after a GC, and the
// CPU a garbage collection costs with it live (gc-cpu-ms: the runtime's
// own count of GC CPU, over forced collections), which a running berthd
// pays every time its heap reaches the collector's goal.
func BenchmarkSnapshotBytes(b *testing.B) {
	for _, n := range []int{10000, 100000, 1000000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var perProv, gcCPU float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				s := benchComputes(n)
				runtime.GC()
				runtime.ReadMemStats(&after)
				perProv = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
				const collections = 5
				start := gcCPUSeconds()
				for range collections {
					runtime.GC()
				}
				gcCPU = (gcCPUSeconds() - start) / collections
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perProv, "bytes/provider")
			b.ReportMetric(gcCPU*1000, "gc-cpu-ms")
		})
	}
}

// gcCPUSeconds is the CPU the garbage collector has used so far, by the
// runtime's estimate.
func gcCPUSeconds() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}
