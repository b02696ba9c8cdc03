package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
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

// claimWith is a claim's write of consumer's allocations of res on rp,
// storing a claim with lease seconds (0: none) in mode.
func claimWith(consumer, rp string, gen *int64, lease int64, mode claimrecords.LeaseMode, request string) resources.ClaimWriteParams {
	a := alloc(consumer, rp, res("VCPU", 1))
	a.CheckGeneration, a.Generation = true, gen
	return resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{a},
		State: &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(request), RootUUID: rp, LeaseSeconds: lease, Mode: mode}}
}

// expire moves consumer's lease into the past, as time would.
func (f *fixture) expire(consumer string) {
	f.t.Helper()
	if _, err := f.db.Exec(f.ctx, `UPDATE claim_state SET lease_expires_at = now() - interval '1 second'
		WHERE consumer_uuid = $1`, consumer); err != nil {
		f.t.Fatal(err)
	}
}

// The consumers of the audit's cloud, in uuid order.
const (
	auditFine     = "c1000000-0000-4000-8000-000000000001" // on cn1
	auditShared   = "c2000000-0000-4000-8000-000000000002" // on cn1 and the sharing provider
	auditSplit    = "c3000000-0000-4000-8000-000000000003" // on cn1 and cn2
	auditInstance = "c4000000-0000-4000-8000-000000000004" // moved from cn1 to cn2
	auditMigrate  = "c5000000-0000-4000-8000-000000000005" // the move's source, on cn1
	auditNova     = "c6000000-0000-4000-8000-000000000006" // a MIGRATION consumer without a move
	auditEmpty    = "c7000000-0000-4000-8000-000000000007" // a consumer row without allocations
	auditTree     = "c8000000-0000-4000-8000-000000000008" // on cn3's child
)

// auditCloud seeds a cloud with one finding of every kind when every
// migration and report counts as stale, and returns the providers'
// uuids by name.
func auditCloud(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	rp := map[string]string{}
	for i, name := range []string{"cn1", "cn2", "cn3", "cn4", "ss", "cn3-numa0"} {
		rp[name] = fmt.Sprintf("a%d000000-0000-4000-8000-000000000000", i+1)
		parent := ""
		if name == "cn3-numa0" {
			parent = rp["cn3"]
		}
		mustCreate(t, f.store, name, rp[name], parent)
		if _, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: rp[name]},
			[]engine.Inventory{inv("VCPU", 8), inv("MEMORY_MB", 4096), inv("DISK_GB", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.store.Providers.ProviderTraitsReplace(f.ctx, rp["ss"], 1, []string{"MISC_SHARES_VIA_AGGREGATE"}); err != nil {
		t.Fatal(err)
	}
	two := func(consumer string, a, b string) resources.ConsumerAllocations {
		w := alloc(consumer, rp[a], res("VCPU", 1))
		w.Allocations = append(w.Allocations, engine.Allocation{ProviderUUID: rp[b], Resources: []engine.ResourceAmount{res("DISK_GB", 10)}})
		return w
	}
	nova := alloc(auditNova, rp["cn2"], res("VCPU", 2))
	nova.ConsumerType = resources.MigrationConsumerType
	for _, w := range []resources.ConsumerAllocations{
		alloc(auditFine, rp["cn1"], res("VCPU", 1), res("MEMORY_MB", 512)),
		two(auditShared, "cn1", "ss"),
		two(auditSplit, "cn1", "cn2"),
		alloc(auditInstance, rp["cn1"], res("VCPU", 2)),
		nova,
		alloc(auditTree, rp["cn3-numa0"], res("VCPU", 2)),
	} {
		if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{w}); err != nil {
			t.Fatal(err)
		}
	}
	// A move as claims write it: the instance to cn2, its source to the
	// migration consumer.
	mig := alloc(auditMigrate, rp["cn1"], res("VCPU", 2))
	mig.ConsumerType = resources.MigrationConsumerType
	if err := f.store.Allocations.ClaimWrite(f.ctx, resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{alloc(auditInstance, rp["cn2"], res("VCPU", 2)), mig},
		Move:      &claimrecords.MoveRecord{ConsumerUUID: auditInstance, MigrationUUID: auditMigrate, Reason: "relocation", SourceRoot: rp["cn1"]},
	}); err != nil {
		t.Fatal(err)
	}
	f.exec(`INSERT INTO consumers (uuid, project_id, user_id) SELECT $1, project_id, user_id FROM consumers LIMIT 1`, auditEmpty)
	// Reports: cn1 and cn3 an hour ago, cn2 now, cn4 (nothing on it) an
	// hour ago.
	for name, at := range map[string]time.Duration{"cn1": time.Hour, "cn2": 0, "cn3": time.Hour, "cn4": time.Hour} {
		if err := f.store.Cloud.ProviderStatePut(f.ctx, rp[name], engine.ProviderState{ReportedAt: time.Now().Add(-at)}); err != nil {
			t.Fatal(err)
		}
	}
	// cn2 holds 4 VCPU; its inventory lowered to 3.
	if _, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: rp["cn2"]},
		[]engine.Inventory{inv("VCPU", 3), inv("MEMORY_MB", 4096), inv("DISK_GB", 100)}); err != nil {
		t.Fatal(err)
	}
	return rp
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.db.Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatalf("exec %q: %v", sql, err)
	}
}
