package ledger_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger"
)

// TODO: switch to ledgertest.NewDB once it lands on main.

// newDB creates a fresh, migrated database for one test on the server at
// BERTH_TEST_DATABASE_URL and drops it when the test ends.
func newDB(t *testing.T) string {
	t.Helper()
	base := os.Getenv("BERTH_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Skipf("no PostgreSQL at %s: %v", base, err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "berth_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	if err := ledger.Migrate(ctx, u.String()); err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// fixture is a store over a fresh database plus a direct connection for
// setting up providers and inspecting state.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	store *ledger.Store
	db    *pgx.Conn
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dbURL := newDB(t)
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	return &fixture{t: t, ctx: ctx, store: store, db: db}
}

// provider creates a root provider with the given inventories, written
// through the ledger so generations are as the API would make them.
func (f *fixture) provider(name string, invs ...ledger.Inventory) string {
	f.t.Helper()
	id := uuid.NewString()
	if _, err := f.db.Exec(f.ctx, `
		INSERT INTO resource_providers (uuid, name, root_provider_id)
		VALUES ($1, $2, currval('resource_providers_id_seq'))`, id, name); err != nil {
		f.t.Fatal(err)
	}
	if len(invs) > 0 {
		gen := int64(0)
		if _, err := f.store.InventoriesReplace(f.ctx, ledger.InventoryParams{ProviderUUID: id, Generation: &gen}, invs); err != nil {
			f.t.Fatal(err)
		}
	}
	return id
}

func inv(class string, total int64) ledger.Inventory { return ledger.DefaultInventory(class, total) }

// dump renders everything a write could change, for before/after
// comparisons.
func (f *fixture) dump() string {
	f.t.Helper()
	queries := []string{
		`SELECT uuid::text, generation FROM resource_providers`,
		`SELECT rp.uuid::text, rc.name, total, reserved, min_unit, max_unit, step_size, allocation_ratio, i.updated_at
		 FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id
		 JOIN resource_classes rc ON rc.id = i.resource_class_id`,
		`SELECT c.uuid::text, c.generation, p.external_id, u.external_id, COALESCE(ct.name, '-'), c.updated_at
		 FROM consumers c JOIN projects p ON p.id = c.project_id JOIN users u ON u.id = c.user_id
		 LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id`,
		`SELECT c.uuid::text, rp.uuid::text, rc.name, a.used, a.id
		 FROM allocations a JOIN consumers c ON c.id = a.consumer_id
		 JOIN resource_providers rp ON rp.id = a.resource_provider_id
		 JOIN resource_classes rc ON rc.id = a.resource_class_id`,
		`SELECT external_id FROM projects`,
		`SELECT external_id FROM users`,
		`SELECT name FROM consumer_types`,
		`SELECT id, name FROM resource_classes WHERE id >= 10000`,
	}
	var out []string
	for _, q := range queries {
		rows, err := f.db.Query(f.ctx, q)
		if err != nil {
			f.t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				f.t.Fatal(err)
			}
			lines = append(lines, fmt.Sprint(vals...))
		}
		if err := rows.Err(); err != nil {
			f.t.Fatal(err)
		}
		sort.Strings(lines)
		out = append(out, strings.Join(lines, "\n"))
	}
	return strings.Join(out, "\n--\n")
}

// usages returns a provider's usages.
func (f *fixture) usages(rp string) ledger.ProviderUsages {
	f.t.Helper()
	u, err := f.store.ProviderUsagesGet(f.ctx, rp)
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// rejection asserts err is a ledger rejection of kind and returns it.
func rejection(t *testing.T, err error, kind error) *ledger.Error {
	t.Helper()
	var le *ledger.Error
	if !errors.As(err, &le) {
		t.Fatalf("got %v (%T), want a *ledger.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("got %v (kind %v), want kind %v", err, le.Kind, kind)
	}
	return le
}

func gen(n int64) *int64 { return &n }

// alloc builds a consumer write against one provider.
func alloc(consumer, rp string, res ...ledger.Resource) ledger.ConsumerAllocations {
	return ledger.ConsumerAllocations{
		ConsumerUUID: consumer, ProjectID: "proj", UserID: "user",
		Allocations: []ledger.ProviderResources{{ProviderUUID: rp, Resources: res}},
	}
}

func res(class string, n int64) ledger.Resource { return ledger.Resource{Class: class, Amount: n} }
