package resources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// ResourceClass is a kind of resource: a standard class such as VCPU or a
// custom class named CUSTOM_*.
type ResourceClass struct {
	ID        int32
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Standard reports whether the class is one of the standard classes, which
// cannot be renamed or deleted.
func (rc ResourceClass) Standard() bool { return rc.ID < CustomClassMinID }

const resourceClassSelect = `SELECT id, name, created_at, updated_at FROM resource_classes`

func scanResourceClass(row pgx.Row) (ResourceClass, error) {
	var rc ResourceClass
	err := row.Scan(&rc.ID, &rc.Name, &rc.CreatedAt, &rc.UpdatedAt)
	return rc, err
}

// ResourceClassList returns every resource class, standard ones first, in
// id order.
func (s *Providers) ResourceClassList(ctx context.Context) ([]ResourceClass, error) {
	rows, err := s.core.DB.Query(ctx, resourceClassSelect+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("ledger: list resource classes: %w", err)
	}
	defer rows.Close()
	var out []ResourceClass
	for rows.Next() {
		rc, err := scanResourceClass(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: list resource classes: %w", err)
		}
		out = append(out, rc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: list resource classes: %w", err)
	}
	return out, nil
}

// ResourceClassGet returns the resource class with this name, or fault.ErrNotFound.
func (s *Providers) ResourceClassGet(ctx context.Context, name string) (ResourceClass, error) {
	return resourceClassGet(ctx, s.core.DB, name, false)
}

func resourceClassGet(ctx context.Context, q core.Querier, name string, forUpdate bool) (ResourceClass, error) {
	sql := resourceClassSelect + ` WHERE name = $1`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	rc, err := scanResourceClass(q.QueryRow(ctx, sql, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return rc, resourceClassNotFound(name)
	}
	if err != nil {
		return rc, fmt.Errorf("ledger: get resource class: %w", err)
	}
	return rc, nil
}

// ResourceClassCreate creates a custom resource class, whose id comes from
// resource_classes_custom_id_seq (10000 and up). An existing class of that
// name is fault.ErrConflict. The caller validates the name (CUSTOM_ prefix).
func (s *Providers) ResourceClassCreate(ctx context.Context, name string) (ResourceClass, error) {
	var rc ResourceClass
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		var err error
		rc, err = scanResourceClass(t.QueryRow(ctx, `
			INSERT INTO resource_classes (id, name)
			VALUES (nextval('resource_classes_custom_id_seq'), $1)
			RETURNING id, name, created_at, updated_at`, name))
		if _, ok := core.UniqueViolation(err); ok {
			return fault.Conflict("", "Conflicting resource class already exists: %s", name)
		}
		if err != nil {
			return fmt.Errorf("ledger: create resource class: %w", err)
		}
		return nil
	})
	return rc, err
}

// ResourceClassEnsure makes sure a custom resource class of this name
// exists; created reports whether this call created it.
func (s *Providers) ResourceClassEnsure(ctx context.Context, name string) (rc ResourceClass, created bool, err error) {
	err = s.core.WithTx(ctx, func(t *core.Txn) error {
		var err error
		rc, err = scanResourceClass(t.QueryRow(ctx, `
			INSERT INTO resource_classes (id, name)
			SELECT nextval('resource_classes_custom_id_seq'), $1
			WHERE NOT EXISTS (SELECT 1 FROM resource_classes WHERE name = $1)
			ON CONFLICT (name) DO NOTHING
			RETURNING id, name, created_at, updated_at`, name))
		if err == nil {
			created = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("ledger: ensure resource class: %w", err)
		}
		created = false
		rc, err = resourceClassGet(ctx, t, name, false)
		return err
	})
	return rc, created, err
}

// ResourceClassRename renames a custom resource class (microversions 1.2
// to 1.6). Standard classes are fault.ErrInvalid; a class that already has the
// new name is fault.ErrConflict. Inventories and allocations follow the class,
// since they refer to it by id.
func (s *Providers) ResourceClassRename(ctx context.Context, name, newName string) (ResourceClass, error) {
	var rc ResourceClass
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		old, err := resourceClassGet(ctx, t, name, true)
		if err != nil {
			return err
		}
		if old.Standard() {
			return fault.Invalid("", "Cannot update standard resource class %s", name)
		}
		rc, err = scanResourceClass(t.QueryRow(ctx, `
			UPDATE resource_classes SET name = $2, updated_at = now() WHERE id = $1
			RETURNING id, name, created_at, updated_at`, old.ID, newName))
		if _, ok := core.UniqueViolation(err); ok {
			return fault.Conflict("", "Resource class already exists: %s", newName)
		}
		if err != nil {
			return fmt.Errorf("ledger: rename resource class: %w", err)
		}
		// Providers' inventories now read under another class name.
		t.TouchAll()
		return nil
	})
	return rc, err
}

// ResourceClassDelete deletes a custom resource class. Standard classes are
// fault.ErrInvalid; a class still used by an inventory (or an allocation) is
// fault.ErrConflict.
func (s *Providers) ResourceClassDelete(ctx context.Context, name string) error {
	inUse := func() error {
		return fault.Conflict("", "Error in delete resource class: Cannot delete resource class %s. Class is in use in inventory.", name)
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		rc, err := resourceClassGet(ctx, t, name, true)
		if err != nil {
			return err
		}
		if rc.Standard() {
			return fault.Invalid("", "Error in delete resource class: Cannot delete standard resource class %s.", name)
		}
		var used bool
		if err := t.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM inventories WHERE resource_class_id = $1)
			    OR EXISTS (SELECT 1 FROM allocations WHERE resource_class_id = $1)`, rc.ID).Scan(&used); err != nil {
			return fmt.Errorf("ledger: check resource class use: %w", err)
		}
		if used {
			return inUse()
		}
		// An inventory written since the check makes this fail on its
		// foreign key. Allocations have none to resource_classes
		// (migrations/0020): each has an inventory of its class on its
		// provider for as long as it exists (lockProvider), so that key
		// covers them too.
		_, err = t.Exec(ctx, `DELETE FROM resource_classes WHERE id = $1`, rc.ID)
		if _, ok := core.ForeignKeyViolation(err); ok {
			return inUse()
		}
		if err != nil {
			return fmt.Errorf("ledger: delete resource class: %w", err)
		}
		return nil
	})
}

// lookupClass finds a resource class id by name; ok is false when there is
// no such class.
func lookupClass(ctx context.Context, q core.Querier, name string) (id int32, ok bool, err error) {
	err = q.QueryRow(ctx, `SELECT id FROM resource_classes WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}
