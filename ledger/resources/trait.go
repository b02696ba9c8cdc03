package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// Trait is a qualitative characteristic of a provider: a standard trait
// such as HW_CPU_X86_AVX2 or a custom trait named CUSTOM_*.
type Trait struct {
	ID        int32
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CustomTraitPrefix starts the name of every custom trait; traits without it
// are standard and cannot be deleted.
const CustomTraitPrefix = "CUSTOM_"

const traitSelect = `SELECT t.id, t.name, t.created_at, t.updated_at FROM traits t`

func collectTraits(rows pgx.Rows, err error) ([]Trait, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Trait, error) {
		var tr Trait
		err := row.Scan(&tr.ID, &tr.Name, &tr.CreatedAt, &tr.UpdatedAt)
		return tr, err
	})
}

func traitNotFound(names ...string) error {
	return fault.NotFound("No such trait(s): %s.", strings.Join(names, ", "))
}

// TraitFilter narrows TraitList. Zero values do not filter.
type TraitFilter struct {
	// NameIn keeps only traits with one of these names (when not nil).
	NameIn []string
	// Prefix keeps only traits whose name starts with it.
	Prefix string
	// Associated, when not nil, keeps only traits that some provider has
	// (true) or that no provider has (false).
	Associated *bool
}

// TraitList returns the traits that pass filter, ordered by name.
func (s *Providers) TraitList(ctx context.Context, filter TraitFilter) ([]Trait, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if filter.NameIn != nil {
		where = append(where, "t.name = ANY("+arg(filter.NameIn)+")")
	}
	if filter.Prefix != "" {
		where = append(where, "starts_with(t.name, "+arg(filter.Prefix)+")")
	}
	if filter.Associated != nil {
		cond := "EXISTS (SELECT 1 FROM resource_provider_traits rpt WHERE rpt.trait_id = t.id)"
		if !*filter.Associated {
			cond = "NOT " + cond
		}
		where = append(where, cond)
	}
	sql := traitSelect
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	traits, err := collectTraits(s.core.DB.Query(ctx, sql+" ORDER BY t.name", args...))
	if err != nil {
		return nil, fmt.Errorf("ledger: list traits: %w", err)
	}
	return traits, nil
}

// TraitGet returns the trait with this name, or fault.ErrNotFound.
func (s *Providers) TraitGet(ctx context.Context, name string) (Trait, error) {
	traits, err := collectTraits(s.core.DB.Query(ctx, traitSelect+" WHERE t.name = $1", name))
	if err != nil {
		return Trait{}, fmt.Errorf("ledger: get trait: %w", err)
	}
	if len(traits) == 0 {
		return Trait{}, traitNotFound(name)
	}
	return traits[0], nil
}

// TraitEnsure makes sure a trait of this name exists; created reports
// whether this call created it. The caller validates the name.
func (s *Providers) TraitEnsure(ctx context.Context, name string) (tr Trait, created bool, err error) {
	err = s.core.WithTx(ctx, func(t *core.Txn) error {
		traits, err := collectTraits(t.Query(ctx, `
			INSERT INTO traits (name) SELECT $1
			WHERE NOT EXISTS (SELECT 1 FROM traits WHERE name = $1)
			ON CONFLICT (name) DO NOTHING
			RETURNING id, name, created_at, updated_at`, name))
		if err != nil {
			return fmt.Errorf("ledger: create trait: %w", err)
		}
		if created = len(traits) == 1; created {
			tr = traits[0]
			return nil
		}
		traits, err = collectTraits(t.Query(ctx, traitSelect+" WHERE t.name = $1", name))
		if err != nil {
			return fmt.Errorf("ledger: get trait: %w", err)
		}
		if len(traits) == 0 {
			// Deleted again between our two statements.
			return fault.Conflict(fault.CodeConcurrentUpdate, "Trait %s changed concurrently, please retry.", name)
		}
		tr = traits[0]
		return nil
	})
	return tr, created, err
}

// TraitDelete deletes a custom trait. Standard traits are fault.ErrInvalid; a
// trait that a provider has is fault.ErrConflict.
func (s *Providers) TraitDelete(ctx context.Context, name string) error {
	inUse := func() error {
		return fault.Conflict("", "The trait %s is in use by a resource provider.", name)
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		var id int32
		var used bool
		err := t.QueryRow(ctx, `
			SELECT id, EXISTS (SELECT 1 FROM resource_provider_traits WHERE trait_id = traits.id)
			FROM traits WHERE name = $1 FOR UPDATE`, name).Scan(&id, &used)
		if errors.Is(err, pgx.ErrNoRows) {
			return traitNotFound(name)
		}
		if err != nil {
			return fmt.Errorf("ledger: get trait: %w", err)
		}
		if !strings.HasPrefix(name, CustomTraitPrefix) {
			return fault.Invalid("", "Cannot delete standard trait %s.", name)
		}
		if used {
			return inUse()
		}
		_, err = t.Exec(ctx, `DELETE FROM traits WHERE id = $1`, id)
		if _, ok := core.ForeignKeyViolation(err); ok {
			return inUse()
		}
		if err != nil {
			return fmt.Errorf("ledger: delete trait: %w", err)
		}
		return nil
	})
}

// ProviderTraits returns the traits of the provider with this uuid, ordered
// by name, and the provider's generation. One statement reads both, so they
// come from the same snapshot.
func (s *Providers) ProviderTraits(ctx context.Context, rpUUID string) (generation int64, traits []Trait, err error) {
	canon, ok := core.StoredUUID(rpUUID)
	if !ok {
		return 0, nil, ProviderNotFound(rpUUID)
	}
	rows, err := s.core.DB.Query(ctx, `
		SELECT rp.generation, t.id, t.name, t.created_at, t.updated_at
		FROM resource_providers rp
		LEFT JOIN resource_provider_traits rpt ON rpt.resource_provider_id = rp.id
		LEFT JOIN traits t ON t.id = rpt.trait_id
		WHERE rp.uuid = $1
		ORDER BY t.name`, canon)
	if err != nil {
		return 0, nil, fmt.Errorf("ledger: read provider traits: %w", err)
	}
	defer rows.Close()
	found := false
	traits = []Trait{}
	for rows.Next() {
		found = true
		var id *int32
		var tr Trait
		var name *string
		var created, updated *time.Time
		if err := rows.Scan(&generation, &id, &name, &created, &updated); err != nil {
			return 0, nil, fmt.Errorf("ledger: read provider traits: %w", err)
		}
		if id == nil {
			continue // the provider has no traits
		}
		tr.ID, tr.Name, tr.CreatedAt, tr.UpdatedAt = *id, *name, *created, *updated
		traits = append(traits, tr)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("ledger: read provider traits: %w", err)
	}
	if !found {
		return 0, nil, ProviderNotFound(rpUUID)
	}
	return generation, traits, nil
}

// errGenerationConflict is Placement's answer to a stale provider generation.
func errGenerationConflict() error {
	return fault.Conflict(fault.CodeConcurrentUpdate,
		"Resource provider's generation already changed. Please update the generation and try again.")
}

// lockGeneration locks the row of provider id until the transaction ends,
// if its generation still is generation; a stale generation is fault.ErrConflict
// (fault.CodeConcurrentUpdate). Writes that bump the generation only when they
// change something take the lock first, as bumpGeneration would.
func lockGeneration(ctx context.Context, t *core.Txn, id, generation int64) error {
	var current int64
	err := t.QueryRow(ctx, `SELECT generation FROM resource_providers WHERE id = $1 FOR UPDATE`, id).Scan(&current)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && current != generation) {
		return errGenerationConflict()
	}
	if err != nil {
		return fmt.Errorf("ledger: lock provider: %w", err)
	}
	return nil
}

// bumpGeneration increments the generation of provider id if it still is
// generation, and returns the new one. A stale generation is fault.ErrConflict
// (fault.CodeConcurrentUpdate). The update locks the provider row until the
// transaction ends, so concurrent writers of the same provider queue up
// and all but one of them see a stale generation.
func bumpGeneration(ctx context.Context, t *core.Txn, id, generation int64) (int64, error) {
	var next int64
	err := t.QueryRow(ctx, `
		UPDATE resource_providers SET generation = generation + 1, updated_at = now()
		WHERE id = $1 AND generation = $2
		RETURNING generation`, id, generation).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errGenerationConflict()
	}
	if err != nil {
		return 0, fmt.Errorf("ledger: bump provider generation: %w", err)
	}
	return next, nil
}

// ProviderTraitsReplace makes names the exact set of traits of the provider
// with this uuid, if its generation still is generation, and increments
// the generation if the set changed (as Placement does: writing the same
// set again leaves the generation as it is). It returns the generation
// and the traits, ordered by name. Names that are not traits are
// fault.ErrInvalid.
func (s *Providers) ProviderTraitsReplace(ctx context.Context, rpUUID string, generation int64, names []string) (int64, []Trait, error) {
	if next, traits, err := s.traitsReplaceFast(ctx, rpUUID, generation, names); !errors.Is(err, errFallBack) {
		return next, traits, err
	}
	var next int64
	var traits []Trait
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, rpUUID)
		if err != nil {
			return err
		}
		// Lock the provider row first, so that concurrent writers queue
		// up here and all but the first see a stale generation, whether
		// or not their trait set changes anything.
		if err := lockGeneration(ctx, t, ref.ID, generation); err != nil {
			return err
		}
		traits, err = collectTraits(t.Query(ctx, traitSelect+` WHERE t.name = ANY($1) ORDER BY t.name`, names))
		if err != nil {
			return fmt.Errorf("ledger: look up traits: %w", err)
		}
		if missing := missingTraits(names, traits); len(missing) > 0 {
			return fault.Invalid("", "No such trait %s", strings.Join(missing, ", "))
		}
		ids := make([]int32, len(traits))
		for i, tr := range traits {
			ids[i] = tr.ID
		}
		changed, err := setProviderTraits(ctx, t, ref.ID, ids)
		if err != nil || !changed {
			next = generation
			return err
		}
		next, err = bumpGeneration(ctx, t, ref.ID, generation)
		return err
	})
	return next, traits, err
}

// missingTraits returns, sorted and without duplicates, the names that are
// not among found.
func missingTraits(names []string, found []Trait) []string {
	var missing []string
	for _, n := range names {
		if !slices.ContainsFunc(found, func(tr Trait) bool { return tr.Name == n }) && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	return missing
}

// ProviderTraitsDelete removes every trait from the provider with this uuid
// and, if it had any, increments its generation.
func (s *Providers) ProviderTraitsDelete(ctx context.Context, rpUUID string) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, rpUUID)
		if err != nil {
			return err
		}
		if err := lockGeneration(ctx, t, ref.ID, ref.Generation); err != nil {
			return err
		}
		changed, err := setProviderTraits(ctx, t, ref.ID, nil)
		if err != nil || !changed {
			return err
		}
		_, err = bumpGeneration(ctx, t, ref.ID, ref.Generation)
		return err
	})
}

// setProviderTraits makes traitIDs the exact trait set of provider id and
// reports whether the set changed.
func setProviderTraits(ctx context.Context, t *core.Txn, id int64, traitIDs []int32) (bool, error) {
	if traitIDs == nil {
		traitIDs = []int32{}
	}
	removed, err := t.Exec(ctx, `
		DELETE FROM resource_provider_traits
		WHERE resource_provider_id = $1 AND trait_id <> ALL($2)`, id, traitIDs)
	if err != nil {
		return false, fmt.Errorf("ledger: remove provider traits: %w", err)
	}
	added, err := t.Exec(ctx, `
		INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
		SELECT $1, unnest($2::int[])
		ON CONFLICT DO NOTHING`, id, traitIDs)
	if _, ok := core.ForeignKeyViolation(err); ok {
		// A trait was deleted after we read it.
		return false, fault.Conflict(fault.CodeConcurrentUpdate, "A trait changed concurrently, please retry.")
	}
	if err != nil {
		return false, fmt.Errorf("ledger: add provider traits: %w", err)
	}
	if removed.RowsAffected() == 0 && added.RowsAffected() == 0 {
		return false, nil
	}
	t.Touch(id)
	return true, nil
}
