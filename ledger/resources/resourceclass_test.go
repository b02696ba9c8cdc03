package resources_test

import (
	"context"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

func TestResourceClasses(t *testing.T) {
	s, exec := newTestStore(t)
	ctx := context.Background()

	all, err := s.Providers.ResourceClassList(ctx)
	if err != nil || len(all) != len(resources.StandardClasses) || all[0].Name != "VCPU" || all[0].ID != 0 {
		t.Fatalf("standard classes: %v, %v", all, err)
	}

	gold, err := s.Providers.ResourceClassCreate(ctx, "CUSTOM_GOLD")
	if err != nil || gold.ID < resources.CustomClassMinID || gold.Standard() {
		t.Fatalf("create: %+v, %v", gold, err)
	}
	_, err = s.Providers.ResourceClassCreate(ctx, "CUSTOM_GOLD")
	wantError(t, err, fault.ErrConflict, "", "Conflicting resource class already exists: CUSTOM_GOLD")

	rc, created, err := s.Providers.ResourceClassEnsure(ctx, "CUSTOM_GOLD")
	if err != nil || created || rc.ID != gold.ID {
		t.Errorf("ensure existing: %+v %v %v", rc, created, err)
	}
	silver, created, err := s.Providers.ResourceClassEnsure(ctx, "CUSTOM_SILVER")
	if err != nil || !created || silver.ID <= gold.ID {
		t.Errorf("ensure new: %+v %v %v", silver, created, err)
	}

	_, err = s.Providers.ResourceClassRename(ctx, "VCPU", "CUSTOM_CPU")
	wantError(t, err, fault.ErrInvalid, "", "Cannot update standard resource class VCPU")
	_, err = s.Providers.ResourceClassRename(ctx, "CUSTOM_SILVER", "CUSTOM_GOLD")
	wantError(t, err, fault.ErrConflict, "", "Resource class already exists: CUSTOM_GOLD")
	_, err = s.Providers.ResourceClassRename(ctx, "CUSTOM_NONE", "CUSTOM_X")
	wantError(t, err, fault.ErrNotFound, "", "No such resource class CUSTOM_NONE.")
	bronze, err := s.Providers.ResourceClassRename(ctx, "CUSTOM_SILVER", "CUSTOM_BRONZE")
	if err != nil || bronze.ID != silver.ID || bronze.Name != "CUSTOM_BRONZE" {
		t.Errorf("rename: %+v %v", bronze, err)
	}

	err = s.Providers.ResourceClassDelete(ctx, "VCPU")
	wantError(t, err, fault.ErrInvalid, "", "Cannot delete standard resource class VCPU")

	p := ledgertest.MustCreate(t, s, "rp", uuidA, "")
	exec(`INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
	      VALUES ($1, $2, 8, 0, 1, 8, 1, 1.0)`, p.ID, gold.ID)
	err = s.Providers.ResourceClassDelete(ctx, "CUSTOM_GOLD")
	wantError(t, err, fault.ErrConflict, "",
		"Error in delete resource class: Cannot delete resource class CUSTOM_GOLD. Class is in use in inventory.")
	exec(`DELETE FROM inventories`)
	if err := s.Providers.ResourceClassDelete(ctx, "CUSTOM_GOLD"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = s.Providers.ResourceClassGet(ctx, "CUSTOM_GOLD")
	wantError(t, err, fault.ErrNotFound, "", "No such resource class CUSTOM_GOLD.")
	err = s.Providers.ResourceClassDelete(ctx, "CUSTOM_GOLD")
	wantError(t, err, fault.ErrNotFound, "", "No such resource class CUSTOM_GOLD.")
}
