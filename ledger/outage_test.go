package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/berthd/berth/ledger"
)

// TestAsErrorUnavailable: errors that say the database is out of reach
// become ErrUnavailable with Berth's code; errors that say a statement
// was wrong, and a client that went away, do not.
func TestAsErrorUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name string
		err  error
		kind error // nil: AsError gives ok false
	}{
		{"connection refused", fmt.Errorf("ledger: begin: %w", refused), ledger.ErrUnavailable},
		{"connection reset", fmt.Errorf("ledger: query: %w", reset), ledger.ErrUnavailable},
		{"unexpected EOF", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), ledger.ErrUnavailable},
		{"EOF", fmt.Errorf("read: %w", io.EOF), ledger.ErrUnavailable},
		{"conn closed", fmt.Errorf("ledger: %w", pgconn.ErrConnClosed), ledger.ErrUnavailable},
		{"admin shutdown", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, ledger.ErrUnavailable},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, ledger.ErrUnavailable},
		{"starting up", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, ledger.ErrUnavailable},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, ledger.ErrUnavailable},
		{"connection failure", &pgconn.PgError{Code: "08006"}, ledger.ErrUnavailable},
		{"too many connections", &pgconn.PgError{Code: "53300"}, ledger.ErrUnavailable},
		{"acquire timeout", fmt.Errorf("ledger: begin: %w", context.DeadlineExceeded), ledger.ErrUnavailable},
		{"bad string", &pgconn.PgError{Code: "22021"}, ledger.ErrInvalid},
		{"unique violation", &pgconn.PgError{Code: "23505"}, nil},
		{"syntax error", &pgconn.PgError{Code: "42601"}, nil},
		{"client went away", fmt.Errorf("ledger: begin: %w", context.Canceled), nil},
		{"a bug", errors.New("index out of range"), nil},
		{"already a ledger error", &ledger.Error{Kind: ledger.ErrConflict, Msg: "x"}, ledger.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := ledger.AsError(tc.err)
			if tc.kind == nil {
				if ok {
					t.Fatalf("AsError(%v) = %+v, want ok false", tc.err, e)
				}
				return
			}
			if !ok || !errors.Is(e, tc.kind) {
				t.Fatalf("AsError(%v) = %+v, %v; want kind %v", tc.err, e, ok, tc.kind)
			}
			if tc.kind == ledger.ErrUnavailable && (e.Code != ledger.CodeDatabaseUnavailable || e.Msg == "") {
				t.Errorf("unavailable error %+v: want code %s and a message", e, ledger.CodeDatabaseUnavailable)
			}
		})
	}
}

// TestOpenUnreachable: a database that is not there fails Open quickly
// with ErrUnavailable, not a hang or an unclassified error.
func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir() // no server listens here
	_, err := ledger.Open(ctx, ledger.Config{DatabaseURL: "postgres://postgres@/berth?host=" + dir})
	if err == nil {
		t.Fatal("Open succeeded without a server")
	}
	if e, ok := ledger.AsError(err); !ok || !errors.Is(e, ledger.ErrUnavailable) {
		t.Fatalf("Open: %v; want ErrUnavailable", err)
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
	dbURL := newTestDB(t)
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Fill the pool with idle connections.
	mustCreate(t, store, "a", uuidA, "")
	mustCreate(t, store, "b", uuidB, "")
	if n := terminate(t, dbURL, "%"); n == 0 {
		t.Fatal("no backend terminated")
	}
	mustCreate(t, store, "c", uuidC, "")
	list, err := store.ProvidersMatching(ctx, ledger.ProviderFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d providers after the reconnect, want 3", len(list))
	}
}

// TestSnapshotWhileDeaf: while the change listener is disconnected, a
// reader never gets a snapshot that may have missed another process's
// write; once it listens again, the cached snapshot is used (which is why
// the first half can fail).
func TestSnapshotWhileDeaf(t *testing.T) {
	dbURL := newTestDB(t)
	ctx := context.Background()
	store := openStore(t, dbURL)
	mustCreate(t, store, "a", uuidA, "")
	name := func() string {
		t.Helper()
		list, err := store.ProvidersMatching(ctx, ledger.ProviderFilter{})
		if err != nil || len(list) != 1 {
			t.Fatalf("providers: %v, %v", list, err)
		}
		return list[0].Name
	}
	waitFor(t, func() bool { return ledger.Listening(store) })
	if got := name(); got != "a" {
		t.Fatalf("name %q", got)
	}
	rename := func(to string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		// Behind the Store's back and without a notification: a write
		// whose notification a disconnected listener would have missed.
		if _, err := conn.Exec(ctx, `UPDATE resource_providers SET name = $1 WHERE uuid = $2`, to, uuidA); err != nil {
			t.Fatal(err)
		}
	}

	ledger.SetListening(store, false)
	rename("deaf")
	if got := name(); got != "deaf" {
		t.Errorf("while deaf: name %q, want the database's %q", got, "deaf")
	}
	ledger.SetListening(store, true)
	rename("unheard")
	if got := name(); got != "deaf" {
		t.Errorf("while listening: name %q; the snapshot was reloaded without a notification", got)
	}
}

// TestListenerReconnects: when the change listener's connection is
// terminated, it reconnects by itself and the first read after that
// reloads everything, so a write another process made meanwhile is seen.
func TestListenerReconnects(t *testing.T) {
	dbURL := newTestDB(t)
	ctx := context.Background()
	store, peer := openStore(t, dbURL), openStore(t, dbURL)
	mustCreate(t, store, "a", uuidA, "")
	count := func(s *ledger.Store) int {
		t.Helper()
		list, err := s.ProvidersMatching(ctx, ledger.ProviderFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	waitFor(t, func() bool { return ledger.Listening(store) && count(store) == 1 })
	if n := terminate(t, dbURL, "LISTEN%"); n == 0 {
		t.Fatal("no listener terminated")
	}
	mustCreate(t, peer, "b", uuidB, "")
	waitFor(t, func() bool { return count(store) == 2 })
	waitFor(t, func() bool { return ledger.Listening(store) })
	// Listening again: notifications flow.
	mustCreate(t, peer, "c", uuidC, "")
	waitFor(t, func() bool { return count(store) == 3 })
}
