package cloud_test

import (
	"context"
	"testing"
	"time"

	"github.com/berthd/berth/claims/cloud"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
)

func TestViewEnrich(t *testing.T) {
	ctx := context.Background()
	store := ledgertest.NewStore(t)
	var uuids []string
	for _, name := range []string{"cn1", "cn2"} {
		uuids = append(uuids, ledgertest.Provider(t, store, name, resources.DefaultInventory("VCPU", 8)))
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := store.Cloud.ProviderStatePut(ctx, uuids[0], engine.ProviderState{Load1: 2, ReportedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := store.Cloud.PlacementKeysReplace(ctx, uuids[1], []scheduling.PlacementKey{{Name: "rack", Value: 0.5, Sticky: true}},
		scheduling.PlacementKeysReplaceParams{}); err != nil {
		t.Fatal(err)
	}
	consumer := "eeeeeeee-0000-4000-8000-000000000001"
	if err := store.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{{ConsumerUUID: consumer, ProjectID: "p", UserID: "u",
		Properties: map[string]any{"group": "db"}, CopyStickyKeys: true,
		Allocations: []engine.Allocation{{ProviderUUID: uuids[1], Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}}); err != nil {
		t.Fatal(err)
	}
	d := cloud.New(store)
	provs := map[string]*scheduler.ProviderView{uuids[0]: {Provider: engine.Provider{UUID: uuids[0]}}, uuids[1]: {Provider: engine.Provider{UUID: uuids[1]}}}

	// Only what needs asks for is filled.
	if err := d.Enrich(ctx, scheduler.Needs{State: true}, provs); err != nil {
		t.Fatal(err)
	}
	if provs[uuids[0]].State == nil || provs[uuids[0]].State.Load1 != 2 || provs[uuids[1]].State != nil || provs[uuids[1]].Keys != nil {
		t.Fatalf("state only: %+v %+v", provs[uuids[0]], provs[uuids[1]])
	}
	if err := d.Enrich(ctx, scheduler.Needs{Keys: true, Consumers: true}, provs); err != nil {
		t.Fatal(err)
	}
	if p := provs[uuids[1]]; len(p.Keys) != 1 || p.Keys[0].Name != "rack" || p.Consumers != 1 || provs[uuids[0]].Consumers != 0 {
		t.Fatalf("keys and consumers: %+v", p)
	}

	// CloudData.
	m, err := d.Member(ctx, "cn2")
	if err != nil || m == nil || m.UUID != uuids[1] || m.Resources.Of("VCPU").Used != 1 || m.Consumers != 1 {
		t.Fatalf("member %+v %v", m, err)
	}
	if m, err := d.Member(ctx, "nope"); m != nil || err != nil {
		t.Errorf("unknown member %+v %v", m, err)
	}
	members, err := d.Members(ctx, "")
	if err != nil || len(members) != 2 || members[0].State == nil {
		t.Fatalf("members %+v %v", members, err)
	}
	ins, err := d.Instances(ctx, scheduler.InstancesQuery{Location: "cn2", Project: "p"})
	if err != nil || len(ins) != 1 || ins[0].Location != "cn2" || ins[0].Resources["VCPU"] != 1 {
		t.Fatalf("instances %+v %v", ins, err)
	}
	groups, err := d.GroupMembers(ctx, "group", "db")
	if err != nil || groups[uuids[1]] != 1 {
		t.Fatalf("group members %v %v", groups, err)
	}
	keys, err := d.ConsumerKeys(ctx, consumer)
	if err != nil || len(keys) != 1 || keys[0].Value != 0.5 {
		t.Fatalf("consumer keys %+v %v", keys, err)
	}

	// States, with what a report adds of LXD's member state; members
	// say whether they are evacuated.
	if err := store.Cloud.ProviderStatePut(ctx, uuids[1], engine.ProviderState{MemoryFreeMB: 64, ReportedAt: at, SysInfo: engine.SysInfo{TotalRAM: 1 << 30},
		StoragePools: map[string]engine.StoragePoolState{"p": {Space: engine.UsedTotal{Used: 1, Total: 2}}}}); err != nil {
		t.Fatal(err)
	}
	states, err := d.States(ctx, uuids)
	if err != nil || len(states) != 2 || states[uuids[0]].Load1 != 2 || states[uuids[1]].SysInfo.TotalRAM != 1<<30 ||
		states[uuids[1]].StoragePools["p"].Space.Total != 2 {
		t.Fatalf("states %+v %v", states, err)
	}
	if _, err := store.Cloud.ProviderEvacuate(ctx, uuids[0]); err != nil {
		t.Fatal(err)
	}
	if members, err = d.Members(ctx, ""); err != nil || !members[0].Evacuated || members[1].Evacuated {
		t.Fatalf("members after evacuating cn1: %+v %v", members, err)
	}
}
