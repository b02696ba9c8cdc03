// Package enginetest builds engine snapshots in memory for tests and
// benchmarks outside the engine package.
package enginetest

import (
	"fmt"

	"github.com/berthd/berth/ledger/engine"
)

// FlatCloud builds the benchmarks' flat cloud of n compute nodes, the
// shape docs/performance.md measures: VCPU (class 0) 64 at ratio 4,
// MEMORY_MB (1) 262144 with 4096 reserved, DISK_GB (2) 4000 with 100
// reserved, nothing used. Provider i is named cn<i>, with id i+1 and a
// uuid that encodes i; as berth-load seeds them, it is in one of ten
// aggregates, and one in ten has the trait CUSTOM_BENCH.
func FlatCloud(n int) *engine.Snapshot {
	names := engine.NewNames()
	names.AddClass(0, "VCPU")
	names.AddClass(1, "MEMORY_MB")
	names.AddClass(2, "DISK_GB")
	names.AddTrait(0, "CUSTOM_BENCH")
	for a := range 10 {
		names.AddAggregate(int32(a), fmt.Sprintf("a99a0000-0000-4000-8000-%012x", a))
	}
	provs := make([]*engine.ProviderRecord, n)
	for i := range provs {
		id := int64(i + 1)
		var traits []int32
		if i%10 == 0 {
			traits = []int32{0}
		}
		provs[i] = engine.NewRecord(&engine.ProviderRecord{
			ID: id, RootID: id, UUID: fmt.Sprintf("%08x-0000-4000-8000-000000000000", i), Name: fmt.Sprintf("cn%d", i),
			Generation: 1, Traits: traits, Aggregates: []int32{int32(i % 10)},
			Inventories: []engine.InventoryRecord{
				{Class: 0, Total: 64, MinUnit: 1, MaxUnit: 64, StepSize: 1, Ratio: 4},
				{Class: 1, Total: 262144, Reserved: 4096, MinUnit: 1, MaxUnit: 262144, StepSize: 1, Ratio: 1},
				{Class: 2, Total: 4000, Reserved: 100, MinUnit: 1, MaxUnit: 4000, StepSize: 1, Ratio: 1},
			},
		}) // laid out as the ledger loads records
	}
	return engine.New(provs, names)
}

// RackCloud builds the gang benchmark's cloud: racks of hosts compute
// nodes each (VCPU 64 at ratio 4, MEMORY_MB 262144 with 4096 reserved),
// rack r the aggregate RackAggregate(r), host i of rack r named
// h<r>-<i>; a third of the hosts ((r+i)%3 == 0) hold 160 VCPU and
// 131072 MB.
func RackCloud(racks, hosts int) *engine.Snapshot {
	names := engine.NewNames()
	names.AddClass(0, "VCPU")
	names.AddClass(1, "MEMORY_MB")
	for r := range racks {
		names.AddAggregate(int32(r), RackAggregate(r))
	}
	provs := make([]*engine.ProviderRecord, 0, racks*hosts)
	for r := range racks {
		for i := range hosts {
			id := int64(len(provs) + 1)
			var vcpu, mem int64
			if (r+i)%3 == 0 {
				vcpu, mem = 160, 131072
			}
			provs = append(provs, engine.NewRecord(&engine.ProviderRecord{
				ID: id, RootID: id, UUID: fmt.Sprintf("%08x-0000-4000-8000-000000000001", id), Name: fmt.Sprintf("h%d-%d", r, i),
				Generation: 1, Aggregates: []int32{int32(r)},
				Inventories: []engine.InventoryRecord{
					{Class: 0, Total: 64, MinUnit: 1, MaxUnit: 64, StepSize: 1, Ratio: 4, Used: vcpu},
					{Class: 1, Total: 262144, Reserved: 4096, MinUnit: 1, MaxUnit: 262144, StepSize: 1, Ratio: 1, Used: mem},
				},
			}))
		}
	}
	return engine.New(provs, names)
}

// RackAggregate is the uuid of rack r of RackCloud.
func RackAggregate(r int) string { return fmt.Sprintf("a99a0000-0000-4000-8000-%012x", 0x100+r) }
