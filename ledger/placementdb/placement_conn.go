package placementdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// PlacementHead is the alembic revision of Placement 8.0.0's schema
// (add_consumer_types_table), the one version this package reads and
// writes.
const PlacementHead = "422ece571366"

// placementRevisions are Placement's alembic revisions, oldest first.
var placementRevisions = []string{"b4ed3a175331", "611cd6dffd7b", "b5c396305c25", PlacementHead}

// placementColumns is the part of Placement's schema this package reads
// and writes, table by table.
var placementColumns = map[string][]string{
	"resource_classes":             {"id", "name", "created_at", "updated_at"},
	"traits":                       {"id", "name", "created_at", "updated_at"},
	"resource_providers":           {"id", "uuid", "name", "generation", "root_provider_id", "parent_provider_id", "created_at", "updated_at"},
	"inventories":                  {"id", "resource_provider_id", "resource_class_id", "total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio", "created_at", "updated_at"},
	"resource_provider_traits":     {"resource_provider_id", "trait_id", "created_at", "updated_at"},
	"placement_aggregates":         {"id", "uuid", "created_at", "updated_at"},
	"resource_provider_aggregates": {"resource_provider_id", "aggregate_id", "created_at", "updated_at"},
	"projects":                     {"id", "external_id", "created_at", "updated_at"},
	"users":                        {"id", "external_id", "created_at", "updated_at"},
	"consumer_types":               {"id", "name", "created_at", "updated_at"},
	"consumers":                    {"id", "uuid", "project_id", "user_id", "generation", "consumer_type_id", "created_at", "updated_at"},
	"allocations":                  {"id", "resource_provider_id", "consumer_id", "resource_class_id", "used", "created_at", "updated_at"},
}

// placementDB is an open Placement database.
type placementDB struct {
	src Source
	db  *sql.DB
}

// openPlacement connects to src and checks that it can be reached and
// logged in to. Its errors are one line and never hold the password.
func openPlacement(ctx context.Context, src Source) (*placementDB, error) {
	var db *sql.DB
	switch src.Dialect {
	case MySQL:
		conn, err := mysql.NewConnector(src.mysqlConfig)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", src, err)
		}
		db = sql.OpenDB(conn)
	case Postgres:
		cfg, err := pgx.ParseConfig(src.pgURL)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", src, scrub(err, src))
		}
		db = stdlib.OpenDB(*cfg)
	default:
		return nil, fmt.Errorf("%s: unknown dialect", src)
	}
	db.SetMaxOpenConns(2)
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout+5e9)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot connect to %s: %v", src, oneLine(scrub(err, src)))
	}
	return &placementDB{src: src, db: db}, nil
}

func (p *placementDB) Close() error { return p.db.Close() }

// checkSchema refuses anything but Placement 8.0.0's complete schema, in
// one line: no alembic_version table (not a Placement database, or never
// synced), an older revision (half-way through an upgrade), an unknown
// one (a newer Placement), or tables and columns missing at the right
// revision.
func (p *placementDB) checkSchema(ctx context.Context) error {
	var schemaExpr string
	if p.src.Dialect == MySQL {
		schemaExpr = "DATABASE()"
	} else {
		schemaExpr = "current_schema()"
	}
	rows, err := p.db.QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = `+schemaExpr)
	if err != nil {
		return fmt.Errorf("%s: reading the schema: %v", p.src, oneLine(err))
	}
	have := map[string]bool{}
	tables := map[string]bool{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			rows.Close()
			return fmt.Errorf("%s: reading the schema: %v", p.src, oneLine(err))
		}
		t, c = strings.ToLower(t), strings.ToLower(c)
		have[t+"."+c] = true
		tables[t] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: reading the schema: %v", p.src, oneLine(err))
	}
	if !tables["alembic_version"] {
		if !tables["resource_providers"] {
			return fmt.Errorf("%s is not a Placement database (no alembic_version or resource_providers table); run `placement-manage db sync` to create one", p.src)
		}
		return fmt.Errorf("%s has no alembic_version table: not a schema Placement 8.0.0's `placement-manage db sync` made", p.src)
	}
	var rev string
	err = p.db.QueryRowContext(ctx, `SELECT version_num FROM alembic_version`).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: alembic_version is empty: the schema was never migrated (run `placement-manage db sync`)", p.src)
	}
	if err != nil {
		return fmt.Errorf("%s: reading alembic_version: %v", p.src, oneLine(err))
	}
	if rev != PlacementHead {
		for _, r := range placementRevisions {
			if r == rev {
				return fmt.Errorf("%s: Placement schema at revision %s, older than Placement 8.0.0's %s (half-way through an upgrade?); run `placement-manage db sync` first", p.src, rev, PlacementHead)
			}
		}
		return fmt.Errorf("%s: Placement schema revision %q is unknown to Berth, which knows Placement 8.0.0's %s", p.src, rev, PlacementHead)
	}
	var missing []string
	for _, t := range sortedKeys(placementColumns) {
		for _, c := range placementColumns[t] {
			if !have[t+"."+c] {
				missing = append(missing, t+"."+c)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: schema says revision %s but is half-migrated: missing %s", p.src, rev, strings.Join(missing, ", "))
	}
	return nil
}

// scrub removes the password of src from an error message, in case a
// driver quotes its connection string.
func scrub(err error, src Source) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	pw := ""
	if src.mysqlConfig != nil {
		pw = src.mysqlConfig.Passwd
	} else if cfg, perr := pgx.ParseConfig(src.pgURL); perr == nil {
		pw = cfg.Password
	}
	if pw != "" && strings.Contains(msg, pw) {
		return errors.New(strings.ReplaceAll(msg, pw, "xxxxx"))
	}
	return err
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
