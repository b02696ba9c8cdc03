package resources_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
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

// TestAllocatedClassKeepsItsInventory: allocations hold their class
// without a foreign key (migrations/0020): an allocation is written only
// where its provider has an inventory of the class, and every way of
// removing that inventory, or the class, refuses while the allocation
// exists. Then claims race those deletes, and no allocation is left
// whose class or inventory is gone.
func TestAllocatedClassKeepsItsInventory(t *testing.T) {
	f := newFixture(t)
	ctx := f.Ctx
	s := f.Store
	f.Known([]string{"p"}, []string{"u"}, nil)
	if _, err := s.Providers.ResourceClassCreate(ctx, "CUSTOM_GOLD"); err != nil {
		t.Fatal(err)
	}
	rp := f.Provider("rp", ledgertest.Inv("CUSTOM_GOLD", 1000), ledgertest.Inv("VCPU", 8))
	claim := func(consumer string) error {
		return s.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{{
			ConsumerUUID: consumer, ProjectID: "p", UserID: "u", CheckGeneration: true,
			Allocations: []engine.Allocation{{ProviderUUID: rp,
				Resources: []engine.ResourceAmount{{Class: "CUSTOM_GOLD", Amount: 1}}}},
		}})
	}
	orphans := func() {
		t.Helper()
		var classless, uninventoried int
		if err := f.DB.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM allocations a
			        WHERE NOT EXISTS (SELECT 1 FROM resource_classes rc WHERE rc.id = a.resource_class_id)),
			       (SELECT count(*) FROM allocations a
			        WHERE NOT EXISTS (SELECT 1 FROM inventories i
			                          WHERE i.resource_provider_id = a.resource_provider_id
			                            AND i.resource_class_id = a.resource_class_id))`).Scan(&classless, &uninventoried); err != nil {
			t.Fatal(err)
		}
		if classless != 0 || uninventoried != 0 {
			t.Fatalf("%d allocations of a class that does not exist, %d without their inventory", classless, uninventoried)
		}
	}

	held := uuid.NewString()
	if err := claim(held); err != nil {
		t.Fatal(err)
	}
	err := s.Providers.InventoryDelete(ctx, rp, "CUSTOM_GOLD")
	wantError(t, err, fault.ErrConflict, fault.CodeConcurrentUpdate, "Unable to delete inventory of class CUSTOM_GOLD")
	_, err = s.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: rp},
		[]engine.Inventory{ledgertest.Inv("VCPU", 8)})
	wantError(t, err, fault.ErrConflict, "", "CUSTOM_GOLD")
	err = s.Providers.InventoriesDelete(ctx, rp)
	wantError(t, err, fault.ErrConflict, "", "CUSTOM_GOLD")
	err = s.Providers.ResourceClassDelete(ctx, "CUSTOM_GOLD")
	wantError(t, err, fault.ErrConflict, "", "Class is in use in inventory.")
	orphans()
	if err := s.Allocations.AllocationsDelete(ctx, held); err != nil {
		t.Fatal(err)
	}

	// Claimers write allocations of the class and keep them, while a
	// deleter removes every allocation of it it finds, then tries to remove
	// the inventory and the class, until the class is gone.
	const claimers, rounds = 6, 25
	var wg sync.WaitGroup
	errs := make(chan error, claimers*rounds+1)
	for range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				var le *fault.Error
				if err := claim(uuid.NewString()); err != nil && !errors.As(err, &le) {
					errs <- err // not a 4xx answer
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			rows, _ := f.DB.Query(ctx, `SELECT DISTINCT c.uuid::text FROM consumers c JOIN allocations a ON a.consumer_id = c.id`)
			held, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				errs <- err
				return
			}
			for _, c := range held {
				if err := s.Allocations.AllocationsDelete(ctx, c); err != nil && !errors.Is(err, fault.ErrNotFound) {
					errs <- err
					return
				}
			}
			if err := s.Providers.InventoryDelete(ctx, rp, "CUSTOM_GOLD"); err == nil || errors.Is(err, fault.ErrNotFound) {
				if s.Providers.ResourceClassDelete(ctx, "CUSTOM_GOLD") == nil {
					return
				}
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("claim or delete: %v", err)
	}
	if _, err := s.Providers.ResourceClassGet(ctx, "CUSTOM_GOLD"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("the class after the deleter: %v", err)
	}
	orphans()
}
