package ledger_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger"
)

// This helper stands in for ledger/ledgertest.NewDB until that package
// lands on main; the tests only depend on newTestDB's signature.

const defaultTestDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres"

func adminURL() string {
	if u := os.Getenv("BERTH_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultTestDatabaseURL
}

// withDatabase returns base with its database name replaced by name.
func withDatabase(t testing.TB, base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("bad BERTH_TEST_DATABASE_URL %q: %v", base, err)
	}
	u.Path = "/" + name
	return u.String()
}

var tmpl struct {
	once sync.Once
	name string
	err  error
}

// newTestDB creates a fresh, migrated database for one test and drops it
// when the test ends. The schema is migrated once per test binary into a
// template database that each test's database is copied from. Tests are
// skipped when no PostgreSQL server answers.
func newTestDB(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, adminURL())
	if err != nil {
		t.Skipf("no PostgreSQL for ledger tests (set BERTH_TEST_DATABASE_URL): %v", err)
	}
	defer admin.Close(ctx)

	tmpl.once.Do(func() {
		tmpl.name = "berth_tmpl_" + randomSuffix()
		if _, tmpl.err = admin.Exec(ctx, "CREATE DATABASE "+tmpl.name); tmpl.err != nil {
			return
		}
		tmpl.err = ledger.Migrate(ctx, withDatabase(t, adminURL(), tmpl.name))
	})
	if tmpl.err != nil {
		t.Fatalf("template database: %v", tmpl.err)
	}
	name := "berth_test_" + randomSuffix()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmpl.name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), adminURL())
		if err != nil {
			t.Errorf("drop test database: %v", err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return withDatabase(t, adminURL(), name)
}

// TestMain drops the template database after all tests ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if tmpl.name != "" {
		if conn, err := pgx.Connect(context.Background(), adminURL()); err == nil {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+tmpl.name+" WITH (FORCE)")
			conn.Close(context.Background())
		}
	}
	os.Exit(code)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newTestStore opens a Store over a fresh database; exec runs raw SQL on
// that database, for setting up rows owned by other parts of the ledger.
func newTestStore(t *testing.T) (store *ledger.Store, exec func(sql string, args ...any)) {
	t.Helper()
	dbURL := newTestDB(t)
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return store, func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("exec %q: %v", sql, err)
		}
	}
}
