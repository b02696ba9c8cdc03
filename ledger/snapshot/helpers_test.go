package snapshot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// newTestDB returns the URL of a fresh, migrated database for one test.
func newTestDB(t testing.TB) string { return ledgertest.NewDB(t) }

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

func inv(class string, total int64) engine.Inventory {
	return resources.DefaultInventory(class, total)
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

func mustCreate(t *testing.T, s *ledger.Store, name, uuid, parent string) engine.Provider {
	t.Helper()
	p, err := s.Providers.ProviderCreate(context.Background(), resources.ProviderCreateParams{UUID: uuid, Name: name, ParentUUID: parent})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return p
}

const (
	uuidA = "aaaaaaaa-0000-4000-8000-000000000001"
	uuidB = "bbbbbbbb-0000-4000-8000-000000000002"
	uuidC = "cccccccc-0000-4000-8000-000000000003"
	uuidD = "dddddddd-0000-4000-8000-000000000004"
)

// newClaim is a write the claim fast path takes: a new consumer
// (consumer_generation null) with a type.
func newClaim(consumer, rp string, res ...engine.ResourceAmount) resources.ConsumerAllocations {
	w := alloc(consumer, rp, res...)
	w.CheckGeneration, w.ConsumerType = true, "INSTANCE"
	return w
}

// used is what summary s says is used of class.
func used(s engine.ProviderSummary, class string) int64 {
	for _, r := range s.Resources {
		if r.ResourceClass == class {
			return r.Used
		}
	}
	return -1
}

// summary is a finding in one line: kind, subject, amounts, fix.
func summary(f audit.AuditFinding, names map[string]string) string {
	subject := ""
	if f.Consumer != nil {
		subject = f.Consumer.UUID[:2]
	} else {
		subject = names[f.Provider.UUID]
		for i, r := range f.Provider.Resources {
			subject += fmt.Sprintf(" %s=%d/%g", r.Class, r.Amount, f.Provider.Capacity[i])
		}
	}
	var held []string
	for _, p := range f.Providers {
		for _, r := range p.Resources {
			held = append(held, fmt.Sprintf("%s:%s=%d", names[p.UUID], r.Class, r.Amount))
		}
	}
	var consumers []string
	for _, c := range f.Consumers {
		consumers = append(consumers, c[:2])
	}
	return fmt.Sprintf("%s %s [%s] (%s) %s", f.Kind, subject, strings.Join(held, " "), strings.Join(consumers, " "), f.Fix.Action)
}

// listening reports whether s's change listener is connected.
func listening(s *ledger.Store) bool { return s.Snapshots.SnapshotListening() }
