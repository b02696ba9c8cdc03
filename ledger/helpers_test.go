package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// newTestDB returns the URL of a fresh, migrated database for one test.
func newTestDB(t testing.TB) string { return ledgertest.NewDB(t) }

// newTestStore opens a Store over a fresh database; exec runs raw SQL on
// that database, for setting up rows owned by other parts of the ledger.
func newTestStore(t *testing.T) (store *ledger.Store, exec func(sql string, args ...any)) {
	t.Helper()
	f := newFixture(t)
	return f.store, func(sql string, args ...any) {
		t.Helper()
		if _, err := f.db.Exec(f.ctx, sql, args...); err != nil {
			t.Fatalf("exec %q: %v", sql, err)
		}
	}
}

// openStore opens a Store over the database at dbURL with a small pool,
// closed when the test ends. Two stores over one database act as two
// berthd processes.
func openStore(t *testing.T, dbURL string) *ledger.Store {
	t.Helper()
	s, err := ledger.Open(context.Background(), ledger.Config{DatabaseURL: dbURL, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// waitFor polls cond until it holds, failing the test after a bound only a
// broken implementation reaches.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	return newFixtureOn(t, newTestDB(t))
}

// newFixtureOn is newFixture over the database at dbURL.
func newFixtureOn(t *testing.T, dbURL string) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 8, AcquireTimeout: ledgertest.AcquireTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	f := &fixture{t: t, ctx: ctx, store: store, db: db}
	f.known([]string{"proj"}, []string{"user"}, []string{"INSTANCE"})
	return f
}

// known creates projects, users and consumer types, as a cloud holds
// those it has claimed for before. The claim fast path writes claims of
// names that exist (a new name's first claim takes the general path:
// claim_write.go), so a test of the fast path or of batches names them
// here first; newFixtureOn names the tests' usual ones (alloc's and
// newClaim's).
func (f *fixture) known(projects, users, types []string) {
	f.t.Helper()
	for _, n := range []struct {
		table, column string
		names         []string
	}{{"projects", "external_id", projects}, {"users", "external_id", users}, {"consumer_types", "name", types}} {
		if _, err := f.db.Exec(f.ctx, `INSERT INTO `+n.table+` (`+n.column+`) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, n.names); err != nil {
			f.t.Fatal(err)
		}
	}
}

// provider creates a root provider with the given inventories, written
// through the ledger so generations are as the API would make them.
func (f *fixture) provider(name string, invs ...ledger.Inventory) string {
	f.t.Helper()
	p, err := f.store.ProviderCreate(f.ctx, ledger.ProviderCreateParams{Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	id := p.UUID
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
func rejection(t *testing.T, err error, kind error) *fault.Error {
	t.Helper()
	var le *fault.Error
	if !errors.As(err, &le) {
		t.Fatalf("got %v (%T), want a *fault.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("got %v (kind %v), want kind %v", err, le.Kind, kind)
	}
	return le
}

func gen(n int64) *int64 { return &n }

// alloc builds a consumer write against one provider.
func alloc(consumer, rp string, res ...engine.ResourceAmount) ledger.ConsumerAllocations {
	return ledger.ConsumerAllocations{
		ConsumerUUID: consumer, ProjectID: "proj", UserID: "user",
		Allocations: []engine.Allocation{{ProviderUUID: rp, Resources: res}},
	}
}

func res(class string, n int64) engine.ResourceAmount {
	return engine.ResourceAmount{Class: class, Amount: n}
}
