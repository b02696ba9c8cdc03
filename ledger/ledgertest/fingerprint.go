package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Fingerprint is a digest of a database's contents: the md5 of every row
// of each table, by table name. Two fingerprints are equal when no row was
// inserted, updated or deleted in between (timestamps included).
// Sequences are not part of it: a rolled-back insert still advances them.
type Fingerprint map[string]string

// Diff lists the tables whose contents differ between f and g.
func (f Fingerprint) Diff(g Fingerprint) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(f)) {
		if f[name] != g[name] {
			out = append(out, name)
		}
	}
	for name := range g {
		if _, ok := f[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// Fingerprinter takes fingerprints of one database over one connection.
type Fingerprinter struct {
	conn  *pgx.Conn
	query string
}

// NewFingerprinter connects to the database at dbURL (from NewDB or
// CopyDB) and closes the connection when the test ends. The tables are
// read from the catalog once, so call it after migrating.
func NewFingerprinter(t testing.TB, dbURL string) *Fingerprinter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := OpenFingerprinter(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// OpenFingerprinter is NewFingerprinter for callers that outlive a test,
// such as a fuzz target's state: they Close it themselves.
func OpenFingerprinter(ctx context.Context, dbURL string) (*Fingerprinter, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("ledgertest: fingerprint: connect: %w", err)
	}
	tables, err := listTables(ctx, conn)
	if err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("ledgertest: fingerprint: %w", err)
	}
	parts := make([]string, len(tables))
	for i, name := range tables {
		parts[i] = fmt.Sprintf("SELECT %s, md5(COALESCE(string_agg(t::text, E'\\n' ORDER BY t::text), '')) FROM %s t",
			quoteLiteral(name), ident(name))
	}
	return &Fingerprinter{conn: conn, query: strings.Join(parts, " UNION ALL ")}, nil
}

// Close closes the fingerprinter's connection.
func (f *Fingerprinter) Close() { _ = f.conn.Close(context.Background()) }

// Take reads the current fingerprint in one statement (one snapshot).
func (f *Fingerprinter) Take(ctx context.Context) (Fingerprint, error) {
	rows, err := f.conn.Query(ctx, f.query)
	if err != nil {
		return nil, fmt.Errorf("ledgertest: fingerprint: %w", err)
	}
	defer rows.Close()
	out := Fingerprint{}
	for rows.Next() {
		var name, sum string
		if err := rows.Scan(&name, &sum); err != nil {
			return nil, fmt.Errorf("ledgertest: fingerprint: %w", err)
		}
		out[name] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledgertest: fingerprint: %w", err)
	}
	return out, nil
}

// MustTake is Take for tests: it fails t on error.
func (f *Fingerprinter) MustTake(t testing.TB) Fingerprint {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fp, err := f.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// savedSchema holds the rows SaveRows saved.
const savedSchema = "ledgertest_saved"

// SavedRows is a saved copy of the rows of every table of a database,
// which Restore puts back. Fuzz targets use it to run every input against
// the same state: restoring takes milliseconds where a new database takes
// a tenth of a second.
type SavedRows struct {
	conn    *pgx.Conn
	restore []string // the statements that restore the rows
}

// SaveRows saves the rows of the database at dbURL (from NewDB) in a
// schema of its own, replacing what an earlier call saved, and keeps a
// connection for Restore until Close.
func SaveRows(ctx context.Context, dbURL string) (*SavedRows, error) {
	conn, tables, err := connectTables(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	order, err := referencedFirst(ctx, conn, tables)
	if err == nil {
		stmts := []string{"DROP SCHEMA IF EXISTS " + savedSchema + " CASCADE", "CREATE SCHEMA " + savedSchema}
		for _, name := range tables {
			stmts = append(stmts, "CREATE TABLE "+savedSchema+"."+ident(name)+" AS TABLE public."+ident(name))
		}
		err = execAll(ctx, conn, stmts)
	}
	if err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	// DELETE rather than TRUNCATE: on tables this small it is the faster.
	// The tables that triggers write (the change log) are restored after
	// the others, whose deletes and inserts write rows there.
	var last []string
	order = slices.DeleteFunc(order, func(name string) bool {
		if slices.Contains(triggerWritten, name) {
			last = append(last, name)
			return true
		}
		return false
	})
	restore := []string{"BEGIN"}
	for _, group := range [][]string{order, last} {
		for i := len(group) - 1; i >= 0; i-- {
			restore = append(restore, "DELETE FROM public."+ident(group[i]))
		}
		for _, name := range group {
			restore = append(restore, "INSERT INTO public."+ident(name)+" OVERRIDING SYSTEM VALUE SELECT * FROM "+savedSchema+"."+ident(name))
		}
	}
	restore = append(restore, "COMMIT")
	return &SavedRows{conn: conn, restore: restore}, nil
}

// triggerWritten are the tables that the other tables' triggers write:
// the change log (migrations/0008_ledger_changes.up.sql).
var triggerWritten = []string{"ledger_changes"}

// Restore puts back the saved rows, in one transaction, the change log's
// included: the restore itself leaves no row of its own there. Sequences
// keep their values. A Store open on the database does not see the change
// in its caches: close it first and open a new one.
func (s *SavedRows) Restore(ctx context.Context) error {
	if err := execAll(ctx, s.conn, s.restore); err != nil {
		_, _ = s.conn.Exec(ctx, "ROLLBACK")
		return err
	}
	return nil
}

// Close closes the connection SaveRows opened.
func (s *SavedRows) Close() { _ = s.conn.Close(context.Background()) }

// connectTables connects to dbURL and lists its tables.
func connectTables(ctx context.Context, dbURL string) (*pgx.Conn, []string, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("ledgertest: connect: %w", err)
	}
	tables, err := listTables(ctx, conn)
	if err != nil {
		_ = conn.Close(ctx)
		return nil, nil, err
	}
	return conn, tables, nil
}

// listTables lists the tables of the public schema, except golang-migrate's.
func listTables(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'
		ORDER BY table_name`)
	var tables []string
	if err == nil {
		tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err == nil && len(tables) == 0 {
		err = errors.New("no tables")
	}
	if err != nil {
		return nil, fmt.Errorf("ledgertest: list tables: %w", err)
	}
	return tables, nil
}

// referencedFirst orders tables so that each comes after the tables its
// foreign keys reference. A table referencing itself is loaded in one
// statement, and its constraint is checked at the end of that statement.
func referencedFirst(ctx context.Context, conn *pgx.Conn, tables []string) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT c.conrelid::regclass::text, c.confrelid::regclass::text
		FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
		WHERE c.contype = 'f' AND n.nspname = 'public' AND c.conrelid <> c.confrelid`)
	if err != nil {
		return nil, fmt.Errorf("ledgertest: foreign keys: %w", err)
	}
	deps := map[string][]string{}
	var from, to string
	_, err = pgx.ForEachRow(rows, []any{&from, &to}, func() error {
		deps[from] = append(deps[from], to)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledgertest: foreign keys: %w", err)
	}
	var order []string
	done := map[string]bool{}
	var visit func(string)
	visit = func(name string) {
		if done[name] {
			return
		}
		done[name] = true
		for _, d := range deps[name] {
			visit(d)
		}
		order = append(order, name)
	}
	for _, name := range tables {
		visit(name)
	}
	return order, nil
}

func execAll(ctx context.Context, conn *pgx.Conn, stmts []string) error {
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("ledgertest: %s: %w", stmt, err)
		}
	}
	return nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
