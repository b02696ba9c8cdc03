package resources_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// TestRefusedWritesChangeNothing makes every kind of refusal happen, each
// in a write that would also have changed other things first, and checks
// that the ledger is byte for byte as before.
func TestRefusedWritesChangeNothing(t *testing.T) {
	f := newFixture(t)
	disk := inv("DISK_GB", 100)
	disk.StepSize = 10
	disk.MinUnit = 10
	disk.MaxUnit = 50
	rp1 := f.provider("rp1", inv("VCPU", 8), disk)
	rp2 := f.provider("rp2", inv("VCPU", 4))
	c1, c2, c3 := uuid.NewString(), uuid.NewString(), uuid.NewString()
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{
		alloc(c1, rp1, res("VCPU", 4), res("DISK_GB", 50)),
		alloc(c2, rp2, res("VCPU", 2)),
	}); err != nil {
		t.Fatal(err)
	}
	two := func(a, b resources.ConsumerAllocations) []resources.ConsumerAllocations {
		return []resources.ConsumerAllocations{a, b}
	}
	withGen := func(w resources.ConsumerAllocations, g *int64) resources.ConsumerAllocations {
		w.CheckGeneration, w.Generation = true, g
		return w
	}
	typed := func(w resources.ConsumerAllocations) resources.ConsumerAllocations {
		w.ConsumerType, w.ProjectID, w.UserID = "NEWTYPE", "newproject", "newuser"
		return w
	}
	tests := []struct {
		name   string
		write  func() error
		kind   error
		code   string
		detail string
	}{
		{"over capacity after a move", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, two(
				alloc(c2, rp1, res("VCPU", 1)), // would free rp2, take rp1
				typed(alloc(c3, rp1, res("VCPU", 4))),
			))
		}, fault.ErrConflict, "", "would exceed the capacity"},
		{"max_unit", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, two(typed(alloc(c3, rp2, res("VCPU", 1))), alloc(c1, rp1, res("DISK_GB", 60))))
		}, fault.ErrConflict, "", "violate inventory constraints"},
		{"step_size", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{alloc(c1, rp1, res("DISK_GB", 15))})
		}, fault.ErrConflict, "", "violate inventory constraints"},
		{"class without inventory", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{alloc(c1, rp2, res("VCPU", 1), res("DISK_GB", 10))})
		}, fault.ErrConflict, "", "Inventory for 'DISK_GB' on resource provider '" + rp2 + "' invalid"},
		{"unknown class", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, two(typed(alloc(c3, rp2, res("VCPU", 1))), alloc(c1, rp1, res("CUSTOM_NOPE", 1))))
		}, fault.ErrInvalid, "", "No such resource class CUSTOM_NOPE"},
		{"unknown provider", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, two(typed(alloc(c3, rp2, res("VCPU", 1))), alloc(c1, uuid.NewString(), res("VCPU", 1))))
		}, fault.ErrInvalid, "", "that does not exist"},
		{"stale consumer generation", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, two(
				withGen(typed(alloc(c3, rp2, res("VCPU", 1))), nil),
				withGen(alloc(c1, rp1, res("VCPU", 1)), gen(0)),
			))
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "expected 1 but got 0"},
		{"new consumer with a generation", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{withGen(alloc(c3, rp2, res("VCPU", 1)), gen(3))})
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "expected null but got 3"},
		{"existing consumer without a generation", func() error {
			return f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{withGen(alloc(c1, rp1, res("VCPU", 1)), nil)})
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "expected 1 but got None"},
		{"replace removes a class in use", func() error {
			_, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: rp1, Generation: gen(2)},
				[]engine.Inventory{inv("VCPU", 100), inv("MEMORY_MB", 10)})
			return err
		}, fault.ErrConflict, fault.CodeInventoryInUse, "Inventory for 'DISK_GB' on resource provider '" + rp1 + "' in use"},
		{"replace with a stale generation", func() error {
			_, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: rp1, Generation: gen(1)},
				[]engine.Inventory{inv("VCPU", 100), disk})
			return err
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "generation conflict"},
		{"replace with an unknown class", func() error {
			_, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: rp1, Generation: gen(2)},
				[]engine.Inventory{inv("VCPU", 100), disk, inv("CUSTOM_NOPE", 1)})
			return err
		}, fault.ErrInvalid, "", "No such resource class CUSTOM_NOPE"},
		{"reserved above total", func() error {
			bad := inv("VCPU", 8)
			bad.Reserved = 9
			_, err := f.store.Providers.InventoryUpdate(f.ctx, resources.InventoryParams{ProviderUUID: rp1, ZeroCapacityOK: true}, bad)
			return err
		}, fault.ErrInvalid, "", "reserved value is greater than total"},
		{"delete inventory in use", func() error {
			return f.store.Providers.InventoryDelete(f.ctx, rp2, "VCPU")
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "in use"},
		{"delete all inventory in use", func() error {
			return f.store.Providers.InventoriesDelete(f.ctx, rp1)
		}, fault.ErrConflict, fault.CodeInventoryInUse, "Inventory for 'VCPU, DISK_GB'"},
		{"reshape with a stale provider generation", func() error {
			return f.store.Allocations.Reshape(f.ctx, resources.ReshapeParams{
				Inventories: []resources.ProviderInventoryWrite{{ProviderUUID: rp2, Generation: 1, Inventories: []engine.Inventory{inv("VCPU", 10)}}},
				Allocations: []resources.ConsumerAllocations{withGen(typed(alloc(c3, rp1, res("VCPU", 1))), nil)},
			})
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "actual: 2, given: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.dump()
			le := rejection(t, tt.write(), tt.kind)
			if le.Code != tt.code {
				t.Errorf("code %q, want %q", le.Code, tt.code)
			}
			if !strings.Contains(le.Msg, tt.detail) {
				t.Errorf("message %q lacks %q", le.Msg, tt.detail)
			}
			if after := f.dump(); after != before {
				t.Errorf("refused write changed the ledger:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestAllocationGenerations checks the generation rules tests and clients
// rely on: a write bumps each provider it names and each consumer once;
// emptying a consumer counts its old providers and deletes it; DELETE
// bumps nothing.
func TestAllocationGenerations(t *testing.T) {
	f := newFixture(t)
	rp1 := f.provider("rp1", inv("VCPU", 8))
	rp2 := f.provider("rp2", inv("VCPU", 8))
	c1, c2 := uuid.NewString(), uuid.NewString()
	put := func(ws ...resources.ConsumerAllocations) {
		t.Helper()
		if err := f.store.Allocations.AllocationsReplace(f.ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	gens := func() (int64, int64) {
		return f.usages(rp1).Generation, f.usages(rp2).Generation
	}
	put(alloc(c1, rp1, res("VCPU", 2)))
	if g1, g2 := gens(); g1 != 2 || g2 != 1 {
		t.Fatalf("after first write: %d %d", g1, g2)
	}
	// A move: rp2 is named, rp1 (left behind) is not bumped, as in Placement.
	put(alloc(c1, rp2, res("VCPU", 2)))
	if g1, g2 := gens(); g1 != 2 || g2 != 2 {
		t.Fatalf("after move: %d %d", g1, g2)
	}
	got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, c1)
	if got.Consumer.Generation != 2 {
		t.Fatalf("consumer generation %d", got.Consumer.Generation)
	}
	// Emptying c1 (while c2 takes rp1) bumps rp2 through c1's old
	// allocations, rp1 through c2's new one, and deletes c1.
	put(resources.ConsumerAllocations{ConsumerUUID: c1}, alloc(c2, rp1, res("VCPU", 8)))
	if g1, g2 := gens(); g1 != 3 || g2 != 3 {
		t.Fatalf("after emptying: %d %d", g1, g2)
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, c1); got.Consumer != nil {
		t.Fatalf("emptied consumer still exists: %+v", got.Consumer)
	}
	if err := f.store.Allocations.AllocationsDelete(f.ctx, c2); err != nil {
		t.Fatal(err)
	}
	if g1, g2 := gens(); g1 != 3 || g2 != 3 {
		t.Fatalf("after delete: %d %d", g1, g2)
	}
	rejection(t, f.store.Allocations.AllocationsDelete(f.ctx, c2), fault.ErrNotFound)
	if u := f.usages(rp1); u.Usages["VCPU"] != 0 {
		t.Fatalf("usage after delete: %v", u.Usages)
	}
}

// TestUsagesByConsumerType covers GET /usages at 1.38, which upstream
// Placement cannot answer on PostgreSQL.
func TestUsagesByConsumerType(t *testing.T) {
	f := newFixture(t)
	rp := f.provider("rp", inv("VCPU", 64), inv("DISK_GB", 1000))
	typed := func(w resources.ConsumerAllocations, typ string) resources.ConsumerAllocations {
		w.ConsumerType = typ
		return w
	}
	other := alloc(uuid.NewString(), rp, res("VCPU", 5))
	other.ProjectID = "other"
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{
		typed(alloc(uuid.NewString(), rp, res("VCPU", 1), res("DISK_GB", 10)), "INSTANCE"),
		typed(alloc(uuid.NewString(), rp, res("VCPU", 2)), "INSTANCE"),
		typed(alloc(uuid.NewString(), rp, res("DISK_GB", 20)), "MIGRATION"),
		alloc(uuid.NewString(), rp, res("VCPU", 4)),
		other,
	}); err != nil {
		t.Fatal(err)
	}
	render := func(gs []resources.UsageGroup) string {
		var parts []string
		for _, g := range gs {
			parts = append(parts, g.ConsumerType+":"+itoa(g.ConsumerCount)+":"+
				"VCPU="+itoa(g.Usages["VCPU"])+",DISK_GB="+itoa(g.Usages["DISK_GB"]))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		p    resources.UsagesParams
		want string
	}{
		{resources.UsagesParams{ProjectID: "proj"}, ":4:VCPU=7,DISK_GB=30"},
		{resources.UsagesParams{ProjectID: "proj", UserID: "nobody"}, ":0:VCPU=0,DISK_GB=0"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true}, "INSTANCE:2:VCPU=3,DISK_GB=10 MIGRATION:1:VCPU=0,DISK_GB=20 unknown:1:VCPU=4,DISK_GB=0"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "all"}, "all:4:VCPU=7,DISK_GB=30"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "unknown"}, "unknown:1:VCPU=4,DISK_GB=0"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "INSTANCE"}, "INSTANCE:2:VCPU=3,DISK_GB=10"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "ALL"}, ""},
		{resources.UsagesParams{ProjectID: "other", ByType: true}, "unknown:1:VCPU=5,DISK_GB=0"},
	}
	for _, tt := range tests {
		gs, err := f.store.Providers.Usages(f.ctx, tt.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(gs); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.p, got, tt.want)
		}
	}
}

// TestReshapeMovesToChild moves inventory and allocations from a root to a
// child in one reshape, as a virt driver does when it starts modelling
// NUMA nodes.
func TestReshapeMovesToChild(t *testing.T) {
	f := newFixture(t)
	root := f.provider("root", inv("VCPU", 8), inv("DISK_GB", 100))
	child := f.provider("child")
	c1 := uuid.NewString()
	w := alloc(c1, root, res("VCPU", 6), res("DISK_GB", 10))
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{w}); err != nil {
		t.Fatal(err)
	}
	moved := resources.ConsumerAllocations{
		ConsumerUUID: c1, ProjectID: "proj", UserID: "user", CheckGeneration: true, Generation: gen(1),
		Allocations: []engine.Allocation{
			{ProviderUUID: root, Resources: []engine.ResourceAmount{res("DISK_GB", 10)}},
			{ProviderUUID: child, Resources: []engine.ResourceAmount{res("VCPU", 6)}},
		},
	}
	if err := f.store.Allocations.Reshape(f.ctx, resources.ReshapeParams{
		Inventories: []resources.ProviderInventoryWrite{
			{ProviderUUID: root, Generation: 2, Inventories: []engine.Inventory{inv("DISK_GB", 100)}},
			{ProviderUUID: child, Generation: 0, Inventories: []engine.Inventory{inv("VCPU", 8)}},
		},
		Allocations: []resources.ConsumerAllocations{moved},
	}); err != nil {
		t.Fatal(err)
	}
	ur, uc := f.usages(root), f.usages(child)
	if len(ur.Usages) != 1 || ur.Usages["DISK_GB"] != 10 || ur.Generation != 5 {
		t.Errorf("root: %+v", ur)
	}
	if len(uc.Usages) != 1 || uc.Usages["VCPU"] != 6 || uc.Generation != 3 {
		t.Errorf("child: %+v", uc)
	}
	got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, c1)
	if got.Consumer.Generation != 2 || len(got.Allocations) != 2 {
		t.Errorf("consumer after reshape: %+v %+v", got.Consumer, got.Allocations)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
