package ledger

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
)

// scaleSnapshot builds, in memory, a snapshot of n compute nodes with
// VCPU (class 0), MEMORY_MB (1) and DISK_GB (2).
func scaleSnapshot(n int) *engine.Snapshot {
	names := engine.NewNames()
	names.AddClass(0, "VCPU")
	names.AddClass(1, "MEMORY_MB")
	names.AddClass(2, "DISK_GB")
	provs := make([]*engine.ProviderRecord, n)
	for i := range provs {
		id := int64(i + 1)
		provs[i] = &engine.ProviderRecord{
			ID: id, RootID: id, UUID: fmt.Sprintf("%08d-0000-0000-0000-000000000000", i), Name: fmt.Sprintf("cn%d", i),
			Generation: 1,
			Inventories: []engine.InventoryRecord{
				{Class: 0, Total: 64, MinUnit: 1, MaxUnit: 64, StepSize: 1, Ratio: 4},
				{Class: 1, Total: 262144, Reserved: 4096, MinUnit: 1, MaxUnit: 262144, StepSize: 1, Ratio: 1},
				{Class: 2, Total: 4000, Reserved: 100, MinUnit: 1, MaxUnit: 4000, StepSize: 1, Ratio: 1},
			},
		}
	}
	return engine.New(provs, names)
}

// BenchmarkApplyOwnWrites is a claim batch's patch of the cached snapshot
// (applyOwnWrites): 16 claims on 16 providers of an n-provider snapshot.
// Its allocations must not grow with n.
func BenchmarkApplyOwnWrites(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("N=%d/claims=16", n), func(b *testing.B) {
			c := newSnapshotCache(txBeginner{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			c.cur, c.listening = scaleSnapshot(n), true
			b.ReportAllocs()
			now := time.Now()
			k := 0
			for b.Loop() {
				ids := make([]int64, 16)
				ws := make([]*ownWrite, 16)
				for j := range ws {
					id := int64((k*16+j*61)%n + 1)
					p, _ := c.cur.ProviderByID(id)
					ids[j] = id
					ws[j] = &ownWrite{
						providers: []int64{id}, generations: []int64{p.Generation + 1}, updatedAt: []time.Time{now},
						allocProviders: []int64{id, id, id}, allocClasses: []int64{0, 1, 2}, amounts: []int64{0, 0, 0},
					}
				}
				k++
				c.applyOwnWrites(ids, ws)
				if len(c.dirty) != 0 {
					b.Fatalf("%d providers left dirty", len(c.dirty))
				}
			}
		})
	}
}
