package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// Fixture is a Store over a fresh database plus a direct connection to
// that database, for the ledger packages' tests: setting up rows another
// part owns and inspecting what a write left behind.
type Fixture struct {
	T     *testing.T
	Ctx   context.Context
	Store *ledger.Store
	DB    *pgx.Conn
}

// NewFixture is a Fixture over a new database (NewDB).
func NewFixture(t *testing.T) *Fixture {
	t.Helper()
	return NewFixtureOn(t, NewDB(t))
}

// NewFixtureOn is NewFixture over the database at dbURL. It names the
// tests' usual project, user and consumer type ("proj", "user",
// "INSTANCE": Alloc's and NewClaim's), so that their writes may take the
// claim fast path.
func NewFixtureOn(t *testing.T, dbURL string) *Fixture {
	t.Helper()
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 8, AcquireTimeout: AcquireTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	f := &Fixture{T: t, Ctx: ctx, Store: store, DB: db}
	f.Known([]string{"proj"}, []string{"user"}, []string{"INSTANCE"})
	return f
}

// OpenStore opens a Store over the database at dbURL with a small pool,
// closed when the test ends. Two stores over one database act as two
// berthd processes.
func OpenStore(t *testing.T, dbURL string) *ledger.Store {
	t.Helper()
	s, err := ledger.Open(context.Background(), ledger.Config{DatabaseURL: dbURL, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// WaitFor polls cond until it holds, failing the test after a bound only
// a broken implementation reaches.
func WaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Known creates projects, users and consumer types, as a cloud holds
// those it has claimed for before. The claim fast path writes claims of
// names that exist (a new name's first claim takes the general path:
// ledger/resources/claim_write.go), so a test of the fast path or of
// batches names them here first.
func (f *Fixture) Known(projects, users, types []string) {
	f.T.Helper()
	for _, n := range []struct {
		table, column string
		names         []string
	}{{"projects", "external_id", projects}, {"users", "external_id", users}, {"consumer_types", "name", types}} {
		if _, err := f.DB.Exec(f.Ctx, `INSERT INTO `+n.table+` (`+n.column+`) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, n.names); err != nil {
			f.T.Fatal(err)
		}
	}
}

// Provider creates a root provider with the given inventories, written
// through the ledger so generations are as the API would make them.
func (f *Fixture) Provider(name string, invs ...engine.Inventory) string {
	f.T.Helper()
	return Provider(f.T, f.Store, name, invs...)
}

// Usages returns a provider's usages.
func (f *Fixture) Usages(rp string) resources.ProviderUsages {
	f.T.Helper()
	u, err := f.Store.Providers.ProviderUsagesGet(f.Ctx, rp)
	if err != nil {
		f.T.Fatal(err)
	}
	return u
}

// Exec runs sql on the fixture's database, failing the test on an error.
func (f *Fixture) Exec(sql string, args ...any) {
	f.T.Helper()
	if _, err := f.DB.Exec(f.Ctx, sql, args...); err != nil {
		f.T.Fatalf("exec %q: %v", sql, err)
	}
}

// Expire moves consumer's lease into the past, as time would.
func (f *Fixture) Expire(consumer string) {
	f.T.Helper()
	f.Exec(`UPDATE claim_state SET lease_expires_at = now() - interval '1 second' WHERE consumer_uuid = $1`, consumer)
}

// Dump renders everything a write could change, for before/after
// comparisons.
func (f *Fixture) Dump() string {
	f.T.Helper()
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
		rows, err := f.DB.Query(f.Ctx, q)
		if err != nil {
			f.T.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				f.T.Fatal(err)
			}
			lines = append(lines, fmt.Sprint(vals...))
		}
		if err := rows.Err(); err != nil {
			f.T.Fatal(err)
		}
		sort.Strings(lines)
		out = append(out, strings.Join(lines, "\n"))
	}
	return strings.Join(out, "\n--\n")
}

// MustCreate creates provider name with the given uuid under parent
// ("": a root).
func MustCreate(t *testing.T, s *ledger.Store, name, uuid, parent string) engine.Provider {
	t.Helper()
	p, err := s.Providers.ProviderCreate(context.Background(), resources.ProviderCreateParams{UUID: uuid, Name: name, ParentUUID: parent})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return p
}

// Rejection asserts err is a ledger refusal of kind and returns it.
func Rejection(t *testing.T, err error, kind error) *fault.Error {
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

// Inv is an inventory of total of class with Placement's defaults.
func Inv(class string, total int64) engine.Inventory {
	return resources.DefaultInventory(class, total)
}

// Res is an amount of class.
func Res(class string, n int64) engine.ResourceAmount {
	return engine.ResourceAmount{Class: class, Amount: n}
}

// Gen is a pointer to generation n.
func Gen(n int64) *int64 { return &n }

// Alloc is a write of consumer's allocations against one provider, for
// project "proj" and user "user".
func Alloc(consumer, rp string, res ...engine.ResourceAmount) resources.ConsumerAllocations {
	return resources.ConsumerAllocations{
		ConsumerUUID: consumer, ProjectID: "proj", UserID: "user",
		Allocations: []engine.Allocation{{ProviderUUID: rp, Resources: res}},
	}
}

// NewClaim is a write the claim fast path takes: a new consumer
// (consumer_generation null) with a type.
func NewClaim(consumer, rp string, res ...engine.ResourceAmount) resources.ConsumerAllocations {
	w := Alloc(consumer, rp, res...)
	w.CheckGeneration, w.ConsumerType = true, "INSTANCE"
	return w
}

// Used is what summary s says is used of class (-1: no such class).
func Used(s engine.ProviderSummary, class string) int64 {
	for _, r := range s.Resources {
		if r.ResourceClass == class {
			return r.Used
		}
	}
	return -1
}

// FindingSummary is an audit finding in one line: kind, subject,
// amounts, fix, with providers named by names (uuid to name) and
// consumers by the first two characters of their uuids.
func FindingSummary(f audit.AuditFinding, names map[string]string) string {
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

// Listening reports whether s's change listener is connected.
func Listening(s *ledger.Store) bool { return s.Snapshots.SnapshotListening() }
