package ledgertest

import (
	"fmt"
	"time"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// The consumers of AuditCloud, in uuid order.
const (
	AuditFine     = "c1000000-0000-4000-8000-000000000001" // on cn1
	AuditShared   = "c2000000-0000-4000-8000-000000000002" // on cn1 and the sharing provider
	AuditSplit    = "c3000000-0000-4000-8000-000000000003" // on cn1 and cn2
	AuditInstance = "c4000000-0000-4000-8000-000000000004" // moved from cn1 to cn2
	AuditMigrate  = "c5000000-0000-4000-8000-000000000005" // the move's source, on cn1
	AuditNova     = "c6000000-0000-4000-8000-000000000006" // a MIGRATION consumer without a move
	AuditEmpty    = "c7000000-0000-4000-8000-000000000007" // a consumer row without allocations
	AuditTree     = "c8000000-0000-4000-8000-000000000008" // on cn3's child
)

// AuditCloud seeds f's database with a cloud holding one finding of every
// kind of the audit when every migration and report counts as stale, and
// returns the providers' uuids by name (cn1 to cn4, ss sharing, cn3-numa0
// under cn3).
func AuditCloud(f *Fixture) map[string]string {
	t := f.T
	t.Helper()
	rp := map[string]string{}
	for i, name := range []string{"cn1", "cn2", "cn3", "cn4", "ss", "cn3-numa0"} {
		rp[name] = fmt.Sprintf("a%d000000-0000-4000-8000-000000000000", i+1)
		parent := ""
		if name == "cn3-numa0" {
			parent = rp["cn3"]
		}
		MustCreate(t, f.Store, name, rp[name], parent)
		if _, err := f.Store.Providers.InventoriesReplace(f.Ctx, resources.InventoryParams{ProviderUUID: rp[name]},
			[]engine.Inventory{Inv("VCPU", 8), Inv("MEMORY_MB", 4096), Inv("DISK_GB", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.Store.Providers.ProviderTraitsReplace(f.Ctx, rp["ss"], 1, []string{"MISC_SHARES_VIA_AGGREGATE"}); err != nil {
		t.Fatal(err)
	}
	two := func(consumer string, a, b string) resources.ConsumerAllocations {
		w := Alloc(consumer, rp[a], Res("VCPU", 1))
		w.Allocations = append(w.Allocations, engine.Allocation{ProviderUUID: rp[b], Resources: []engine.ResourceAmount{Res("DISK_GB", 10)}})
		return w
	}
	nova := Alloc(AuditNova, rp["cn2"], Res("VCPU", 2))
	nova.ConsumerType = resources.MigrationConsumerType
	for _, w := range []resources.ConsumerAllocations{
		Alloc(AuditFine, rp["cn1"], Res("VCPU", 1), Res("MEMORY_MB", 512)),
		two(AuditShared, "cn1", "ss"),
		two(AuditSplit, "cn1", "cn2"),
		Alloc(AuditInstance, rp["cn1"], Res("VCPU", 2)),
		nova,
		Alloc(AuditTree, rp["cn3-numa0"], Res("VCPU", 2)),
	} {
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}); err != nil {
			t.Fatal(err)
		}
	}
	// A move as claims write it: the instance to cn2, its source to the
	// migration consumer.
	mig := Alloc(AuditMigrate, rp["cn1"], Res("VCPU", 2))
	mig.ConsumerType = resources.MigrationConsumerType
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{Alloc(AuditInstance, rp["cn2"], Res("VCPU", 2)), mig},
		Move:      &claimrecords.MoveRecord{ConsumerUUID: AuditInstance, MigrationUUID: AuditMigrate, Reason: "relocation", SourceRoot: rp["cn1"]},
	}); err != nil {
		t.Fatal(err)
	}
	f.Exec(`INSERT INTO consumers (uuid, project_id, user_id) SELECT $1, project_id, user_id FROM consumers LIMIT 1`, AuditEmpty)
	// Reports: cn1 and cn3 an hour ago, cn2 now, cn4 (nothing on it) an
	// hour ago.
	for name, at := range map[string]time.Duration{"cn1": time.Hour, "cn2": 0, "cn3": time.Hour, "cn4": time.Hour} {
		if err := f.Store.Cloud.ProviderStatePut(f.Ctx, rp[name], engine.ProviderState{ReportedAt: time.Now().Add(-at)}); err != nil {
			t.Fatal(err)
		}
	}
	// cn2 holds 4 VCPU; its inventory lowered to 3.
	if _, err := f.Store.Providers.InventoriesReplace(f.Ctx, resources.InventoryParams{ProviderUUID: rp["cn2"]},
		[]engine.Inventory{Inv("VCPU", 3), Inv("MEMORY_MB", 4096), Inv("DISK_GB", 100)}); err != nil {
		t.Fatal(err)
	}
	return rp
}
