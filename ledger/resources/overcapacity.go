package resources

import (
	"context"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// selectOverCapacity lists every provider class whose usage is above its
// capacity, in provider then class order.
const selectOverCapacity = `
	SELECT rp.uuid::text, rc.name, u.used, (i.total - i.reserved) * i.allocation_ratio
	FROM (SELECT resource_provider_id, resource_class_id, sum(used)::bigint AS used
	      FROM allocations GROUP BY resource_provider_id, resource_class_id) u
	JOIN inventories i ON i.resource_provider_id = u.resource_provider_id
	                  AND i.resource_class_id = u.resource_class_id
	JOIN resource_providers rp ON rp.id = i.resource_provider_id
	JOIN resource_classes rc ON rc.id = i.resource_class_id
	WHERE u.used > (i.total - i.reserved) * i.allocation_ratio
	ORDER BY rp.id, rc.id`

// OverCapacity lists every provider class whose usage is above its
// capacity: inventories lowered below what is allocated (accepted, as in
// Placement). Nothing more of such a class fits on its provider until
// usage falls. Read in one statement.
func (s *Providers) OverCapacity(ctx context.Context) ([]OverCapacity, error) {
	var out []OverCapacity
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		out = nil
		rows, err := t.Query(ctx, selectOverCapacity)
		if err != nil {
			return err
		}
		var o OverCapacity
		_, err = pgx.ForEachRow(rows, []any{&o.ProviderUUID, &o.ResourceClass, &o.Used, &o.Capacity}, func() error {
			out = append(out, o)
			return nil
		})
		return err
	})
	return out, err
}

// OverCapacityCount is the number of provider classes OverCapacity lists,
// for a gauge.
func (s *Providers) OverCapacityCount(ctx context.Context) (int64, error) {
	over, err := s.OverCapacity(ctx)
	return int64(len(over)), err
}
