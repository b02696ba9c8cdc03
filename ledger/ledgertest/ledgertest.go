package ledgertest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/pgcluster"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/migrations"
)

// EnvDatabaseURL names the environment variable holding the URL of an
// existing server to create test databases on, as a user allowed to
// create databases, e.g. postgres://postgres@localhost:5432/postgres.
const EnvDatabaseURL = "BERTH_TEST_DATABASE_URL"

// templateLockKey is the advisory lock that serialises template creation
// among test binaries sharing one server.
const templateLockKey int64 = 0x6265727468746d70 // "berthtmp"

// setupTimeout bounds starting the cluster and building the template.
const setupTimeout = 3 * time.Minute

// testServer is the database server of this test binary. It is package
// state, against Berth's rule, because a test binary has no other place
// to keep one server for all its tests: NewDB starts it once and Main
// stops it.
var testServer server

// server is a database server for tests plus its migrated template.
type server struct {
	mainRunning atomic.Bool

	once     sync.Once
	err      error
	adminURL string             // URL of a database to run admin statements in
	template string             // name of the migrated template database
	cluster  *pgcluster.Cluster // nil when EnvDatabaseURL is used
	dir      string             // temporary directory holding cluster
}

// Main runs the tests, then stops the throwaway cluster (if one was
// started) and removes its files, and exits with the tests' status. Call it
// from TestMain in every package that uses NewDB.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it returns the tests' status, for a
// TestMain that has more to stop afterwards.
func Run(m *testing.M) int {
	testServer.mainRunning.Store(true)
	code := m.Run()
	if err := testServer.close(); err != nil {
		fmt.Fprintln(os.Stderr, "ledgertest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// NewDB creates an empty, migrated database for the calling test, with the
// standard resource classes and traits, and returns its URL. The database
// is dropped when the test ends, even if connections to it are still open.
func NewDB(t testing.TB) string {
	t.Helper()
	if !testServer.mainRunning.Load() {
		t.Fatal("ledgertest: add `func TestMain(m *testing.M) { ledgertest.Main(m) }` to this package's tests")
	}
	if err := testServer.setup(); err != nil {
		t.Fatalf("ledgertest: %v", err)
	}
	name := "t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testServer.admin(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(testServer.template)); err != nil {
		t.Fatalf("ledgertest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := testServer.admin(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("ledgertest: drop database %s: %v", name, err)
		}
	})
	return withDatabase(testServer.adminURL, name)
}

// ExecModes are pgx's query modes (default_query_exec_mode), the default
// (cache_statement) first. With the first three pgx learns a parameter's
// type by describing the statement; with exec and simple_protocol (what
// PgBouncer in transaction mode needs) it knows none, and sends an
// argument as its Go type says (a []byte as a bytea).
func ExecModes() []string {
	return []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}
}

// NewDBInMode is NewDB's database, its URL setting pgx's
// default_query_exec_mode to mode (one of ExecModes).
func NewDBInMode(t testing.TB, mode string) string {
	t.Helper()
	u, err := url.Parse(NewDB(t))
	if err != nil {
		t.Fatalf("ledgertest: %v", err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", mode)
	u.RawQuery = q.Encode()
	return u.String()
}

// SameInEveryExecMode runs run in a subtest per mode of ExecModes, on a
// database of its own in that mode (NewDBInMode), and fails t when a
// mode's text differs from the default mode's (the first). run returns
// what the mode did as text ("" after a failure, which is then not
// compared); verb names it in the failure ("wrote": "exec wrote ...").
func SameInEveryExecMode(t *testing.T, verb string, run func(t *testing.T, dbURL string) string) {
	t.Helper()
	modes := ExecModes()
	did := make(map[string]string)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { did[mode] = run(t, NewDBInMode(t, mode)) })
	}
	for _, mode := range modes[1:] {
		if got, want := did[mode], did[modes[0]]; got != "" && want != "" && got != want {
			t.Errorf("%s %s\n%s\nwant, as %s %s,\n%s", mode, verb, got, modes[0], verb, want)
		}
	}
}

// AcquireTimeout is the pool acquire timeout of test stores: a bound only
// a hung test reaches. Tests that run more writers than the pool has
// connections must queue for them, not fail with ErrUnavailable because a
// loaded machine was slow (ledger.DefaultAcquireTimeout is for servers,
// which should answer 503 quickly instead).
const AcquireTimeout = 2 * time.Minute

// NewStore opens a ledger.Store on a database from NewDB and closes it
// when the test ends.
func NewStore(t testing.TB) *ledger.Store {
	t.Helper()
	dbURL := NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 8, AcquireTimeout: AcquireTimeout})
	if err != nil {
		t.Fatalf("ledgertest: open store: %v", err)
	}
	// Registered after NewDB's cleanup, so it runs before the drop.
	t.Cleanup(store.Close)
	return store
}

// Provider creates a root provider named name with invs through store,
// as the API would (generations included), and returns its uuid.
func Provider(t testing.TB, store *ledger.Store, name string, invs ...engine.Inventory) string {
	t.Helper()
	ctx := context.Background()
	p, err := store.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: name})
	if err != nil {
		t.Fatalf("ledgertest: create provider %s: %v", name, err)
	}
	if len(invs) > 0 {
		if _, err := store.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: p.UUID, Generation: new(int64)}, invs); err != nil {
			t.Fatalf("ledgertest: inventories of %s: %v", name, err)
		}
	}
	return p.UUID
}

// setup finds or starts the server and builds the template, once.
func (s *server) setup() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		s.err = s.start(ctx)
		if s.err == nil {
			s.err = s.buildTemplate(ctx)
		}
	})
	return s.err
}

func (s *server) start(ctx context.Context) error {
	if u := os.Getenv(EnvDatabaseURL); u != "" {
		parsed, err := url.Parse(u)
		if err != nil || (parsed.Scheme != "postgres" && parsed.Scheme != "postgresql") {
			return fmt.Errorf("%s must be a postgres:// URL, got %q", EnvDatabaseURL, u)
		}
		s.adminURL = u
		return nil
	}
	dir, err := os.MkdirTemp("", "berthtest-")
	if err != nil {
		return err
	}
	s.dir = dir
	socketDir := dir
	if !pgcluster.SocketDirFits(socketDir, pgcluster.DefaultPort) {
		// A long $TMPDIR: keep the socket in /tmp.
		if socketDir, err = os.MkdirTemp("/tmp", "berthtest-"); err != nil {
			return err
		}
	}
	s.cluster, err = pgcluster.Start(ctx, pgcluster.Options{
		DataDir:   filepath.Join(dir, "pg"),
		SocketDir: socketDir,
		NoSync:    true,
		// The server may pass through the temporary directory made above.
		LoosenParents: true,
		Logger:        discardLogger(),
	})
	if err != nil {
		return fmt.Errorf("start a throwaway PostgreSQL (install the server, or set %s): %w", EnvDatabaseURL, err)
	}
	s.adminURL = s.cluster.URL("postgres")
	return nil
}

// buildTemplate makes sure the template for the current migrations
// exists. The template's name carries a hash of the migration files, so
// a server shared between checkouts never hands out a stale schema. An
// advisory lock keeps concurrent test binaries from building it twice;
// a half-built template left by a crash is not marked as a template and
// is rebuilt.
func (s *server) buildTemplate(ctx context.Context) error {
	hash, err := migrationsHash()
	if err != nil {
		return err
	}
	s.template = "berth_template_" + hash
	conn, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", s.adminURL, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // the session ends next

	var isTemplate bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", s.template).Scan(&isTemplate)
	switch {
	case err == nil && isTemplate:
		return nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("look up template: %w", err)
	}
	for _, stmt := range []string{
		"DROP DATABASE IF EXISTS " + ident(s.template) + " WITH (FORCE)",
		"CREATE DATABASE " + ident(s.template),
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	templateURL := withDatabase(s.adminURL, s.template)
	if err := ledger.Migrate(ctx, templateURL); err != nil {
		return err
	}
	// Open syncs the standard resource classes and traits, so that each
	// test's Open finds them in place.
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: templateURL, MaxConns: 1, Logger: discardLogger()})
	if err != nil {
		return err
	}
	store.Close()
	stmt := "ALTER DATABASE " + ident(s.template) + " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// admin runs one statement in the admin database on a new connection.
func (s *server) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// close stops the throwaway cluster and removes its directory.
func (s *server) close() error {
	if s.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.cluster.Stop(ctx)
	if sd := s.cluster.SocketDir(); sd != s.dir {
		_ = os.RemoveAll(sd)
	}
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	return err
}

// migrationsHash returns 12 hex digits of a hash over the migration files'
// names and contents.
func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// withDatabase returns serverURL with its database replaced by name.
func withDatabase(serverURL, name string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		panic(fmt.Sprintf("ledgertest: server url was validated: %v", err))
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Deadlocks returns how many transactions of the database at dbURL
// PostgreSQL aborted as deadlocked (pg_stat_database), once no other
// connection to it is open: a backend may keep its statistics until it
// exits. Close the Stores and stop the processes on the database first;
// one left open makes Deadlocks wait until a bound only a hung test
// reaches, then fail.
func Deadlocks(t testing.TB, dbURL string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("ledgertest: connect: %v", err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(AcquireTimeout); ; {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			t.Fatalf("ledgertest: %v", err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledgertest: %d connections to the database still open after %v", others, AcquireTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		t.Fatalf("ledgertest: %v", err)
	}
	return n
}

// Exec runs one SQL statement on the database at dbURL on a connection of
// its own, behind any Store's back: a Store's snapshot does not hear of it,
// as with a write from a process that missed a change notification. It is
// for tests outside the ledger package, which must not import pgx.
func Exec(t testing.TB, dbURL, stmt string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("ledgertest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt, args...); err != nil {
		t.Fatalf("ledgertest: exec %q: %v", stmt, err)
	}
}
