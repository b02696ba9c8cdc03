package scheduling_test

import (
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/scheduling"
)

// TestProviderEvacuation: the mark is set and cleared on roots only, is
// idempotent, and the snapshot carries it at once, so that a claim's
// candidate search (AvoidEvacuated) leaves the tree out while GET
// /allocation_candidates does not; the shortfall says why.
func TestProviderEvacuation(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx
	a, b := f.Provider("a", ledgertest.Inv("VCPU", 8)), f.Provider("b", ledgertest.Inv("VCPU", 8))
	child, err := s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: "a-numa0", ParentUUID: a})
	if err != nil {
		t.Fatal(err)
	}
	search := func(avoid bool) []string {
		t.Helper()
		snap, err := s.Snapshots.Snapshot(ctx, []string{"VCPU"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := snap.Candidates(ctx, &engine.CandidatesParams{NestedAware: true, AvoidEvacuated: avoid,
			Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var roots []string
		for _, r := range c.Requests {
			roots = append(roots, r.Allocations[0].ProviderUUID)
		}
		return roots
	}
	if got := search(true); len(got) != 2 {
		t.Fatalf("before: %v", got)
	}

	before, err := s.Providers.ProviderGet(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.Cloud.ProviderEvacuate(ctx, a)
	if err != nil || !ev.Evacuated || ev.Name != "a" || ev.ProviderUUID != a || time.Since(ev.At) > time.Minute {
		t.Fatalf("evacuate: %+v %v", ev, err)
	}
	again, err := s.Cloud.ProviderEvacuate(ctx, a)
	if err != nil || !again.At.Equal(ev.At) {
		t.Fatalf("again: %+v %v (first %v)", again, err, ev.At)
	}
	if after, err := s.Providers.ProviderGet(ctx, a); err != nil || after.Generation != before.Generation {
		t.Errorf("generation %d, was %d (%v)", after.Generation, before.Generation, err)
	}
	if got := search(true); len(got) != 1 || got[0] != b {
		t.Errorf("avoiding: %v, want [%s]", got, b)
	}
	if got := search(false); len(got) != 2 {
		t.Errorf("not avoiding: %v", got)
	}
	snap, err := s.Snapshots.Snapshot(ctx, []string{"VCPU"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := snap.Shortfall(ctx, &engine.CandidatesParams{AvoidEvacuated: true, NestedAware: true,
		Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}})
	if err != nil || sf.Fit != 1 || sf.Reasons[engine.ShortEvacuated] != 1 {
		t.Errorf("shortfall %+v %v", sf, err)
	}
	sums, err := s.Cloud.ProviderSummaries(ctx, scheduling.ProviderSummariesParams{RootsOnly: true})
	if err != nil || len(sums) != 2 || !sums[0].Evacuated || sums[1].Evacuated {
		t.Errorf("summaries %+v %v", sums, err)
	}
	if got, err := s.Cloud.ProviderEvacuationGet(ctx, a); err != nil || !got.Evacuated {
		t.Errorf("get %+v %v", got, err)
	}

	// Bad requests write nothing.
	if _, err := s.Cloud.ProviderEvacuate(ctx, child.UUID); !fault.HasCode(err, fault.ErrInvalid, fault.CodeNotRootProvider) {
		t.Errorf("child: %v", err)
	}
	_, err = s.Cloud.ProviderEvacuate(ctx, uuidD)
	ledgertest.Rejection(t, err, fault.ErrNotFound)
	_, err = s.Cloud.ProviderRestore(ctx, uuidD)
	ledgertest.Rejection(t, err, fault.ErrNotFound)
	if _, err := s.Cloud.ProviderRestore(ctx, b); !fault.HasCode(err, fault.ErrConflict, fault.CodeNotEvacuated) {
		t.Errorf("restore b: %v", err)
	}

	if ev, err := s.Cloud.ProviderRestore(ctx, a); err != nil || ev.Evacuated {
		t.Fatalf("restore: %+v %v", ev, err)
	}
	if got := search(true); len(got) != 2 {
		t.Errorf("restored: %v", got)
	}
	if got, err := s.Cloud.ProviderEvacuationGet(ctx, a); err != nil || got.Evacuated {
		t.Errorf("get after restore %+v %v", got, err)
	}
	// A provider deleted takes its mark along.
	if _, err := s.Cloud.ProviderEvacuate(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := f.DB.Exec(ctx, `DELETE FROM inventories WHERE resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = $1)`, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Providers.ProviderDelete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got := search(true); len(got) != 1 || got[0] != a {
		t.Errorf("after delete: %v", got)
	}
}

// TestProviderStateLXD: a report's LXD fields are kept, and storage
// pools round-trip; a report without them reads zeros.
func TestProviderStateLXD(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 8))
	st := engine.ProviderState{Load1: 1, MemoryFreeMB: 512, ReportedAt: time.Now().UTC().Truncate(time.Microsecond),
		SysInfo:      engine.SysInfo{Uptime: 3600, TotalRAM: 8 << 30, SharedRAM: 1, BufferedRAM: 2, TotalSwap: 3, FreeSwap: 4, Processes: 200, LogicalCPUs: 16},
		StoragePools: map[string]engine.StoragePoolState{"default": {Space: engine.UsedTotal{Used: 10, Total: 100}, Inodes: engine.UsedTotal{Used: 1, Total: 9}}}}
	if err := s.Cloud.ProviderStatePut(ctx, rp, st); err != nil {
		t.Fatal(err)
	}
	got, err := s.Cloud.ProviderStateGet(ctx, rp)
	if err != nil || got.SysInfo.Uptime != 3600 || got.SysInfo.TotalRAM != 8<<30 || got.SysInfo.LogicalCPUs != 16 || got.SysInfo.Processes != 200 ||
		got.StoragePools["default"].Space.Total != 100 || got.StoragePools["default"].Inodes.Used != 1 {
		t.Fatalf("get %+v %v", got, err)
	}
	states, err := s.Cloud.ProviderStates(ctx, []string{rp})
	if err != nil || states[rp].SysInfo.FreeSwap != 4 || states[rp].StoragePools["default"].Space.Used != 10 {
		t.Fatalf("states %+v %v", states, err)
	}
	st = engine.ProviderState{Load1: 2, ReportedAt: st.ReportedAt}
	if err := s.Cloud.ProviderStatePut(ctx, rp, st); err != nil {
		t.Fatal(err)
	}
	got, err = s.Cloud.ProviderStateGet(ctx, rp)
	if err != nil || got.SysInfo.Uptime != 0 || got.SysInfo.TotalRAM != 0 || got.StoragePools != nil || got.Load1 != 2 {
		t.Fatalf("replaced %+v %v", got, err)
	}
}
