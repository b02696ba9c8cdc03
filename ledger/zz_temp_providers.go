package ledger

// TEMPORARY (allocations branch only): a minimal provider create and get so
// that the conformance fixtures can seed providers before the providers
// branch lands. Delete this file at merge in favour of the real provider
// code.

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TempProviderCreate creates a provider. TEMPORARY, see the file comment.
func (s *Store) TempProviderCreate(ctx context.Context, id, name, parentUUID string) (Provider, error) {
	if id == "" {
		id = uuid.NewString()
	}
	err := s.withTx(ctx, func(t *txn) error {
		var parent *int64
		root := int64(0)
		if parentUUID != "" {
			ref, err := findProvider(ctx, t, parentUUID)
			if err != nil {
				return invalid("", "parent provider %s not found", parentUUID)
			}
			if err := t.QueryRow(ctx, `SELECT root_provider_id FROM resource_providers WHERE id = $1`, ref.ID).Scan(&root); err != nil {
				return err
			}
			parent = &ref.ID
		}
		var newID int64
		err := t.QueryRow(ctx, `
			INSERT INTO resource_providers (uuid, name, root_provider_id, parent_provider_id)
			VALUES ($1, $2, CASE WHEN $3::bigint = 0 THEN currval('resource_providers_id_seq') ELSE $3::bigint END, $4)
			RETURNING id`, id, name, root, parent).Scan(&newID)
		if _, ok := uniqueViolation(err); ok {
			return conflict(CodeDuplicateName, "Conflicting resource provider name: %s already exists.", name)
		}
		if err != nil {
			return err
		}
		t.touch(newID)
		return nil
	})
	if err != nil {
		return Provider{}, err
	}
	return s.TempProviderGet(ctx, id)
}

// TempProviderGet reads a provider. TEMPORARY, see the file comment.
func (s *Store) TempProviderGet(ctx context.Context, id string) (Provider, error) {
	cid, ok := canonicalUUID(id)
	if !ok {
		return Provider{}, notFound("No resource provider with uuid %s found", id)
	}
	var p Provider
	err := s.pool.QueryRow(ctx, `
		SELECT rp.id, rp.uuid::text, rp.name, rp.generation, COALESCE(pp.uuid::text, ''), r.uuid::text,
		       rp.created_at, rp.updated_at
		FROM resource_providers rp
		JOIN resource_providers r ON r.id = rp.root_provider_id
		LEFT JOIN resource_providers pp ON pp.id = rp.parent_provider_id
		WHERE rp.uuid = $1`, cid).Scan(&p.ID, &p.UUID, &p.Name, &p.Generation, &p.ParentUUID, &p.RootUUID,
		&p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, notFound("No resource provider with uuid %s found", id)
	}
	return p, err
}
