package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/migrations"
)

func TestSchemaStatus(t *testing.T) {
	ctx := context.Background()
	dbURL := ledgertest.NewDB(t)
	// Numbers may have gaps (each branch of work is given its own), so
	// the latest is the number of the last file in name order.
	ups, _ := fs.Glob(migrations.FS, "*.up.sql")
	latest, err := ledger.LatestMigration()
	if err != nil || len(ups) == 0 || !strings.HasPrefix(ups[len(ups)-1], fmt.Sprintf("%04d_", latest)) {
		t.Fatalf("LatestMigration = %d, %v; up migrations %v", latest, err, ups)
	}
	st, err := ledger.SchemaStatusAt(ctx, dbURL)
	if err != nil || !st.Current() || st.Version != latest || st.Dirty {
		t.Fatalf("migrated database: %+v, %v", st, err)
	}
	ledgertest.Exec(t, dbURL, `UPDATE schema_migrations SET version = 1`)
	if latest > 1 {
		if st, _ := ledger.SchemaStatusAt(ctx, dbURL); st.Current() || !strings.Contains(st.String(), "run `berthd migrate`") {
			t.Errorf("behind: %+v %q", st, st)
		}
	}
	ledgertest.Exec(t, dbURL, `UPDATE schema_migrations SET version = $1, dirty = true`, int64(latest))
	if st, _ := ledger.SchemaStatusAt(ctx, dbURL); st.Current() || !st.Dirty {
		t.Errorf("dirty: %+v", st)
	}
	ledgertest.Exec(t, dbURL, `DROP TABLE schema_migrations`)
	if st, err := ledger.SchemaStatusAt(ctx, dbURL); err != nil || st.Version != 0 || st.Current() {
		t.Errorf("never migrated: %+v, %v", st, err)
	}
}

func TestPoolSettings(t *testing.T) {
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: ledgertest.NewDB(t), MaxConns: 3,
		StatementTimeout: 50 * time.Millisecond, SnapshotRefresh: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// pg_sleep(5) outlasts any machine's scheduling delay; only the
	// session's statement_timeout can end it early with an error.
	err = ledger.PoolExec(ctx, store, `SELECT pg_sleep(5)`)
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(fault.Detail(err), "statement timeout") {
		t.Errorf("a statement past statement_timeout: %v", err)
	}
	st := store.PoolStats()
	if st.MaxConns != 3 || st.TotalConns < 1 || st.AcquireCount < 1 {
		t.Errorf("pool stats %+v", st)
	}
}
