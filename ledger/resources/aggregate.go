package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/berthd/berth/ledger/internal/core"
)

// ProviderAggregates returns the uuids of the aggregates the provider with
// this uuid belongs to, in the order they were first used, and the
// provider's generation. One statement reads both, so they come from the
// same snapshot.
func (s *Providers) ProviderAggregates(ctx context.Context, rpUUID string) (generation int64, aggregates []string, err error) {
	canon, ok := core.StoredUUID(rpUUID)
	if !ok {
		return 0, nil, ProviderNotFound(rpUUID)
	}
	rows, err := s.core.DB.Query(ctx, `
		SELECT rp.generation, pa.uuid::text
		FROM resource_providers rp
		LEFT JOIN resource_provider_aggregates rpa ON rpa.resource_provider_id = rp.id
		LEFT JOIN placement_aggregates pa ON pa.id = rpa.aggregate_id
		WHERE rp.uuid = $1
		ORDER BY pa.id`, canon)
	if err != nil {
		return 0, nil, fmt.Errorf("ledger: read provider aggregates: %w", err)
	}
	defer rows.Close()
	found := false
	aggregates = []string{}
	for rows.Next() {
		found = true
		var agg *string
		if err := rows.Scan(&generation, &agg); err != nil {
			return 0, nil, fmt.Errorf("ledger: read provider aggregates: %w", err)
		}
		if agg != nil {
			aggregates = append(aggregates, *agg)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("ledger: read provider aggregates: %w", err)
	}
	if !found {
		return 0, nil, ProviderNotFound(rpUUID)
	}
	return generation, aggregates, nil
}

// AggregatesReplaceParams says how ProviderAggregatesReplace treats the
// provider's generation.
type AggregatesReplaceParams struct {
	// Generation, when not nil, must be the provider's current generation,
	// which is then incremented (microversion 1.19 and later). When nil the
	// generation is neither checked nor changed, as before 1.19.
	Generation *int64
}

// ProviderAggregatesReplace makes aggregates (uuids, in any form Placement
// accepts) the exact set of aggregates of the provider with this uuid,
// creating aggregates not seen before. Each is kept as spelled, as
// Placement keeps it: two spellings of one uuid are two aggregates (see
// aggregateSpellings). It returns the provider's generation afterwards. A
// stale generation is fault.ErrConflict (fault.CodeConcurrentUpdate); a malformed
// uuid, or one spelled longer than Placement's column holds, is fault.ErrInvalid.
func (s *Providers) ProviderAggregatesReplace(ctx context.Context, rpUUID string, aggregates []string, params AggregatesReplaceParams) (int64, error) {
	canon, bad := core.AggregateSpellings(aggregates)
	if bad == nil {
		gen, err := s.aggregatesReplaceFast(ctx, rpUUID, canon, params.Generation)
		if !errors.Is(err, errFallBack) {
			return gen, err
		}
	}
	var generation int64
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, rpUUID)
		if err != nil {
			return err
		}
		if bad != nil {
			// After the lookup: a missing provider is reported first.
			return bad
		}
		generation = ref.Generation
		if params.Generation != nil {
			if ref.Generation != *params.Generation {
				return errGenerationConflict()
			}
			if generation, err = bumpGeneration(ctx, t, ref.ID, ref.Generation); err != nil {
				return err
			}
		} else if err := t.QueryRow(ctx, `
			SELECT generation FROM resource_providers WHERE id = $1 FOR UPDATE`, ref.ID).Scan(&generation); err != nil {
			// Lock the provider so that concurrent replacements apply one
			// after the other instead of merging.
			return fmt.Errorf("ledger: lock provider: %w", err)
		}
		// Create the aggregates in the order given, so that reading them
		// back in id order returns that order.
		if _, err := t.Exec(ctx, `
			INSERT INTO placement_aggregates (uuid)
			SELECT u FROM unnest($1::text[]) WITH ORDINALITY AS a(u, i)
			WHERE NOT EXISTS (SELECT 1 FROM placement_aggregates WHERE uuid = u)
			ORDER BY i
			ON CONFLICT (uuid) DO NOTHING`, canon); err != nil {
			return fmt.Errorf("ledger: create aggregates: %w", err)
		}
		if _, err := t.Exec(ctx, `
			DELETE FROM resource_provider_aggregates rpa
			USING placement_aggregates pa
			WHERE pa.id = rpa.aggregate_id AND rpa.resource_provider_id = $1
			  AND pa.uuid <> ALL($2::text[])`, ref.ID, canon); err != nil {
			return fmt.Errorf("ledger: remove provider aggregates: %w", err)
		}
		if _, err := t.Exec(ctx, `
			INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
			SELECT $1, id FROM placement_aggregates WHERE uuid = ANY($2::text[])
			ON CONFLICT DO NOTHING`, ref.ID, canon); err != nil {
			return fmt.Errorf("ledger: add provider aggregates: %w", err)
		}
		t.Touch(ref.ID)
		return nil
	})
	return generation, err
}
