package claims

import (
	"context"
	"reflect"
	"testing"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/engine/enginetest"
	"github.com/berthd/berth/scheduler"
)

// treesAndSharing is a snapshot with what a flat cloud lacks: a tree (a
// compute node and two NUMA cells), a storage pool shared through an
// aggregate, traits, and a provider of more classes than a providerBox
// holds.
func treesAndSharing() *engine.Snapshot {
	names := engine.NewNames()
	for id, c := range []string{"VCPU", "MEMORY_MB", "DISK_GB", "PCPU", "VGPU", "SRIOV_NET_VF"} {
		names.AddClass(int32(id), c)
	}
	names.AddTrait(0, "MISC_SHARES_VIA_AGGREGATE")
	names.AddTrait(1, "HW_CPU_X86_AVX2")
	names.AddTrait(2, "CUSTOM_GOLD")
	names.AddAggregate(0, "0a5fc1e5-0000-4000-8000-000000000001")
	names.AddAggregate(1, "0a5fc1e5-0000-4000-8000-000000000002")
	inv := func(class int32, total int64) engine.InventoryRecord {
		return engine.InventoryRecord{Class: class, Total: total, Reserved: 1, MinUnit: 1, MaxUnit: total, StepSize: 1, Ratio: 1.5, Used: 2}
	}
	provs := []*engine.ProviderRecord{
		{ID: 1, RootID: 1, UUID: "00000000-0000-4000-8000-000000000001", Name: "cn1", Generation: 3,
			Inventories: []engine.InventoryRecord{inv(1, 4096)}, Aggregates: []int32{0, 1}, Traits: []int32{2}},
		{ID: 2, RootID: 1, ParentID: 1, UUID: "00000000-0000-4000-8000-000000000002", Name: "cn1-numa0", Generation: 1,
			Inventories: []engine.InventoryRecord{inv(0, 16), inv(3, 8)}, Traits: []int32{1}},
		{ID: 3, RootID: 1, ParentID: 1, UUID: "00000000-0000-4000-8000-000000000003", Name: "cn1-numa1", Generation: 1,
			Inventories: []engine.InventoryRecord{inv(0, 16), inv(1, 2048), inv(3, 8), inv(4, 2), inv(5, 4)}},
		{ID: 4, RootID: 4, UUID: "00000000-0000-4000-8000-000000000004", Name: "pool", Generation: 9,
			Inventories: []engine.InventoryRecord{inv(2, 10000)}, Aggregates: []int32{0}, Traits: []int32{0}},
	}
	for i := range provs {
		provs[i] = engine.NewRecord(provs[i])
	}
	return engine.New(provs, names)
}

// fromSummary is the scheduler's view of the provider s describes, built
// from the engine's summary: what views must build from the records.
func fromSummary(s *engine.ProviderSummary) *scheduler.ProviderView {
	p := &scheduler.ProviderView{Provider: s.Provider,
		Traits: s.Traits, Aggregates: s.Aggregates, Resources: make(scheduler.Resources, len(s.Resources))}
	copy(p.Resources, s.Resources)
	scheduler.SortResources(p.Resources)
	return p
}

// views builds, from the snapshot's records, the same ProviderViews as the
// engine's summaries describe, in trees, with sharing and in a flat
// cloud.
func TestViewsAsSummaries(t *testing.T) {
	vcpuAndDisk := []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}, {Class: "DISK_GB", Amount: 10}}}}
	for _, tc := range []struct {
		name   string
		snap   *engine.Snapshot
		groups []engine.RequestGroup
		flat   bool
	}{
		{"trees and sharing", treesAndSharing(), vcpuAndDisk, false},
		{"flat", enginetest.FlatCloud(40), vcpuAndDisk, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := engine.CandidatesParams{NestedAware: true, Max: 1000, Groups: tc.groups}
			summarised, err := tc.snap.Candidates(context.Background(), &p)
			if err != nil {
				t.Fatal(err)
			}
			p.VersionsOnly = true
			versioned, err := tc.snap.Candidates(context.Background(), &p)
			if err != nil {
				t.Fatal(err)
			}
			if versioned.Flat != tc.flat || len(versioned.Versions) != len(summarised.Summaries) || len(versioned.Versions) < 3 {
				t.Fatalf("flat %v, %d versions, %d summaries", versioned.Flat, len(versioned.Versions), len(summarised.Summaries))
			}
			got := map[string]*scheduler.ProviderView{}
			views(versioned, got)
			if len(got) != len(summarised.Summaries) {
				t.Fatalf("%d views for %d summaries", len(got), len(summarised.Summaries))
			}
			for i := range summarised.Summaries {
				want := fromSummary(&summarised.Summaries[i])
				if !reflect.DeepEqual(got[want.UUID], want) {
					t.Errorf("view of %s:\n got %+v\nwant %+v", want.Name, got[want.UUID], want)
				}
			}
			// And schedulerCandidates' candidates use those views.
			for _, cand := range schedulerCandidates(versioned) {
				for _, a := range cand.Allocations {
					if p := cand.Providers[a.ProviderUUID]; p == nil || !reflect.DeepEqual(p, got[a.ProviderUUID]) {
						t.Errorf("candidate %d: provider %s not among the views", cand.Index, a.ProviderUUID)
					}
				}
			}
		})
	}
}
