package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Inventory is the amount of one resource class a provider offers.
type Inventory struct {
	ResourceClass   string
	Total           int64
	Reserved        int64
	MinUnit         int64
	MaxUnit         int64
	StepSize        int64
	AllocationRatio float64
	UpdatedAt       time.Time
}

// Capacity is what can be allocated in all: (total - reserved) * allocation_ratio.
func (inv Inventory) Capacity() float64 {
	return float64(inv.Total-inv.Reserved) * inv.AllocationRatio
}

// Fits reports whether used units plus amount more stay within capacity.
func (inv Inventory) Fits(used, amount int64) bool {
	return float64(used+amount) <= inv.Capacity()
}

// querier is what both a pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// providerRef is a provider's row id and generation, as read for a write.
type providerRef struct {
	ID         int64
	Generation int64
}

// lookupProvider finds a provider by uuid. A missing provider, or a uuid
// that is not a UUID at all, is reported as fault.ErrNotFound with Placement's
// wording.
func lookupProvider(ctx context.Context, q querier, uuid string) (providerRef, error) {
	var ref providerRef
	canon, ok := storedUUID(uuid)
	if !ok {
		return ref, providerNotFound(uuid)
	}
	err := q.QueryRow(ctx, `SELECT id, generation FROM resource_providers WHERE uuid = $1`, canon).
		Scan(&ref.ID, &ref.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return ref, providerNotFound(uuid)
	}
	return ref, err
}

// lookupClass finds a resource class id by name; ok is false when there is
// no such class.
func lookupClass(ctx context.Context, q querier, name string) (id int32, ok bool, err error) {
	err = q.QueryRow(ctx, `SELECT id FROM resource_classes WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}
