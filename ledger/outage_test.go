package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
)

// TestOpenUnreachable: a database that is not there fails Open quickly
// with fault.ErrUnavailable, not a hang or an unclassified error.
func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir() // no server listens here
	_, err := ledger.Open(ctx, ledger.Config{DatabaseURL: "postgres://postgres@/berth?host=" + dir})
	if err == nil {
		t.Fatal("Open succeeded without a server")
	}
	if e, ok := fault.As(err); !ok || !errors.Is(e, fault.ErrUnavailable) {
		t.Fatalf("Open: %v; want fault.ErrUnavailable", err)
	}
}

// terminate ends the backends of database dbURL whose current query
// matches like (all when like is "%"), except the caller's, as an
// administrator or a restarting server would (SQLSTATE 57P01), and returns
// how many it ended.
func terminate(t *testing.T, dbURL, like string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE $1`, like).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBrokenPoolConnections: after every server connection of a Store is
// terminated (as by a PostgreSQL restart), writes succeed again at once:
// a BEGIN on a dead pooled connection is retried on another one.
func TestBrokenPoolConnections(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Fill the pool with idle connections.
	ledgertest.MustCreate(t, store, "a", uuidA, "")
	ledgertest.MustCreate(t, store, "b", uuidB, "")
	if n := terminate(t, dbURL, "%"); n == 0 {
		t.Fatal("no backend terminated")
	}
	ledgertest.MustCreate(t, store, "c", uuidC, "")
	list, err := store.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d providers after the reconnect, want 3", len(list))
	}
}

// TestListenerReconnects: when the change listener's connection is
// terminated, it reconnects by itself, and a write another process made
// meanwhile is seen (reads catch up with the change log whatever the
// listener does).
func TestListenerReconnects(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	ctx := context.Background()
	store, peer := ledgertest.OpenStore(t, dbURL), ledgertest.OpenStore(t, dbURL)
	ledgertest.MustCreate(t, store, "a", uuidA, "")
	count := func(s *ledger.Store) int {
		t.Helper()
		list, err := s.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	ledgertest.WaitFor(t, func() bool { return ledger.Listening(store) && count(store) == 1 })
	if n := terminate(t, dbURL, "LISTEN%"); n == 0 {
		t.Fatal("no listener terminated")
	}
	ledgertest.MustCreate(t, peer, "b", uuidB, "")
	ledgertest.WaitFor(t, func() bool { return count(store) == 2 })
	ledgertest.WaitFor(t, func() bool { return ledger.Listening(store) })
	// Listening again: notifications flow.
	ledgertest.MustCreate(t, peer, "c", uuidC, "")
	ledgertest.WaitFor(t, func() bool { return count(store) == 3 })
}
