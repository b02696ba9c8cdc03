package scheduling

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"
)

// PlacementKey is an affinity placement key: a named value a provider
// carries (or a consumer keeps from a sticky provider key).
type PlacementKey struct {
	Name  string
	Value float64
	// Sticky keys of a provider are copied to the consumers placed on it.
	Sticky bool
}

// ReservedKeyPrefix starts the names of reserved placement keys, which
// only administrators may set (the API enforces it; see
// PlacementKeysReplaceParams).
const ReservedKeyPrefix = "_"

// ReservedKeyError is a placement key write that would add, change or
// remove a reserved key without leave to.
type ReservedKeyError struct{ Name string }

func (e *ReservedKeyError) Error() string {
	return fmt.Sprintf("Placement key %s is reserved: only an administrator may set or remove it.", e.Name)
}

// PlacementKeys returns a provider's keys, by name. An unknown provider is
// fault.ErrNotFound.
func (s *Cloud) PlacementKeys(ctx context.Context, providerUUID string) ([]PlacementKey, error) {
	ref, err := resources.LookupProvider(ctx, s.core.DB, providerUUID)
	if err != nil {
		return nil, err
	}
	return providerKeys(ctx, s.core.DB, ref.ID)
}

func providerKeys(ctx context.Context, q core.Querier, id int64) ([]PlacementKey, error) {
	rows, err := q.Query(ctx, `SELECT name, value, sticky FROM provider_placement_keys
		WHERE resource_provider_id = $1 ORDER BY name`, id)
	if err != nil {
		return nil, err
	}
	return scanKeys(rows)
}

func scanKeys(rows pgx.Rows) ([]PlacementKey, error) {
	out := []PlacementKey{}
	var k PlacementKey
	_, err := pgx.ForEachRow(rows, []any{&k.Name, &k.Value, &k.Sticky}, func() error {
		out = append(out, k)
		return nil
	})
	return out, err
}

// PlacementKeysReplaceParams qualifies PlacementKeysReplace.
type PlacementKeysReplaceParams struct {
	// Reserved allows adding, changing and removing reserved keys (names
	// starting with ReservedKeyPrefix). Without it, the reserved keys in
	// the new list must be exactly those the provider has.
	Reserved bool
}

// PlacementKeysReplace replaces a provider's keys with keys, in one
// transaction. An unknown provider is fault.ErrNotFound; an empty or duplicate
// name or a value that is not finite is fault.ErrInvalid; touching a reserved
// key without p.Reserved is a *ReservedKeyError (nothing changes).
func (s *Cloud) PlacementKeysReplace(ctx context.Context, providerUUID string, keys []PlacementKey, p PlacementKeysReplaceParams) error {
	seen := map[string]bool{}
	for _, k := range keys {
		if k.Name == "" {
			return fault.Invalid("", "A placement key needs a name.")
		}
		if seen[k.Name] {
			return fault.Invalid("", "Placement key %s is given twice.", k.Name)
		}
		seen[k.Name] = true
		if math.IsNaN(k.Value) || math.IsInf(k.Value, 0) {
			return fault.Invalid("", "Placement key %s: value must be a finite number.", k.Name)
		}
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := resources.LookupProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		// Lock the provider so concurrent replacements of its keys
		// apply one after the other.
		if _, err := t.Exec(ctx, `SELECT 1 FROM resource_providers WHERE id = $1 FOR NO KEY UPDATE`, ref.ID); err != nil {
			return err
		}
		if !p.Reserved {
			old, err := providerKeys(ctx, t, ref.ID)
			if err != nil {
				return err
			}
			if name, ok := reservedChange(old, keys); !ok {
				return &ReservedKeyError{Name: name}
			}
		}
		if _, err := t.Exec(ctx, `DELETE FROM provider_placement_keys WHERE resource_provider_id = $1`, ref.ID); err != nil {
			return err
		}
		names := make([]string, len(keys))
		values := make([]float64, len(keys))
		sticky := make([]bool, len(keys))
		for i, k := range keys {
			names[i], values[i], sticky[i] = k.Name, k.Value, k.Sticky
		}
		_, err = t.Exec(ctx, `INSERT INTO provider_placement_keys (resource_provider_id, name, value, sticky)
			SELECT $1, * FROM unnest($2::text[], $3::float8[], $4::bool[])`, ref.ID, names, values, sticky)
		return err
	})
}

// reservedChange reports the first reserved key that differs between old
// and new (ok false), or ok true when they carry the same reserved keys.
func reservedChange(old, new []PlacementKey) (name string, ok bool) {
	reserved := func(ks []PlacementKey) []PlacementKey {
		var out []PlacementKey
		for _, k := range ks {
			if strings.HasPrefix(k.Name, ReservedKeyPrefix) {
				out = append(out, k)
			}
		}
		slices.SortFunc(out, func(a, b PlacementKey) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	o, n := reserved(old), reserved(new)
	for i := 0; i < max(len(o), len(n)); i++ {
		switch {
		case i >= len(o):
			return n[i].Name, false
		case i >= len(n):
			return o[i].Name, false
		case o[i] != n[i]:
			return min(o[i].Name, n[i].Name), false
		}
	}
	return "", true
}

// PlacementKeysOf returns the keys of each of the providers named (uuids)
// that has any, in one query. Unknown and malformed uuids are skipped.
func (s *Cloud) PlacementKeysOf(ctx context.Context, providerUUIDs []string) (map[string][]PlacementKey, error) {
	rows, err := s.core.DB.Query(ctx, `
		SELECT rp.uuid::text, k.name, k.value, k.sticky
		FROM provider_placement_keys k JOIN resource_providers rp ON rp.id = k.resource_provider_id
		WHERE rp.uuid = ANY($1::text[]::uuid[]) ORDER BY rp.uuid, k.name`, validUUIDs(providerUUIDs))
	if err != nil {
		return nil, err
	}
	out := map[string][]PlacementKey{}
	var u string
	var k PlacementKey
	_, err = pgx.ForEachRow(rows, []any{&u, &k.Name, &k.Value, &k.Sticky}, func() error {
		out[u] = append(out[u], k)
		return nil
	})
	return out, err
}

// ConsumerKeys returns the keys a consumer kept from the sticky keys of
// providers it was placed on, by name; none for an unknown consumer.
func (s *Cloud) ConsumerKeys(ctx context.Context, consumerUUID string) ([]PlacementKey, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return []PlacementKey{}, nil
	}
	rows, err := s.core.DB.Query(ctx, `
		SELECT k.name, k.value, true FROM consumer_placement_keys k JOIN consumers c ON c.id = k.consumer_id
		WHERE c.uuid = $1 ORDER BY k.name`, id)
	if err != nil {
		return nil, err
	}
	return scanKeys(rows)
}
