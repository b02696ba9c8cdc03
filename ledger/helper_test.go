package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
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
