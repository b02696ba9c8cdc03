package scheduling_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

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

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, newTestDB(t))
}

func inv(class string, total int64) engine.Inventory {
	return resources.DefaultInventory(class, total)
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
func alloc(consumer, rp string, res ...engine.ResourceAmount) resources.ConsumerAllocations {
	return resources.ConsumerAllocations{
		ConsumerUUID: consumer, ProjectID: "proj", UserID: "user",
		Allocations: []engine.Allocation{{ProviderUUID: rp, Resources: res}},
	}
}

func res(class string, n int64) engine.ResourceAmount {
	return engine.ResourceAmount{Class: class, Amount: n}
}

const (
	uuidA = "aaaaaaaa-0000-4000-8000-000000000001"
	uuidB = "bbbbbbbb-0000-4000-8000-000000000002"
	uuidC = "cccccccc-0000-4000-8000-000000000003"
	uuidD = "dddddddd-0000-4000-8000-000000000004"
)

// newTestDB returns the URL of a fresh, migrated database for one test.
func newTestDB(t testing.TB) string { return ledgertest.NewDB(t) }

// fixture is a store over a fresh database plus a direct connection for
// setting up providers and inspecting state.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	store *ledger.Store
	db    *pgx.Conn
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

// provider creates a root provider with the given inventories, written
// through the ledger so generations are as the API would make them.
func (f *fixture) provider(name string, invs ...engine.Inventory) string {
	f.t.Helper()
	p, err := f.store.Providers.ProviderCreate(f.ctx, resources.ProviderCreateParams{Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	id := p.UUID
	if len(invs) > 0 {
		gen := int64(0)
		if _, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: id, Generation: &gen}, invs); err != nil {
			f.t.Fatal(err)
		}
	}
	return id
}
