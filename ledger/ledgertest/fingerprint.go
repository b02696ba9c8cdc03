package ledgertest

import (
	"context"
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
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("ledgertest: fingerprint: connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	rows, err := conn.Query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'
		ORDER BY table_name`)
	if err != nil {
		t.Fatalf("ledgertest: fingerprint: list tables: %v", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("ledgertest: fingerprint: list tables: %v", err)
	}
	if len(tables) == 0 {
		t.Fatalf("ledgertest: fingerprint: no tables in %s", dbURL)
	}
	parts := make([]string, len(tables))
	for i, name := range tables {
		parts[i] = fmt.Sprintf("SELECT %s, md5(COALESCE(string_agg(t::text, E'\\n' ORDER BY t::text), '')) FROM %s t",
			quoteLiteral(name), ident(name))
	}
	return &Fingerprinter{conn: conn, query: strings.Join(parts, " UNION ALL ")}
}

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

// CopyDB creates a copy of the database at srcURL, which must come from
// NewDB or CopyDB and must have no open connections (close its Store
// first), and returns the copy's URL. Unlike NewDB it leaves dropping the
// copy to the caller (DropDB): fuzz targets use it to reset their state
// between inputs, where a test's Cleanup would come too late.
func CopyDB(ctx context.Context, srcURL string) (string, error) {
	if err := testServer.setup(); err != nil {
		return "", err
	}
	src, err := databaseName(srcURL)
	if err != nil {
		return "", err
	}
	name := "t_" + randomHex(8)
	if err := testServer.admin(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(src)); err != nil {
		return "", fmt.Errorf("ledgertest: copy database %s: %w", src, err)
	}
	return withDatabase(testServer.adminURL, name), nil
}

// DropDB drops a database made by CopyDB, even if connections to it are
// still open.
func DropDB(ctx context.Context, dbURL string) error {
	name, err := databaseName(dbURL)
	if err != nil {
		return err
	}
	if err := testServer.admin(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("ledgertest: drop database %s: %w", name, err)
	}
	return nil
}

// databaseName returns the database named in a URL from this package.
func databaseName(dbURL string) (string, error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return "", fmt.Errorf("ledgertest: %w", err)
	}
	if !strings.HasPrefix(cfg.Database, "t_") {
		return "", fmt.Errorf("ledgertest: %q is not a test database", cfg.Database)
	}
	return cfg.Database, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
