package ledger_test

import (
	"testing"

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
