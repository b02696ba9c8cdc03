package resources_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/migrations"
)

// TestAggregateSpellingMigration: migration 6 keeps the aggregates there
// are; its down migration merges the spellings of one uuid into the
// aggregate created first, the providers of the others joining it, and
// up again works.
func TestAggregateSpellingMigration(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	ctx := context.Background()
	const lower = "5f100000-0000-4000-8000-0000000000a1"
	upper, dashless := strings.ToUpper(lower), strings.ReplaceAll(lower, "-", "")
	other := "5f100000-0000-4000-8000-0000000000b2"
	rp1, rp2, rp3 := f.Provider("rp1"), f.Provider("rp2"), f.Provider("rp3")
	for _, set := range []struct {
		rp   string
		aggs []string
	}{{rp1, []string{lower, other}}, {rp2, []string{upper}}, {rp3, []string{dashless, lower}}} {
		if _, err := f.Store.Providers.ProviderAggregatesReplace(ctx, set.rp, set.aggs, resources.AggregatesReplaceParams{}); err != nil {
			t.Fatal(err)
		}
	}

	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, "pgx5"+strings.TrimPrefix(dbURL, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Migrate(5); err != nil {
		t.Fatalf("down to 5: %v", err)
	}
	var n int
	if err := f.DB.QueryRow(ctx, `SELECT count(*) FROM placement_aggregates`).Scan(&n); err != nil || n != 2 {
		t.Errorf("aggregates after down: %d, %v; want 2", n, err)
	}
	members := func(agg string) []string {
		t.Helper()
		rows, err := f.DB.Query(ctx, `
			SELECT rp.uuid::text FROM resource_providers rp
			JOIN resource_provider_aggregates rpa ON rpa.resource_provider_id = rp.id
			JOIN placement_aggregates pa ON pa.id = rpa.aggregate_id
			WHERE pa.uuid::text = $1 ORDER BY rp.id`, agg)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				t.Fatal(err)
			}
			out = append(out, u)
		}
		return out
	}
	if got := members(lower); !slices.Equal(got, []string{rp1, rp2, rp3}) {
		t.Errorf("members of %s after down: %v, want rp1..rp3 %v", lower, got, []string{rp1, rp2, rp3})
	}
	if got := members(other); !slices.Equal(got, []string{rp1}) {
		t.Errorf("members of %s after down: %v", other, got)
	}

	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		t.Fatalf("up again: %v", err)
	}
	if _, err := f.Store.Providers.ProviderAggregatesReplace(ctx, rp2, []string{upper}, resources.AggregatesReplaceParams{}); err != nil {
		t.Fatal(err)
	}
	if got := members(upper); !slices.Equal(got, []string{rp2}) {
		t.Errorf("members of %s after up: %v", upper, got)
	}
}
