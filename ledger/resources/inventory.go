package resources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// MaxInventoryValue is the largest total, reserved, min_unit, max_unit or
// step_size an inventory may hold (Placement's MAX_INT).
const MaxInventoryValue = 2147483647

// DefaultInventory is an inventory of class with Placement's defaults for
// every field but total: nothing reserved, units of 1 up to
// MaxInventoryValue, allocation ratio 1.
func DefaultInventory(class string, total int64) engine.Inventory {
	return engine.Inventory{
		ResourceClass:   class,
		Total:           total,
		MinUnit:         1,
		MaxUnit:         MaxInventoryValue,
		StepSize:        1,
		AllocationRatio: 1,
	}
}

// validCapacity reports whether inv leaves something to allocate: Placement
// truncates (total - reserved) * allocation_ratio to an integer and wants it
// positive, or merely not negative when zeroOK (microversion 1.26 on, which
// allows reserved == total).
func validCapacity(inv engine.Inventory, zeroOK bool) bool {
	c := math.Trunc(inv.Capacity())
	if zeroOK {
		return c >= 0
	}
	return c > 0
}

// capacityMessage is Placement's InvalidInventoryCapacity text.
func capacityMessage(inv engine.Inventory, providerUUID string, zeroOK bool) string {
	than := "greater than or equal to total"
	if zeroOK {
		than = "greater than total"
	}
	return fmt.Sprintf("Invalid inventory for '%s' on resource provider '%s'. The reserved value is %s.",
		inv.ResourceClass, providerUUID, than)
}

// ProviderInventories is a provider's generation and its inventories,
// ordered by resource class name.
type ProviderInventories struct {
	Generation  int64
	Inventories []engine.Inventory
}

// LastModified is the latest change among the inventories, zero if none.
func (p ProviderInventories) LastModified() time.Time {
	var t time.Time
	for _, inv := range p.Inventories {
		if inv.UpdatedAt.After(t) {
			t = inv.UpdatedAt
		}
	}
	return t
}

// Find returns the inventory of class, if any.
func (p ProviderInventories) Find(class string) (engine.Inventory, bool) {
	for _, inv := range p.Inventories {
		if inv.ResourceClass == class {
			return inv, true
		}
	}
	return engine.Inventory{}, false
}

// InventoryParams identifies the provider an inventory write is for and how
// strictly it is checked.
type InventoryParams struct {
	ProviderUUID string
	// Generation, when not nil, must be the provider's current generation.
	Generation *int64
	// ZeroCapacityOK accepts reserved == total (microversion 1.26 on).
	ZeroCapacityOK bool
}

// lockProvider finds a provider and locks its row for the rest of the
// transaction. Every write that changes a provider's inventory or usage
// holds this lock, so capacity checks made under it cannot race.
//
// Under it too, an inventory is removed only while the provider has no
// allocation of its class (InventoryDelete, setInventory,
// inventoriesReplaceFastSQL), and an allocation is written only where an
// inventory of its class exists (checkCapacity, and chk in the claims'
// statements). Allocations hold their class without a foreign key
// (migrations/0020): these checks keep an allocation's inventory, and so
// its class (ResourceClassDelete), for as long as the allocation exists
// (TestAllocatedClassKeepsItsInventory).
func lockProvider(ctx context.Context, t *core.Txn, providerUUID string) (ProviderRef, error) {
	id, ok := core.StoredUUID(providerUUID) // a path's uuid, compared as written (as Placement does)
	if !ok {
		return ProviderRef{}, ProviderNotFound(providerUUID)
	}
	var ref ProviderRef
	err := t.QueryRow(ctx, lockProviderSQL, id).
		Scan(&ref.ID, &ref.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return ref, ProviderNotFound(providerUUID)
	}
	return ref, err
}

// lockProviders locks the rows of the providers with these ids, in id order
// so that concurrent writers cannot deadlock, and returns their current
// generations. Providers that no longer exist are missing from the result.
func lockProviders(ctx context.Context, t *core.Txn, ids []int64) (map[int64]int64, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows, err := t.Query(ctx, `
		SELECT id, generation FROM resource_providers
		WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, err
	}
	gens := make(map[int64]int64, len(ids))
	var id, gen int64
	_, err = pgx.ForEachRow(rows, []any{&id, &gen}, func() error {
		gens[id] = gen
		return nil
	})
	return gens, err
}

// bumpLockedGeneration increments the generation of a provider whose row
// the caller has locked (lockProvider, lockProviders), so no check against
// an expected generation is needed, and returns the new one.
func bumpLockedGeneration(ctx context.Context, t *core.Txn, providerID int64) (int64, error) {
	var gen int64
	err := t.QueryRow(ctx, `
		UPDATE resource_providers SET generation = generation + 1, updated_at = now()
		WHERE id = $1 RETURNING generation`, providerID).Scan(&gen)
	return gen, err
}

// classIDs resolves resource class names. unknown is the first name, in
// the order given, that is not a resource class.
func classIDs(ctx context.Context, q core.Querier, names []string) (ids map[string]int32, unknown string, err error) {
	rows, err := q.Query(ctx, `SELECT name, id FROM resource_classes WHERE name = ANY($1)`, names)
	if err != nil {
		return nil, "", err
	}
	ids = make(map[string]int32, len(names))
	var name string
	var id int32
	if _, err := pgx.ForEachRow(rows, []any{&name, &id}, func() error {
		ids[name] = id
		return nil
	}); err != nil {
		return nil, "", err
	}
	for _, n := range names {
		if _, ok := ids[n]; !ok {
			return ids, n, nil
		}
	}
	return ids, "", nil
}

const selectInventories = `
	SELECT rc.id, rc.name, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size,
	       i.allocation_ratio, i.updated_at
	FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
	WHERE i.resource_provider_id = $1
	ORDER BY rc.id`

func readInventories(ctx context.Context, q core.Querier, providerID int64) ([]engine.Inventory, error) {
	rows, err := q.Query(ctx, selectInventories, providerID)
	if err != nil {
		return nil, err
	}
	var invs []engine.Inventory
	var ids []int64
	var inv engine.Inventory
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&id, &inv.ResourceClass, &inv.Total, &inv.Reserved, &inv.MinUnit,
		&inv.MaxUnit, &inv.StepSize, &inv.AllocationRatio, &inv.UpdatedAt}, func() error {
		invs = append(invs, inv)
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pyOrderInventories(ids, invs), nil
}

// pyOrderInventories orders invs, whose class ids are ids, as Placement
// lists a provider's inventory: in the order its rows were inserted, which
// for the classes one PUT adds is the iteration order of a Python set of
// their ids (pySetOrder).
func pyOrderInventories(ids []int64, invs []engine.Inventory) []engine.Inventory {
	pos := make(map[int64]int, len(ids))
	for i, id := range pySetOrder(ids) {
		pos[id] = i
	}
	out := make([]engine.Inventory, len(invs))
	for i := range invs {
		out[pos[ids[i]]] = invs[i]
	}
	return out
}

// InventoryList returns a provider's inventories and generation.
func (s *Providers) InventoryList(ctx context.Context, providerUUID string) (ProviderInventories, error) {
	var out ProviderInventories
	err := s.core.ReadTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		invs, err := readInventories(ctx, t, ref.ID)
		out = ProviderInventories{Generation: ref.Generation, Inventories: invs}
		return err
	})
	return out, err
}

// inventoryResult finishes an inventory write: it bumps the provider's
// generation (the caller holds its row lock), records the change for the
// caches, and returns the new generation and inventories.
func inventoryResult(ctx context.Context, t *core.Txn, providerID int64) (ProviderInventories, error) {
	gen, err := bumpLockedGeneration(ctx, t, providerID)
	if err != nil {
		return ProviderInventories{}, err
	}
	t.Touch(providerID)
	invs, err := readInventories(ctx, t, providerID)
	return ProviderInventories{Generation: gen, Inventories: invs}, err
}

// InventoryCreate adds the inventory of one class to a provider that has
// none of it yet (POST /resource_providers/{uuid}/inventories). The
// generation in p, if any, is not checked, as in Placement.
func (s *Providers) InventoryCreate(ctx context.Context, p InventoryParams, inv engine.Inventory) (ProviderInventories, error) {
	var out ProviderInventories
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := lockProvider(ctx, t, p.ProviderUUID)
		if err != nil {
			return err
		}
		prefix := fmt.Sprintf("Unable to create inventory for resource provider %s: ", p.ProviderUUID)
		if !validCapacity(inv, p.ZeroCapacityOK) {
			return fault.Invalid("", "%s%s", prefix, capacityMessage(inv, p.ProviderUUID, p.ZeroCapacityOK))
		}
		ids, unknown, err := classIDs(ctx, t, []string{inv.ResourceClass})
		if err != nil {
			return err
		}
		if unknown != "" {
			return fault.Invalid("", "%sNo such resource class %s.", prefix, unknown)
		}
		tag, err := t.Exec(ctx, `
			INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,
			                         min_unit, max_unit, step_size, allocation_ratio)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT DO NOTHING`,
			ref.ID, ids[inv.ResourceClass], inv.Total, inv.Reserved, inv.MinUnit, inv.MaxUnit,
			inv.StepSize, inv.AllocationRatio)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.Conflict(fault.CodeConcurrentUpdate,
				"Update conflict: Inventory for '%s' on resource provider '%s' already exists.",
				inv.ResourceClass, p.ProviderUUID)
		}
		out, err = inventoryResult(ctx, t, ref.ID)
		return err
	})
	return out, err
}

// checkGeneration compares a generation a client sent with the current one.
func checkGeneration(want *int64, ref ProviderRef) error {
	if want != nil && *want != ref.Generation {
		return fault.Conflict(fault.CodeConcurrentUpdate, "resource provider generation conflict")
	}
	return nil
}

// InventoryUpdate replaces the inventory of one class a provider already
// has (PUT /resource_providers/{uuid}/inventories/{resource_class}). It
// refuses to bring capacity below what is allocated.
func (s *Providers) InventoryUpdate(ctx context.Context, p InventoryParams, inv engine.Inventory) (ProviderInventories, error) {
	var out ProviderInventories
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := lockProvider(ctx, t, p.ProviderUUID)
		if err != nil {
			return err
		}
		if err := checkGeneration(p.Generation, ref); err != nil {
			return err
		}
		prefix := fmt.Sprintf("Unable to update inventory for resource provider %s: ", p.ProviderUUID)
		if !validCapacity(inv, p.ZeroCapacityOK) {
			return fault.Invalid("", "%s%s", prefix, capacityMessage(inv, p.ProviderUUID, p.ZeroCapacityOK))
		}
		ids, unknown, err := classIDs(ctx, t, []string{inv.ResourceClass})
		if err != nil {
			return err
		}
		if unknown != "" {
			return resourceClassNotFound(unknown)
		}
		cur, err := readInventories(ctx, t, ref.ID)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(cur, func(c engine.Inventory) bool { return c.ResourceClass == inv.ResourceClass }) {
			return fault.Invalid("", "No inventory record with resource class for resource provider %s: No inventory of class %s found.",
				p.ProviderUUID, inv.ResourceClass)
		}
		if err := setInventory(ctx, t, ref.ID, p.ProviderUUID, []classedInventory{{inv, ids[inv.ResourceClass]}}, false); err != nil {
			return err
		}
		if err := warnOverCapacity(ctx, s.core.Log, t, ref.ID, p.ProviderUUID); err != nil {
			return err
		}
		out, err = inventoryResult(ctx, t, ref.ID)
		return err
	})
	return out, err
}

// InventoriesReplace makes a provider's inventory exactly invs
// (PUT /resource_providers/{uuid}/inventories): classes not in invs are
// removed, which is refused while they have allocations, and capacity may
// not fall below what is allocated.
func (s *Providers) InventoriesReplace(ctx context.Context, p InventoryParams, invs []engine.Inventory) (ProviderInventories, error) {
	if !slices.ContainsFunc(invs, func(inv engine.Inventory) bool { return !validCapacity(inv, p.ZeroCapacityOK) }) {
		out, over, err := s.inventoriesReplaceFast(ctx, p, invs)
		if !errors.Is(err, errFallBack) {
			if err == nil {
				logOverCapacity(ctx, s.core.Log, p.ProviderUUID, over)
			}
			return out, err
		}
	}
	var out ProviderInventories
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := lockProvider(ctx, t, p.ProviderUUID)
		if err != nil {
			return err
		}
		if err := checkGeneration(p.Generation, ref); err != nil {
			return err
		}
		for _, inv := range invs {
			if !validCapacity(inv, p.ZeroCapacityOK) {
				return fault.Invalid("", "Unable to update inventory for resource provider %s: %s",
					p.ProviderUUID, capacityMessage(inv, p.ProviderUUID, p.ZeroCapacityOK))
			}
		}
		classed, unknown, err := classify(ctx, t, invs)
		if err != nil {
			return err
		}
		if unknown != "" {
			return fault.Invalid("", "Unknown resource class in inventory for resource provider %s: No such resource class %s.",
				p.ProviderUUID, unknown)
		}
		err = setInventory(ctx, t, ref.ID, p.ProviderUUID, classed, true)
		if err := inventoryWriteError(err, "update conflict: "); err != nil {
			return err
		}
		if err := warnOverCapacity(ctx, s.core.Log, t, ref.ID, p.ProviderUUID); err != nil {
			return err
		}
		out, err = inventoryResult(ctx, t, ref.ID)
		return err
	})
	return out, err
}

// inventoryWriteError words the rejection of setInventory.
func inventoryWriteError(err error, inUsePrefix string) error {
	var inUse *inUseError
	if errors.As(err, &inUse) {
		return fault.Conflict(fault.CodeInventoryInUse, "%s%s", inUsePrefix, inUse)
	}
	return err
}

// InventoryDelete removes the inventory of one class from a provider,
// refused while the class has allocations there.
func (s *Providers) InventoryDelete(ctx context.Context, providerUUID, class string) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := lockProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		id, ok, err := lookupClass(ctx, t, class)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("No inventory of class %s found for delete: No such resource class %s.", class, class)
		}
		var inUse bool
		if err := t.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM allocations
			               WHERE resource_provider_id = $1 AND resource_class_id = $2)`,
			ref.ID, id).Scan(&inUse); err != nil {
			return err
		}
		if inUse {
			// Placement's handler answers this with the code of a
			// concurrent update.
			return fault.Conflict(fault.CodeConcurrentUpdate, "Unable to delete inventory of class %s: %s", class,
				&inUseError{classes: []string{class}, provider: providerUUID})
		}
		tag, err := t.Exec(ctx, `DELETE FROM inventories WHERE resource_provider_id = $1 AND resource_class_id = $2`,
			ref.ID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// Placement words it twice (its handler repeats the
			// exception's message).
			return fault.NotFound("No inventory of class %s found for delete: No inventory of class %s found for delete", class, class)
		}
		_, err = inventoryResult(ctx, t, ref.ID)
		return err
	})
}

// InventoriesDelete removes all of a provider's inventory, refused while
// any of it has allocations. The generation is bumped even when there was
// nothing to remove, as in Placement.
func (s *Providers) InventoriesDelete(ctx context.Context, providerUUID string) error {
	// The fast path of a replacement by nothing, with no generation to
	// check: it writes exactly this (provider_pipeline.go).
	if _, _, err := s.inventoriesReplaceFast(ctx, InventoryParams{ProviderUUID: providerUUID}, nil); !errors.Is(err, errFallBack) {
		return err
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := lockProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		err = setInventory(ctx, t, ref.ID, providerUUID, nil, true)
		if err := inventoryWriteError(err, ""); err != nil {
			return err
		}
		_, err = inventoryResult(ctx, t, ref.ID)
		return err
	})
}

// classedInventory is an inventory with its resource class id resolved.
type classedInventory struct {
	engine.Inventory
	classID int32
}

// classify resolves the classes of invs; unknown names the first class, in
// order, that does not exist.
func classify(ctx context.Context, q core.Querier, invs []engine.Inventory) ([]classedInventory, string, error) {
	names := make([]string, len(invs))
	for i, inv := range invs {
		names[i] = inv.ResourceClass
	}
	ids, unknown, err := classIDs(ctx, q, names)
	if err != nil || unknown != "" {
		return nil, unknown, err
	}
	out := make([]classedInventory, len(invs))
	for i, inv := range invs {
		out[i] = classedInventory{inv, ids[inv.ResourceClass]}
	}
	return out, "", nil
}

// inUseError: inventory to be removed still has allocations (Placement's
// InventoryInUse).
type inUseError struct {
	classes  []string
	provider string
}

func (e *inUseError) Error() string {
	return fmt.Sprintf("Inventory for '%s' on resource provider '%s' in use.", strings.Join(e.classes, ", "), e.provider)
}

func formatCapacity(c float64) string {
	if c == math.Trunc(c) && math.Abs(c) < 1e15 {
		return fmt.Sprintf("%d", int64(c))
	}
	return fmt.Sprintf("%g", c)
}

// setInventory writes a provider's inventory. With exact, classes missing
// from invs are removed (an *inUseError if any has allocations); otherwise
// they are left alone. Capacity may fall below usage, as in Placement
// (callers log it: warnOverCapacity). The caller holds the
// provider's row lock and bumps its generation.
func setInventory(ctx context.Context, t *core.Txn, providerID int64, providerUUID string,
	invs []classedInventory, exact bool) error {
	type current struct {
		name string
		used int64
	}
	rows, err := t.Query(ctx, `
		SELECT i.resource_class_id, rc.name,
		       COALESCE((SELECT sum(a.used) FROM allocations a
		                 WHERE a.resource_provider_id = i.resource_provider_id
		                   AND a.resource_class_id = i.resource_class_id), 0)::bigint
		FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
		WHERE i.resource_provider_id = $1`, providerID)
	if err != nil {
		return err
	}
	existing := map[int32]current{}
	var id int32
	var cur current
	if _, err := pgx.ForEachRow(rows, []any{&id, &cur.name, &cur.used}, func() error {
		existing[id] = cur
		return nil
	}); err != nil {
		return err
	}

	wanted := make(map[int32]bool, len(invs))
	for _, inv := range invs {
		wanted[inv.classID] = true
	}
	var remove, busyIDs []int32
	if exact {
		for id, cur := range existing {
			if wanted[id] {
				continue
			}
			remove = append(remove, id)
			if cur.used > 0 {
				busyIDs = append(busyIDs, id)
			}
		}
	}
	if len(busyIDs) > 0 {
		// In Placement's class order: standard classes by their
		// os-resource-classes id, then custom ones by creation.
		slices.Sort(busyIDs)
		busy := make([]string, len(busyIDs))
		for i, id := range busyIDs {
			busy[i] = existing[id].name
		}
		return &inUseError{classes: busy, provider: providerUUID}
	}
	if len(remove) > 0 {
		if _, err := t.Exec(ctx, `
			DELETE FROM inventories WHERE resource_provider_id = $1 AND resource_class_id = ANY($2)`,
			providerID, remove); err != nil {
			return err
		}
	}
	for _, inv := range invs {
		if _, err := t.Exec(ctx, `
			INSERT INTO inventories AS i (resource_provider_id, resource_class_id, total, reserved,
			                              min_unit, max_unit, step_size, allocation_ratio)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE SET
				total = EXCLUDED.total, reserved = EXCLUDED.reserved,
				min_unit = EXCLUDED.min_unit, max_unit = EXCLUDED.max_unit,
				step_size = EXCLUDED.step_size, allocation_ratio = EXCLUDED.allocation_ratio,
				updated_at = now()`,
			providerID, inv.classID, inv.Total, inv.Reserved, inv.MinUnit, inv.MaxUnit,
			inv.StepSize, inv.AllocationRatio); err != nil {
			return err
		}
	}
	return nil
}

// OverCapacity is a class of a provider whose usage is above its capacity
// ((total - reserved) * allocation_ratio): an inventory lowered below what
// is allocated, which Placement accepts (a host whose disk shrank must be
// able to report it). Nothing more of that class fits there until usage
// falls.
type OverCapacity struct {
	ProviderUUID  string
	ResourceClass string
	Used          int64
	Capacity      float64
}

// warnOverCapacity logs a warning for every class of the provider whose
// usage is above its capacity after an inventory write, as Placement logs
// one for an inventory set below its usage.
func warnOverCapacity(ctx context.Context, log *slog.Logger, t *core.Txn, providerID int64, providerUUID string) error {
	over, err := overCapacity(ctx, t, providerID)
	if err != nil {
		return err
	}
	logOverCapacity(ctx, log, providerUUID, over)
	return nil
}

// logOverCapacity logs warnOverCapacity's warnings for over.
func logOverCapacity(ctx context.Context, log *slog.Logger, providerUUID string, over []OverCapacity) {
	for _, o := range over {
		log.WarnContext(ctx, "inventory set below current usage: no new allocation of this class fits until usage falls",
			"resource_provider", providerUUID, "resource_class", o.ResourceClass,
			"used", o.Used, "capacity", formatCapacity(o.Capacity))
	}
}

// overCapacity lists a provider's classes whose usage is above capacity,
// in class order.
func overCapacity(ctx context.Context, q core.Querier, providerID int64) ([]OverCapacity, error) {
	rows, err := q.Query(ctx, `
		SELECT rc.name, u.used, (i.total - i.reserved) * i.allocation_ratio
		FROM inventories i
		JOIN resource_classes rc ON rc.id = i.resource_class_id
		JOIN LATERAL (SELECT COALESCE(sum(a.used), 0)::bigint AS used FROM allocations a
		              WHERE a.resource_provider_id = i.resource_provider_id
		                AND a.resource_class_id = i.resource_class_id) u ON true
		WHERE i.resource_provider_id = $1 AND u.used > (i.total - i.reserved) * i.allocation_ratio
		ORDER BY rc.id`, providerID)
	if err != nil {
		return nil, err
	}
	var out []OverCapacity
	var o OverCapacity
	_, err = pgx.ForEachRow(rows, []any{&o.ResourceClass, &o.Used, &o.Capacity}, func() error {
		out = append(out, o)
		return nil
	})
	return out, err
}
