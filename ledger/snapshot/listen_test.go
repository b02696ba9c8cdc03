package snapshot_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/snapshot"
)

// TestSnapshotSeesWritesBehindItsBack: a write made behind the Store's
// back, without a notification (as by a process killed between its
// commit and its notification), is seen by the next read, whether the
// change listener is connected or not: reads catch up with the change
// log, which the write's transaction wrote (changelog.go). A ranking
// snapshot, which does not catch up while listening, sees it once a
// catch-up has run.
func TestSnapshotSeesWritesBehindItsBack(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	ctx := context.Background()
	store := ledgertest.OpenStore(t, dbURL)
	ledgertest.MustCreate(t, store, "a", uuidA, "")
	name := func(snap func(context.Context, []string, []string) (*engine.Snapshot, error)) string {
		t.Helper()
		s, err := snap(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.ProvidersMatching(&engine.ProviderFilter{})
		if err != nil || len(list) != 1 {
			t.Fatalf("providers: %v, %v", list, err)
		}
		return list[0].Name
	}
	ledgertest.WaitFor(t, func() bool { return snapshot.Listening(store.Snapshots) })
	if got := name(store.Snapshots.Snapshot); got != "a" {
		t.Fatalf("name %q", got)
	}
	rename := func(to string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		// Behind the Store's back and without a notification.
		if _, err := conn.Exec(ctx, `UPDATE resource_providers SET name = $1 WHERE uuid = $2`, to, uuidA); err != nil {
			t.Fatal(err)
		}
	}

	snapshot.SetListening(store.Snapshots, false)
	rename("deaf")
	if got := name(store.Snapshots.RankingSnapshot); got != "deaf" {
		t.Errorf("while deaf, ranking: name %q, want the database's %q", got, "deaf")
	}
	snapshot.SetListening(store.Snapshots, true)
	rename("unheard")
	if got := name(store.Snapshots.Snapshot); got != "unheard" {
		t.Errorf("while listening: name %q, want the database's %q", got, "unheard")
	}
	if got := name(store.Snapshots.RankingSnapshot); got != "unheard" {
		t.Errorf("ranking after a catch-up: name %q, want %q", got, "unheard")
	}
}
