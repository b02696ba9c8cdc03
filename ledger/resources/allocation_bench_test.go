package resources_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// BenchmarkAllocationsReplace measures the claim write alone: concurrent
// writers (16 and 64) each writing a new consumer's allocations (VCPU 1,
// MEMORY_MB 256, DISK_GB 1) to a random one of 1,000 providers, on the
// test cluster (which runs with fsync off, so the figures are the
// statements' cost without the disk). "fast" is a new consumer with
// consumer_generation null, which takes the one-round-trip fast path;
// "general" is the same write without a generation check, which takes the
// general path. It prints claims/s; no figure is asserted.
//
//	go test -run '^$' -bench AllocationsReplace -benchtime 3000x ./ledger/
func BenchmarkAllocationsReplace(b *testing.B) {
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: ledgertest.NewDB(b), MaxConns: 16})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	const nodes = 1000
	rps := make([]string, nodes)
	for i := range rps {
		p, err := store.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: fmt.Sprintf("cn%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		gen := int64(0)
		if _, err := store.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: p.UUID, Generation: &gen},
			[]engine.Inventory{ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 262144), ledgertest.Inv("DISK_GB", 4000)}); err != nil {
			b.Fatal(err)
		}
		rps[i] = p.UUID
	}
	for _, path := range []string{"fast", "general"} {
		for _, writers := range []int{16, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", path, writers), func(b *testing.B) {
				b.SetParallelism(max(1, writers/maxProcs()))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
					for pb.Next() {
						w := ledgertest.Alloc(uuid.NewString(), rps[rng.IntN(nodes)], ledgertest.Res("VCPU", 1), ledgertest.Res("MEMORY_MB", 256), ledgertest.Res("DISK_GB", 1))
						w.CheckGeneration = path == "fast"
						if err := store.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{w}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
			})
		}
	}
}

func maxProcs() int { return runtime.GOMAXPROCS(0) }
