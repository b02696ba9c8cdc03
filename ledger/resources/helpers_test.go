package resources_test

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
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
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

// claimBatches reports how many transactions s's claim writers sent and
// how many claims they held.
func claimBatches(s *ledger.Store) (batches, claims int64) {
	batches, claims, _ = s.Allocations.WriterStats()
	return batches, claims
}

// queuedClaims reports how many claims wait for s's claim writers.
func queuedClaims(s *ledger.Store) int {
	_, _, queued := s.Allocations.WriterStats()
	return queued
}

// snapshotStale reports how many providers s's snapshot has marked dirty
// (-1: everything).
func snapshotStale(s *ledger.Store) int {
	_, _, _, stale := s.Snapshots.Work()
	return stale
}

// listening reports whether s's change listener is connected.
func listening(s *ledger.Store) bool { return s.Snapshots.SnapshotListening() }
