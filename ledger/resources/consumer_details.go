package resources

import (
	"context"
	"encoding/json"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
)

// writeConsumerDetails stores what a claim says about the consumers it
// has just written (ConsumerAllocations.Name, Properties and
// CopyStickyKeys), in the allocation write's transaction: rows[i] is the
// row of ws[i]. A consumer the write deleted (it holds nothing now) is
// left alone. Sticky keys are added to those the consumer already kept
// (a key it has is overwritten with the new provider's value), so a
// rescheduled consumer still prefers where it was.
func writeConsumerDetails(ctx context.Context, t *core.Txn, ws []ConsumerAllocations, rows []*ConsumerRow) error {
	for i, w := range ws {
		if w.Name != "" || w.Properties != nil {
			var name *string
			if w.Name != "" {
				name = &w.Name
			}
			var props json.RawMessage // not []byte: pgx sends that as a bytea when it does not know the type
			if w.Properties != nil {
				var err error
				if props, err = json.Marshal(w.Properties); err != nil {
					return fault.Invalid("", "Consumer %s: properties are not JSON: %v", w.ConsumerUUID, err)
				}
			}
			if _, err := t.Exec(ctx, `UPDATE consumers SET name = COALESCE($2, name),
				properties = COALESCE($3::jsonb, properties) WHERE id = $1`, rows[i].ID, name, props); err != nil {
				return err
			}
		}
		if w.CopyStickyKeys {
			if _, err := t.Exec(ctx, `
				INSERT INTO consumer_placement_keys (consumer_id, name, value)
				SELECT DISTINCT ON (k.name) a.consumer_id, k.name, k.value
				FROM allocations a
				JOIN provider_placement_keys k ON k.resource_provider_id = a.resource_provider_id AND k.sticky
				WHERE a.consumer_id = $1
				ORDER BY k.name, a.resource_provider_id
				ON CONFLICT (consumer_id, name) DO UPDATE SET value = EXCLUDED.value`, rows[i].ID); err != nil {
				return err
			}
		}
	}
	return nil
}
