package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/quotas"
)

// ProviderInventoryWrite is the whole inventory one provider should have,
// conditional on the provider's generation.
type ProviderInventoryWrite struct {
	ProviderUUID string
	Generation   int64
	Inventories  []engine.Inventory
}

// ReshapeParams is a reshape: new inventories for some providers and new
// allocations for some consumers, applied together (POST /reshaper).
type ReshapeParams struct {
	Inventories []ProviderInventoryWrite
	Allocations []ConsumerAllocations
	// Quota, when not nil, are the limits the allocations are checked
	// against (quota_check.go), after every other check.
	Quota *quotas.Quota
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
func (s *Allocations) Reshape(ctx context.Context, p ReshapeParams) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		r, err := prepareReshape(ctx, t, p)
		if err != nil {
			return err
		}
		// 1. Interim inventories. A provider whose new inventory is empty
		// is left alone (Placement skips it too).
		for i, iw := range p.Inventories {
			if len(r.classed[i]) == 0 {
				continue
			}
			if err := setInventory(ctx, t, r.refs[i].ID, iw.ProviderUUID, r.classed[i], false); err != nil {
				return err
			}
			if _, err := bumpLockedGeneration(ctx, t, r.refs[i].ID); err != nil {
				return err
			}
		}
		// 2. Allocations.
		err = r.plan.clear(ctx, t)
		if uc := (*unknownClassError)(nil); errors.As(err, &uc) {
			return fault.Invalid("", "malformed reshaper data: %s", uc)
		}
		if err != nil {
			return err
		}
		guard, err := s.countQuota(ctx, t, p.Quota, r.plan)
		if err != nil {
			return err
		}
		if err := r.plan.write(ctx, t); err != nil {
			return err
		}
		// A Placement-API write of these consumers' allocations: their
		// stored claims become permanent (ledger/claimrecords/records.go).
		if err := claimrecords.SettleStates(ctx, t, consumerUUIDs(p.Allocations)); err != nil {
			return err
		}
		// 3. Final inventories.
		for i, iw := range p.Inventories {
			if err := s.finalInventory(ctx, t, r.refs[i].ID, iw.ProviderUUID, r.classed[i]); err != nil {
				return err
			}
		}
		return guard.check()
	})
}

// reshape is a reshape checked, planned and locked: the providers with new
// inventory, their inventories with class ids, and the allocation plan.
type reshape struct {
	refs    []ProviderRef
	classed [][]classedInventory
	plan    *allocPlan
}

// prepareReshape makes the early checks in Placement's order (providers
// with inventory and their generations, then consumers and theirs, then
// the providers the allocations name), then locks every provider
// involved, in id order, and checks that the generations still hold.
func prepareReshape(ctx context.Context, t *core.Txn, p ReshapeParams) (*reshape, error) {
	r := &reshape{refs: make([]ProviderRef, len(p.Inventories)), classed: make([][]classedInventory, len(p.Inventories))}
	for i, iw := range p.Inventories {
		ref, err := reshapeProvider(ctx, t, iw)
		if err != nil {
			return nil, err
		}
		r.refs[i] = ref
	}
	ws := append([]ConsumerAllocations(nil), p.Allocations...)
	rows, err := prepareConsumers(ctx, t, ws)
	if err != nil {
		return nil, err
	}
	if r.plan, err = planAllocations(ctx, t, ws, rows); err != nil {
		return nil, err
	}
	lockIDs := r.plan.providerIDs()
	for _, ref := range r.refs {
		lockIDs = append(lockIDs, ref.ID)
	}
	gens, err := lockProviders(ctx, t, lockIDs)
	if err != nil {
		return nil, err
	}
	for i, iw := range p.Inventories {
		gen, ok := gens[r.refs[i].ID]
		if !ok {
			return nil, fault.Invalid(fault.CodeProviderNotFound, "Resource provider %s in inventories not found: No resource provider with uuid %s found",
				iw.ProviderUUID, iw.ProviderUUID)
		}
		if gen != iw.Generation {
			return nil, reshapeGenerationConflict(iw, gen)
		}
	}
	if err := r.plan.lock(ctx, t); err != nil {
		return nil, err
	}
	for i, iw := range p.Inventories {
		c, unknown, err := classify(ctx, t, iw.Inventories)
		if err != nil {
			return nil, err
		}
		if unknown != "" {
			return nil, fault.Invalid("", "malformed reshaper data: No such resource class %s.", unknown)
		}
		r.classed[i] = c
	}
	return r, nil
}

// reshapeProvider looks up a provider with new inventory and checks its
// generation and the inventories' capacities.
func reshapeProvider(ctx context.Context, t *core.Txn, iw ProviderInventoryWrite) (ProviderRef, error) {
	ref, err := LookupProvider(ctx, t, iw.ProviderUUID)
	if errors.Is(err, fault.ErrNotFound) {
		return ref, fault.Invalid(fault.CodeProviderNotFound, "Resource provider %s in inventories not found: %s",
			iw.ProviderUUID, err.Error())
	}
	if err != nil {
		return ref, err
	}
	if ref.Generation != iw.Generation {
		return ref, reshapeGenerationConflict(iw, ref.Generation)
	}
	for _, inv := range iw.Inventories {
		if !validCapacity(inv, true) {
			return ref, fault.Invalid("", "Unable to update inventory for resource provider %s: %s",
				iw.ProviderUUID, capacityMessage(inv, iw.ProviderUUID, true))
		}
	}
	return ref, nil
}

// finalInventory gives a reshaped provider exactly its new inventory.
func (s *Allocations) finalInventory(ctx context.Context, t *core.Txn, id int64, providerUUID string, classed []classedInventory) error {
	err := setInventory(ctx, t, id, providerUUID, classed, true)
	if err := inventoryWriteError(err, "update conflict: "); err != nil {
		return err
	}
	if err := warnOverCapacity(ctx, s.core.Log, t, id, providerUUID); err != nil {
		return err
	}
	if _, err := bumpLockedGeneration(ctx, t, id); err != nil {
		return err
	}
	t.Touch(id)
	return nil
}

func reshapeGenerationConflict(iw ProviderInventoryWrite, actual int64) error {
	return fault.Conflict(fault.CodeConcurrentUpdate, "%s", fmt.Sprintf(
		"resource provider generation conflict for provider %s: actual: %d, given: %d",
		iw.ProviderUUID, actual, iw.Generation))
}
