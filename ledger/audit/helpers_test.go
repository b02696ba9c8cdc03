package audit_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// used is what summary s says is used of class.
func used(s engine.ProviderSummary, class string) int64 {
	for _, r := range s.Resources {
		if r.ResourceClass == class {
			return r.Used
		}
	}
	return -1
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

func inv(class string, total int64) engine.Inventory {
	return resources.DefaultInventory(class, total)
}

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
func (f *fixture) usages(rp string) resources.ProviderUsages {
	f.t.Helper()
	u, err := f.store.Providers.ProviderUsagesGet(f.ctx, rp)
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

// alloc builds a consumer write against one provider.
func alloc(consumer, rp string, res ...engine.ResourceAmount) resources.ConsumerAllocations {
	return resources.ConsumerAllocations{
		ConsumerUUID: consumer, ProjectID: "proj", UserID: "user",
		Allocations: []engine.Allocation{{ProviderUUID: rp, Resources: res}},
	}
}

func res(class string, n int64) engine.ResourceAmount {
	return engine.ResourceAmount{Class: class, Amount: n}
}

func mustCreate(t *testing.T, s *ledger.Store, name, uuid, parent string) engine.Provider {
	t.Helper()
	p, err := s.Providers.ProviderCreate(context.Background(), resources.ProviderCreateParams{UUID: uuid, Name: name, ParentUUID: parent})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return p
}

// newTestDB returns the URL of a fresh, migrated database for one test.
func newTestDB(t testing.TB) string { return ledgertest.NewDB(t) }

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
// ledger/resources/claim_write.go), so a test of the fast path or of
// batches names them here first; newFixtureOn names the tests' usual ones
// (alloc's and newClaim's).
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
