package ledgertest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

func TestNewDBIsFreshAndMigrated(t *testing.T) {
	ctx := context.Background()
	var urls []string
	for range 2 {
		u := ledgertest.NewDB(t)
		urls = append(urls, u)
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatalf("connect %s: %v", u, err)
		}
		var tables int
		err = conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
			WHERE table_schema = 'public' AND table_name <> 'schema_migrations'`).Scan(&tables)
		if err != nil || tables == 0 {
			t.Errorf("no migrated tables in %s (count %d, err %v)", u, tables, err)
		}
		// Leave a connection open: the drop in Cleanup must still work.
		if _, err := conn.Exec(ctx, "CREATE TABLE scratch (id int)"); err != nil {
			t.Fatal(err)
		}
	}
	if urls[0] == urls[1] {
		t.Errorf("two NewDB calls returned the same database %s", urls[0])
	}
}

func TestNewDBParallel(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			ledgertest.NewStore(t)
		})
	}
}

func TestNewStore(t *testing.T) {
	store := ledgertest.NewStore(t)
	if err := store.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func BenchmarkNewDB(b *testing.B) {
	// Each iteration's database lives until the benchmark ends.
	for b.Loop() {
		ledgertest.NewDB(b)
	}
}
