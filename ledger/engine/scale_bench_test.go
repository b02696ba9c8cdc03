package engine

import (
	"fmt"
	"runtime"
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
// (bytes/provider), measured with runtime.MemStats after a GC.
func BenchmarkSnapshotBytes(b *testing.B) {
	for _, n := range []int{10000, 100000, 1000000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var perProv float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				s := benchComputes(n)
				runtime.GC()
				runtime.ReadMemStats(&after)
				perProv = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perProv, "bytes/provider")
		})
	}
}
