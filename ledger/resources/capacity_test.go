package resources_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// The capacity answer is only worth something if it is exact. These tests
// ask it on data written through the ledger, then make real allocation
// writes: the k instances it says fit on a root must all be accepted by
// PostgreSQL's capacity checks, and the next one must be refused.

// place writes allocs for a new consumer and returns the error.
func (f *fixture) place(allocs []engine.Allocation) error {
	return f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{{
		ConsumerUUID: fmt.Sprintf("%08x-0000-4000-8000-%012x", rand.Uint32(), rand.Uint64()>>16),
		ProjectID:    "proj", UserID: "user", CheckGeneration: true,
		Allocations: allocs,
	}})
}

// candidateOn returns the allocations of the first candidate for req that
// uses the tree of root, or nil when there is none.
func (f *fixture) candidateOn(req engine.CandidatesParams, root string) []engine.Allocation {
	f.T.Helper()
	c, err := f.Store.Snapshots.AllocationCandidates(f.Ctx, req)
	if err != nil {
		f.T.Fatal(err)
	}
	rootOf := map[string]string{}
	for _, s := range c.Summaries {
		rootOf[s.UUID] = s.RootUUID
	}
	for _, ar := range c.Requests {
		var out []engine.Allocation
		onRoot := false
		for _, a := range ar.Allocations {
			onRoot = onRoot || rootOf[a.ProviderUUID] == root
			pr := engine.Allocation{ProviderUUID: a.ProviderUUID}
			for _, r := range a.Resources {
				pr.Resources = append(pr.Resources, engine.ResourceAmount{Class: r.Class, Amount: r.Amount})
			}
			out = append(out, pr)
		}
		if onRoot {
			return out
		}
	}
	return nil
}

// checkCapacity asks the capacity of req, checks the counts per root
// against want (root uuid to count, in the answer's order), then, root by
// root in that order, writes each count's instances as the candidates for
// that root say and checks that one more is refused: no candidate is left
// on the root, and writing the last instance's allocations again fails.
// Roots are filled in the order the engine counted them (creation order)
// so that a shared provider is consumed as the answer assumed.
func (f *fixture) checkCapacity(req engine.CandidatesParams, order []string, want map[string]int) {
	f.T.Helper()
	c, err := f.Store.Snapshots.Capacity(f.Ctx, engine.CapacityParams{Request: req})
	if err != nil {
		f.T.Fatal(err)
	}
	got := map[string]int{}
	total := 0
	for _, r := range c.Roots {
		got[r.UUID] = r.Fits
		total += r.Fits
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || c.Total != int64(total) || c.Capped || c.Truncated {
		f.T.Fatalf("capacity: got %v (total %d, capped %v, truncated %v), want %v", got, c.Total, c.Capped, c.Truncated, want)
	}
	for _, root := range order {
		var last []engine.Allocation
		for i := 0; i < want[root]; i++ {
			allocs := f.candidateOn(req, root)
			if allocs == nil {
				f.T.Fatalf("root %s: no candidate for instance %d of %d", root, i+1, want[root])
			}
			if err := f.place(allocs); err != nil {
				f.T.Fatalf("root %s: instance %d of %d refused: %v", root, i+1, want[root], err)
			}
			last = allocs
		}
		if allocs := f.candidateOn(req, root); allocs != nil {
			f.T.Fatalf("root %s: a candidate is left after %d instances: %v", root, want[root], allocs)
		}
		if last != nil {
			if err := f.place(last); err == nil {
				f.T.Fatalf("root %s: instance %d accepted", root, want[root]+1)
			} else {
				ledgertest.Rejection(f.T, err, fault.ErrConflict)
			}
		}
	}
}

func TestCapacityMatchesWritesSimple(t *testing.T) {
	f := newFixture(t)
	vcpu := ledgertest.Inv("VCPU", 16)
	vcpu.Reserved, vcpu.AllocationRatio = 2, 2 // 28
	mem := ledgertest.Inv("MEMORY_MB", 8192)
	mem.Reserved, mem.MaxUnit = 512, 4096 // 7680
	disk := ledgertest.Inv("DISK_GB", 130)
	disk.StepSize = 10
	cn1 := f.Provider("cn1", vcpu, mem, disk)
	cn2 := f.Provider("cn2", ledgertest.Inv("VCPU", 5), ledgertest.Inv("MEMORY_MB", 2048), ledgertest.Inv("DISK_GB", 1000))
	f.Provider("cn3", ledgertest.Inv("VCPU", 64)) // no memory, no disk: never listed
	if err := f.place([]engine.Allocation{{ProviderUUID: cn1, Resources: []engine.ResourceAmount{
		ledgertest.Res("VCPU", 3), ledgertest.Res("MEMORY_MB", 1000), ledgertest.Res("DISK_GB", 30)}}}); err != nil {
		t.Fatal(err)
	}
	req := engine.CandidatesParams{NestedAware: true, Groups: []engine.RequestGroup{
		{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 4}, {Class: "MEMORY_MB", Amount: 1024}, {Class: "DISK_GB", Amount: 20}}}}}
	// cn1: VCPU (28-3)/4 = 6, MEMORY_MB (7680-1000)/1024 = 6, DISK_GB 100/20 = 5.
	// cn2: VCPU 5/4 = 1.
	f.checkCapacity(req, []string{cn1, cn2}, map[string]int{cn1: 5, cn2: 1})

	// The flavor written directly on the root, as a client would: refused.
	err := f.place([]engine.Allocation{{ProviderUUID: cn1, Resources: []engine.ResourceAmount{
		ledgertest.Res("VCPU", 4), ledgertest.Res("MEMORY_MB", 1024), ledgertest.Res("DISK_GB", 20)}}})
	ledgertest.Rejection(t, err, fault.ErrConflict)
	c, err := f.Store.Snapshots.Capacity(f.Ctx, engine.CapacityParams{Request: req})
	if err != nil || c.Total != 0 || len(c.Roots) != 0 {
		t.Fatalf("after filling: %+v, %v", c, err)
	}
}

func TestCapacityMatchesWritesNested(t *testing.T) {
	f := newFixture(t)
	cn := f.Provider("cn", ledgertest.Inv("DISK_GB", 1000))
	var numas []string
	for i := 0; i < 2; i++ {
		p, err := f.Store.Providers.ProviderCreate(f.Ctx, resources.ProviderCreateParams{Name: fmt.Sprintf("numa%d", i), ParentUUID: cn})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Store.Providers.InventoriesReplace(f.Ctx, resources.InventoryParams{ProviderUUID: p.UUID, Generation: ledgertest.Gen(0)},
			[]engine.Inventory{ledgertest.Inv("VCPU", 6+int64(i)), ledgertest.Inv("MEMORY_MB", 4096)}); err != nil {
			t.Fatal(err)
		}
		numas = append(numas, p.UUID)
	}
	// Each instance: 10 GB of disk from anywhere in the tree, and 2 VCPU
	// with 1 GB of memory from one NUMA node. numa0 fits 3, numa1 3 (7 VCPU).
	req := engine.CandidatesParams{NestedAware: true, Groups: []engine.RequestGroup{
		{Resources: []engine.ResourceAmount{{Class: "DISK_GB", Amount: 10}}},
		{Suffix: "_NUMA", Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 2}, {Class: "MEMORY_MB", Amount: 1024}}},
	}}
	f.checkCapacity(req, []string{cn}, map[string]int{cn: 6})
	for _, n := range numas {
		if u := f.Usages(n); u.Usages["VCPU"] != 6 {
			t.Errorf("%s: VCPU used %d, want 6", n, u.Usages["VCPU"])
		}
	}
}

func TestCapacityMatchesWritesSharing(t *testing.T) {
	f := newFixture(t)
	const agg = "5a9c6f0e-3d1b-4c8e-9f2a-7b6d5e4c3b2a"
	cn1 := f.Provider("cn1", ledgertest.Inv("VCPU", 2))
	cn2 := f.Provider("cn2", ledgertest.Inv("VCPU", 8))
	ss := f.Provider("ss", ledgertest.Inv("DISK_GB", 100))
	for _, p := range []string{cn1, cn2, ss} {
		if _, err := f.Store.Providers.ProviderAggregatesReplace(f.Ctx, p, []string{agg}, resources.AggregatesReplaceParams{}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := f.Store.Providers.ProviderGet(f.Ctx, ss)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Store.Providers.ProviderTraitsReplace(f.Ctx, ss, p.Generation, []string{"MISC_SHARES_VIA_AGGREGATE"}); err != nil {
		t.Fatal(err)
	}
	req := engine.CandidatesParams{NestedAware: true, Groups: []engine.RequestGroup{
		{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}, {Class: "DISK_GB", Amount: 30}}}}}
	// ss holds 3 instances' disk: cn1 takes 2 (its VCPU), cn2 the one left.
	f.checkCapacity(req, []string{cn1, cn2}, map[string]int{cn1: 2, cn2: 1})
	if u := f.Usages(ss); u.Usages["DISK_GB"] != 90 {
		t.Errorf("ss: DISK_GB used %d, want 90", u.Usages["DISK_GB"])
	}
}
