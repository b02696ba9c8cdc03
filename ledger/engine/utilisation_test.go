package engine

import (
	"testing"
)

// utilisationCloud is three hosts: h0 empty, h1 with 60 of 64 VCPU used
// (4 free, 4 GB free: room for a 2-VCPU flavor, not a 8-VCPU one), h2
// with its MEMORY_MB full; h0 and h1 in aggregate A, h1 with trait T.
func utilisationCloud() *Snapshot {
	n := NewNames()
	n.AddClass(0, "VCPU")
	n.AddClass(1, "MEMORY_MB")
	n.AddTrait(0, "T")
	n.AddAggregate(0, "aaaaaaaa-0000-4000-8000-000000000000")
	host := func(id int64, vcpuUsed, memUsed int64, traits, aggs []int32) *ProviderRecord {
		return NewRecord(&ProviderRecord{ID: id, RootID: id, UUID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+id)),
			Name: "h" + string(rune('0'+id-1)), Traits: traits, Aggregates: aggs,
			Inventories: []InventoryRecord{
				{Class: 0, Total: 32, MinUnit: 1, MaxUnit: 32, StepSize: 1, Ratio: 2, Used: vcpuUsed},
				{Class: 1, Total: 8192, Reserved: 1024, MinUnit: 1, MaxUnit: 8192, StepSize: 1, Ratio: 1, Used: memUsed},
			}})
	}
	return New([]*ProviderRecord{
		host(1, 0, 0, nil, []int32{0}),
		host(2, 60, 3072, []int32{0}, []int32{0}),
		host(3, 8, 7168, nil, nil),
	}, n)
}

func TestUtilisation(t *testing.T) {
	s := utilisationCloud()
	u := s.Utilisation()
	if u.Providers != 3 || u.Roots != 3 || len(u.Classes) != 2 {
		t.Fatalf("utilisation = %+v", u)
	}
	mem, vcpu := u.Classes[0], u.Classes[1]
	if vcpu.Class != "VCPU" || vcpu.Total != 96 || vcpu.Capacity != 192 || vcpu.Used != 68 || vcpu.MinRatio != 2 || vcpu.MaxRatio != 2 {
		t.Errorf("VCPU = %+v", vcpu)
	}
	if mem.Class != "MEMORY_MB" || mem.Reserved != 3072 || mem.Capacity != 3*7168 || mem.Used != 10240 || mem.Free() != 3*7168-10240 {
		t.Errorf("MEMORY_MB = %+v", mem)
	}
	// h0 at 0, h1 at 60/64 (bucket 9), h2 at 100% of its memory (bucket 9).
	if u.Histogram[0] != 1 || u.Histogram[9] != 2 {
		t.Errorf("histogram = %v", u.Histogram)
	}
	groups, total := s.UtilisationBy(ByAggregate, 0, 10)
	if total != 1 || groups[0].Providers != 2 || groups[0].Classes[1].Used != 60 {
		t.Errorf("by aggregate = %d %+v", total, groups)
	}
	groups, total = s.UtilisationBy(ByTrait, 0, 10)
	if total != 1 || groups[0].Key != "T" || groups[0].Providers != 1 {
		t.Errorf("by trait = %d %+v", total, groups)
	}
	roots, total := s.RootUses(1, 1)
	if total != 3 || len(roots) != 1 || roots[0].Name != "h1" || roots[0].Fraction != 60.0/64 {
		t.Errorf("root uses = %d %+v", total, roots)
	}
}

func TestFragmentation(t *testing.T) {
	s := utilisationCloud()
	small := Flavor{Name: "small", Resources: []ResourceAmount{{"VCPU", 2}, {"MEMORY_MB", 2048}}}
	large := Flavor{Name: "large", Resources: []ResourceAmount{{"VCPU", 8}, {"MEMORY_MB", 4096}}}
	// h1 has 4 VCPU and 4096 MB free: the large flavor does not fit
	// there, the small one does.
	if got, total := s.Fragmentation([]Flavor{large}, 0, 10); total != 1 || got[0].Name != "h1" ||
		got[0].Free[0] != (ResourceAmount{"MEMORY_MB", 4096}) || got[0].Free[1] != (ResourceAmount{"VCPU", 4}) {
		t.Errorf("large: %d %+v", total, got)
	}
	if got, total := s.Fragmentation([]Flavor{small, large}, 0, 10); total != 0 {
		t.Errorf("small or large: %d %+v", total, got)
	}
	// h2's memory is full: it is full, not fragmented. An unknown class
	// is ignored.
	unknown := Flavor{Name: "gpu", Resources: []ResourceAmount{{"CUSTOM_GPU", 1}}}
	if got, total := s.Fragmentation([]Flavor{unknown}, 0, 10); total != 0 || got != nil {
		t.Errorf("unknown: %d %+v", total, got)
	}
}
