package scheduling

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/resources"
)

// Evacuated root providers: claims avoid them (the snapshot carries the
// mark, engine.ProviderRecord.Evacuated) until they are restored.
// Moving the consumers off an evacuated provider is the claims
// package's (claims.Claimer.Evacuate).

// ProviderEvacuation is the evacuation mark of a root provider.
type ProviderEvacuation struct {
	ProviderUUID string
	Name         string
	// Evacuated is false when the provider is not evacuated; At is when
	// it was marked.
	Evacuated bool
	At        time.Time
}

// sqlProviderEvacuation reads a provider's root, name and mark.
const sqlProviderEvacuation = `
	SELECT rp.id, rp.uuid::text, rp.name, rp.parent_provider_id IS NULL, ev.evacuated_at
	FROM resource_providers rp LEFT JOIN provider_evacuations ev ON ev.resource_provider_id = rp.id
	WHERE rp.uuid = $1`

// evacuationOf reads the mark of provider uuid: fault.ErrNotFound for an
// unknown provider, fault.ErrInvalid (CodeNotRootProvider) for one that
// is not a root.
func evacuationOf(ctx context.Context, q core.Querier, uuid string) (int64, ProviderEvacuation, error) {
	var ev ProviderEvacuation
	canon, ok := core.StoredUUID(uuid)
	if !ok {
		return 0, ev, resources.ProviderNotFound(uuid)
	}
	var id int64
	var root bool
	var at *time.Time
	err := q.QueryRow(ctx, sqlProviderEvacuation, canon).Scan(&id, &ev.ProviderUUID, &ev.Name, &root, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ev, resources.ProviderNotFound(uuid)
	}
	if err != nil {
		return 0, ev, err
	}
	if !root {
		return 0, ev, fault.Invalid(fault.CodeNotRootProvider,
			"Resource provider %s is not a root provider: only a whole tree (a host) is evacuated; evacuate its root.", uuid)
	}
	if at != nil {
		ev.Evacuated, ev.At = true, at.UTC()
	}
	return id, ev, nil
}

// ProviderEvacuationGet returns the evacuation mark of root provider
// uuid (Evacuated false when it has none): fault.ErrNotFound for an
// unknown provider, fault.ErrInvalid for one that is not a root.
func (s *Cloud) ProviderEvacuationGet(ctx context.Context, uuid string) (ProviderEvacuation, error) {
	_, ev, err := evacuationOf(ctx, s.core.DB, uuid)
	return ev, err
}

// ProviderEvacuate marks root provider uuid evacuated, so that claims
// avoid it, and returns the mark. It is idempotent: an evacuated
// provider keeps the time it was first marked. It changes neither the
// provider nor its generation. fault.ErrNotFound for an unknown
// provider; fault.ErrInvalid (CodeNotRootProvider) for one that is not a
// root.
func (s *Cloud) ProviderEvacuate(ctx context.Context, uuid string) (ProviderEvacuation, error) {
	var ev ProviderEvacuation
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		id, cur, err := evacuationOf(ctx, t, uuid)
		if err != nil {
			return err
		}
		ev = cur
		if cur.Evacuated {
			return nil
		}
		if err := t.QueryRow(ctx, `INSERT INTO provider_evacuations (resource_provider_id) VALUES ($1) RETURNING evacuated_at`,
			id).Scan(&ev.At); err != nil {
			if _, ok := core.ForeignKeyViolation(err); ok {
				return resources.ProviderNotFound(uuid)
			}
			return err
		}
		ev.Evacuated, ev.At = true, ev.At.UTC()
		t.Touch(id)
		return nil
	})
	return ev, err
}

// ProviderRestore clears the evacuation mark of root provider uuid, so
// that claims may place on it again. fault.ErrNotFound for an unknown
// provider; fault.ErrInvalid for one that is not a root;
// fault.ErrConflict (CodeNotEvacuated) for one that is not evacuated.
func (s *Cloud) ProviderRestore(ctx context.Context, uuid string) (ProviderEvacuation, error) {
	var ev ProviderEvacuation
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		id, cur, err := evacuationOf(ctx, t, uuid)
		if err != nil {
			return err
		}
		if !cur.Evacuated {
			return fault.Conflict(fault.CodeNotEvacuated, "Resource provider %s is not evacuated; there is nothing to restore.", uuid)
		}
		if _, err := t.Exec(ctx, `DELETE FROM provider_evacuations WHERE resource_provider_id = $1`, id); err != nil {
			return err
		}
		ev = ProviderEvacuation{ProviderUUID: cur.ProviderUUID, Name: cur.Name}
		t.Touch(id)
		return nil
	})
	return ev, err
}
