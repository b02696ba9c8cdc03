package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/berthd/berth/internal/fault"
)

// ProviderInventoryWrite is the whole inventory one provider should have,
// conditional on the provider's generation.
type ProviderInventoryWrite struct {
	ProviderUUID string
	Generation   int64
	Inventories  []Inventory
}

// ReshapeParams is a reshape: new inventories for some providers and new
// allocations for some consumers, applied together (POST /reshaper).
type ReshapeParams struct {
	Inventories []ProviderInventoryWrite
	Allocations []ConsumerAllocations
}

// Reshape moves inventory and allocations between providers in one
// transaction, typically from a root provider to new children. It follows
// Placement's three steps, which tests observe through generations:
//
//  1. each provider with new inventory gets the union of its current and
//     new inventory (generation +1), so nothing allocated disappears yet;
//  2. the allocations are replaced as by AllocationsReplace (generation +1
//     for each provider they name), checked against that interim inventory;
//  3. each provider gets exactly its new inventory (generation +1), which
//     is refused for a class that still has allocations or whose capacity
//     would fall below them.
//
// Generation checks (providers, then consumers) come first; any rejection
// leaves everything as it was.
func (s *Store) Reshape(ctx context.Context, p ReshapeParams) error {
	return s.withTx(ctx, func(t *txn) error {
		// Early checks, in Placement's order: providers with inventory and
		// their generations...
		refs := make([]providerRef, len(p.Inventories))
		for i, iw := range p.Inventories {
			ref, err := lookupProvider(ctx, t, iw.ProviderUUID)
			if errors.Is(err, fault.ErrNotFound) {
				return invalid(fault.CodeProviderNotFound, "Resource provider %s in inventories not found: %s",
					iw.ProviderUUID, err.Error())
			}
			if err != nil {
				return err
			}
			if ref.Generation != iw.Generation {
				return reshapeGenerationConflict(iw, ref.Generation)
			}
			for _, inv := range iw.Inventories {
				if !inv.validCapacity(true) {
					return invalid("", "Unable to update inventory for resource provider %s: %s",
						iw.ProviderUUID, capacityMessage(inv, iw.ProviderUUID, true))
				}
			}
			refs[i] = ref
		}
		// ...then consumers and their generations, then the providers the
		// allocations name.
		ws := append([]ConsumerAllocations(nil), p.Allocations...)
		rows, err := prepareConsumers(ctx, t, ws)
		if err != nil {
			return err
		}
		plan, err := planAllocations(ctx, t, ws, rows)
		if err != nil {
			return err
		}

		// Lock every provider involved, in id order, and make sure the
		// generations checked above still hold.
		lockIDs := plan.providerIDs()
		for _, ref := range refs {
			lockIDs = append(lockIDs, ref.ID)
		}
		gens, err := lockProviders(ctx, t, lockIDs)
		if err != nil {
			return err
		}
		for i, iw := range p.Inventories {
			gen, ok := gens[refs[i].ID]
			if !ok {
				return invalid(fault.CodeProviderNotFound, "Resource provider %s in inventories not found: No resource provider with uuid %s found",
					iw.ProviderUUID, iw.ProviderUUID)
			}
			if gen != iw.Generation {
				return reshapeGenerationConflict(iw, gen)
			}
		}
		if err := plan.lock(ctx, t); err != nil {
			return err
		}

		classed := make([][]classedInventory, len(p.Inventories))
		for i, iw := range p.Inventories {
			c, unknown, err := classify(ctx, t, iw.Inventories)
			if err != nil {
				return err
			}
			if unknown != "" {
				return invalid("", "malformed reshaper data: No such resource class %s.", unknown)
			}
			classed[i] = c
		}

		// 1. Interim inventories. A provider whose new inventory is empty
		// is left alone (Placement skips it too).
		for i, iw := range p.Inventories {
			if len(classed[i]) == 0 {
				continue
			}
			if err := setInventory(ctx, t, refs[i].ID, iw.ProviderUUID, classed[i], false); err != nil {
				return err
			}
			if _, err := bumpLockedGeneration(ctx, t, refs[i].ID); err != nil {
				return err
			}
		}

		// 2. Allocations.
		err = plan.apply(ctx, t)
		var uc *unknownClassError
		if errors.As(err, &uc) {
			return invalid("", "malformed reshaper data: %s", uc)
		}
		if err != nil {
			return err
		}

		// 3. Final inventories.
		for i, iw := range p.Inventories {
			err := setInventory(ctx, t, refs[i].ID, iw.ProviderUUID, classed[i], true)
			if err := inventoryWriteError(err, "update conflict: "); err != nil {
				return err
			}
			if err := s.warnOverCapacity(ctx, t, refs[i].ID, iw.ProviderUUID); err != nil {
				return err
			}
			if _, err := bumpLockedGeneration(ctx, t, refs[i].ID); err != nil {
				return err
			}
			t.touch(refs[i].ID)
		}
		return nil
	})
}

func reshapeGenerationConflict(iw ProviderInventoryWrite, actual int64) error {
	return conflict(fault.CodeConcurrentUpdate, "%s", fmt.Sprintf(
		"resource provider generation conflict for provider %s: actual: %d, given: %d",
		iw.ProviderUUID, actual, iw.Generation))
}
