package placementdb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// ImportParams says how WriteBerth treats the target.
type ImportParams struct {
	// Replace discards the target's providers, consumers, allocations,
	// custom classes and traits, aggregates, projects, users and consumer
	// types (and with them agents' reports, placement keys and claim
	// history) instead of refusing a non-empty target. Scheduling
	// policies, scriptlets and server configuration are kept.
	Replace bool
}

// WriteBerth migrates the Berth database at databaseURL (a no-op when it
// is current) and writes d into it in one transaction. It refuses, with
// nothing written, a target that already holds providers, consumers,
// aggregates or custom classes and traits (unless p.Replace) and a dump
// Berth's constraints would refuse. Ids of providers, aggregates,
// projects, users, consumer types, consumers and allocations are kept;
// classes and traits are matched by name. Running berthd processes are
// told to reload their snapshots, but restarting them is the documented
// step.
func WriteBerth(ctx context.Context, databaseURL string, d *Dump, p ImportParams) error {
	if err := checkBerthConstraints(d); err != nil {
		return err
	}
	red := Redact(databaseURL)
	conn, err := connectBerth(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := ledger.Migrate(ctx, databaseURL); err != nil {
		return fmt.Errorf("berth database %s: %v", red, oneLine(scrubURL(err, databaseURL)))
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("berth database %s: begin: %v", red, oneLine(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := berthEmpty(ctx, tx, p.Replace); err != nil {
		return err
	}
	if err := writeBerth(ctx, tx, d); err != nil {
		return translateBerth(err)
	}
	// The projects' usage counters, which the ledger's own writes keep.
	if err := quotas.RecountUsage(ctx, tx); err != nil {
		return fmt.Errorf("berth database %s: counting usage: %v", red, oneLine(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("berth database %s: commit: %v", red, oneLine(err))
	}
	return nil
}

func connectBerth(ctx context.Context, databaseURL string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("berth database url %s: %v", Redact(databaseURL), oneLine(scrubURL(err, databaseURL)))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = ConnectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to berth database %s: %v", Redact(databaseURL), oneLine(scrubURL(err, databaseURL)))
	}
	return conn, nil
}

func scrubURL(err error, databaseURL string) error {
	if cfg, perr := pgx.ParseConfig(databaseURL); perr == nil && cfg.Password != "" && strings.Contains(err.Error(), cfg.Password) {
		return errors.New(strings.ReplaceAll(err.Error(), cfg.Password, "xxxxx"))
	}
	return err
}

// checkBerthConstraints refuses, naming them, the rows Berth's unique
// constraints would: names and uuids Placement's MySQL collation took as
// different are compared exactly by Berth, so this fires only for sources
// that were already inconsistent.
func checkBerthConstraints(d *Dump) error {
	var dups []string
	dup := func(kind string, keys []string) {
		seen := map[string]int{}
		for _, k := range keys {
			seen[k]++
		}
		for k, n := range seen {
			if n > 1 {
				dups = append(dups, fmt.Sprintf("%s %q (%d times)", kind, k, n))
			}
		}
	}
	names := make([]string, len(d.Providers))
	uuids := make([]string, len(d.Providers))
	for i, p := range d.Providers {
		names[i], uuids[i] = p.Name, strings.ToLower(p.UUID)
	}
	dup("provider name", names)
	dup("provider uuid", uuids)
	cu := make([]string, len(d.Consumers))
	for i, c := range d.Consumers {
		cu[i] = strings.ToLower(c.UUID)
	}
	dup("consumer uuid", cu)
	// Aggregates are kept as spelled, as in Placement: 5F..A1 and 5f..a1
	// are two.
	au := make([]string, len(d.Aggregates))
	for i, a := range d.Aggregates {
		au[i] = a.UUID
	}
	dup("aggregate uuid", au)
	for _, ns := range []struct {
		kind string
		v    []NamedRow
	}{{"resource class", d.Classes}, {"trait", d.Traits}, {"consumer type", d.ConsumerTypes}} {
		k := make([]string, len(ns.v))
		for i, n := range ns.v {
			k[i] = n.Name
		}
		dup(ns.kind, k)
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		return &RowsError{Msg: fmt.Sprintf("the source holds %d duplicate names Berth's unique constraints refuse", len(dups)), Rows: dups}
	}
	return nil
}

// berthEmpty refuses a target holding Placement-shaped state, or clears
// it when replace is set.
func berthEmpty(ctx context.Context, tx pgx.Tx, replace bool) error {
	var providers, consumers, aggregates, classes, traits, others int64
	err := tx.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM resource_providers),
		(SELECT count(*) FROM consumers),
		(SELECT count(*) FROM placement_aggregates),
		(SELECT count(*) FROM resource_classes WHERE name LIKE 'CUSTOM\_%'),
		(SELECT count(*) FROM traits WHERE name LIKE 'CUSTOM\_%'),
		(SELECT count(*) FROM projects) + (SELECT count(*) FROM users) + (SELECT count(*) FROM consumer_types)`).
		Scan(&providers, &consumers, &aggregates, &classes, &traits, &others)
	if err != nil {
		return fmt.Errorf("berth database: checking that it is empty: %v", oneLine(err))
	}
	if providers+consumers+aggregates+classes+traits+others == 0 {
		return nil
	}
	if !replace {
		return fmt.Errorf("the berth database is not empty (%d providers, %d consumers, %d aggregates, %d custom classes, %d custom traits); import refuses to merge: pass --replace to discard that state",
			providers, consumers, aggregates, classes, traits)
	}
	_, err = tx.Exec(ctx, `
		TRUNCATE allocations, consumer_placement_keys, consumers, provider_placement_keys, provider_state, provider_evacuations,
			resource_provider_aggregates, resource_provider_traits, inventories, resource_providers,
			placement_aggregates, project_usages, projects, users, consumer_types, claim_failures, claim_moves,
			claim_requests, claim_state, gang_members, preemptions;
		DELETE FROM resource_classes WHERE name LIKE 'CUSTOM\_%';
		DELETE FROM traits WHERE name LIKE 'CUSTOM\_%'`)
	if err != nil {
		return fmt.Errorf("berth database: --replace: clearing it: %v", oneLine(err))
	}
	return nil
}

// writeBerth writes d into the target in tx: the standard classes and
// traits, d's classes and traits (matched by name), every other table
// in one bulk load, the sequences past the imported ids, and a notice to
// the berthd processes running.
func writeBerth(ctx context.Context, tx pgx.Tx, d *Dump) error {
	if err := writeStandardNames(ctx, tx); err != nil {
		return err
	}
	classMap, err := berthNamed(ctx, tx, d.Classes, "resource_classes", true)
	if err != nil {
		return err
	}
	traitMap, err := berthNamed(ctx, tx, d.Traits, "traits", false)
	if err != nil {
		return err
	}
	if err := copyTables(ctx, tx, berthCopies(d, classMap, traitMap)); err != nil {
		return err
	}
	if err := advanceSequences(ctx, tx); err != nil {
		return err
	}
	// berthd processes already running reload their snapshots on commit.
	if _, err := tx.Exec(ctx, `SELECT pg_notify('berth_ledger', 'import:*')`); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// writeStandardNames adds the standard classes (at their fixed ids) and
// traits, as ledger.Open would.
func writeStandardNames(ctx context.Context, tx pgx.Tx) error {
	ids := make([]int32, len(resources.StandardClasses))
	for i := range ids {
		ids[i] = int32(i)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO resource_classes (id, name) SELECT * FROM unnest($1::int[], $2::text[]) ON CONFLICT DO NOTHING`,
		ids, resources.StandardClasses); err != nil {
		return fmt.Errorf("standard classes: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO traits (name)
		SELECT n FROM unnest($1::text[]) WITH ORDINALITY AS t(n, i)
		WHERE NOT EXISTS (SELECT 1 FROM traits WHERE name = n) ORDER BY i`, resources.StandardTraits); err != nil {
		return fmt.Errorf("standard traits: %w", err)
	}
	return nil
}

// tableCopy is one table of the bulk load: its columns and rows.
type tableCopy struct {
	table string
	cols  []string
	rows  pgx.CopyFromSource
}

// berthCopies are the tables of d the bulk load writes, one entry per
// table, tables others point at first; classMap and traitMap map d's
// class and trait ids to the target's.
func berthCopies(d *Dump, classMap, traitMap map[int64]int64) []tableCopy {
	return []tableCopy{
		{"projects", []string{"id", "external_id"}, pgx.CopyFromSlice(len(d.Projects), func(i int) ([]any, error) {
			return []any{d.Projects[i].ID, d.Projects[i].ExternalID}, nil
		})},
		{"users", []string{"id", "external_id"}, pgx.CopyFromSlice(len(d.Users), func(i int) ([]any, error) {
			return []any{d.Users[i].ID, d.Users[i].ExternalID}, nil
		})},
		{"consumer_types", []string{"id", "name", "created_at", "updated_at"}, pgx.CopyFromSlice(len(d.ConsumerTypes), func(i int) ([]any, error) {
			c := d.ConsumerTypes[i]
			return []any{c.ID, c.Name, c.Created, c.Updated}, nil
		})},
		{"placement_aggregates", []string{"id", "uuid"}, pgx.CopyFromSlice(len(d.Aggregates), func(i int) ([]any, error) {
			return []any{d.Aggregates[i].ID, d.Aggregates[i].UUID}, nil
		})},
		{"resource_providers", []string{"id", "uuid", "name", "generation", "root_provider_id", "parent_provider_id", "created_at", "updated_at"},
			pgx.CopyFromSlice(len(d.Providers), func(i int) ([]any, error) {
				p := d.Providers[i]
				return []any{p.ID, p.UUID, p.Name, p.Generation, p.RootID, nullID(p.ParentID), p.Created, p.Updated}, nil
			})},
		{"inventories", []string{"resource_provider_id", "resource_class_id", "total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio", "created_at", "updated_at"},
			pgx.CopyFromSlice(len(d.Inventories), func(i int) ([]any, error) {
				v := d.Inventories[i]
				return []any{v.ProviderID, classMap[v.ClassID], v.Total, v.Reserved, v.MinUnit, v.MaxUnit, v.StepSize, v.AllocationRatio, v.Created, v.Updated}, nil
			})},
		{"resource_provider_traits", []string{"resource_provider_id", "trait_id"}, pgx.CopyFromSlice(len(d.ProviderTraits), func(i int) ([]any, error) {
			return []any{d.ProviderTraits[i].A, traitMap[d.ProviderTraits[i].B]}, nil
		})},
		{"resource_provider_aggregates", []string{"resource_provider_id", "aggregate_id"}, pgx.CopyFromSlice(len(d.ProviderAggregates), func(i int) ([]any, error) {
			return []any{d.ProviderAggregates[i].A, d.ProviderAggregates[i].B}, nil
		})},
		{"consumers", []string{"id", "uuid", "project_id", "user_id", "consumer_type_id", "generation", "created_at", "updated_at"},
			pgx.CopyFromSlice(len(d.Consumers), func(i int) ([]any, error) {
				c := d.Consumers[i]
				return []any{c.ID, c.UUID, c.ProjectID, c.UserID, nullID(c.TypeID), c.Generation, c.Created, c.Updated}, nil
			})},
		{"allocations", []string{"id", "resource_provider_id", "consumer_id", "resource_class_id", "used", "created_at", "updated_at"},
			pgx.CopyFromSlice(len(d.Allocations), func(i int) ([]any, error) {
				a := d.Allocations[i]
				return []any{a.ID, a.ProviderID, a.ConsumerID, classMap[a.ClassID], a.Used, a.Created, a.Updated}, nil
			})},
	}
}

// copyTables bulk-loads copies, in order, with the foreign keys of their
// tables dropped for the load and added back after it, which checks
// every row loaded.
func copyTables(ctx context.Context, tx pgx.Tx, copies []tableCopy) error {
	tables := make([]string, len(copies))
	for i, c := range copies {
		tables[i] = c.table
	}
	fks, err := dropForeignKeys(ctx, tx, tables)
	if err != nil {
		return err
	}
	for _, c := range copies {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, c.rows); err != nil {
			return fmt.Errorf("writing %s: %w", c.table, err)
		}
	}
	return restoreForeignKeys(ctx, tx, fks)
}

// advanceSequences makes the sequences continue after the imported ids,
// so that rows Berth creates next do not collide with them.
func advanceSequences(ctx context.Context, tx pgx.Tx) error {
	for _, t := range []string{"resource_providers", "placement_aggregates", "projects", "users", "consumer_types", "consumers", "allocations", "traits"} {
		if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), COALESCE((SELECT max(id) FROM `+t+`), 0) + 1, false)`, t); err != nil {
			return fmt.Errorf("sequence of %s: %w", t, err)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT setval('resource_classes_custom_id_seq', GREATEST((SELECT max(id) FROM resource_classes) + 1, $1), false)`, resources.CustomClassMinID); err != nil {
		return fmt.Errorf("sequence of resource classes: %w", err)
	}
	return nil
}

// foreignKey is a constraint dropped for the bulk load.
type foreignKey struct{ table, name, def string }

// dropForeignKeys drops the foreign keys of tables (inside the import's
// transaction, so a failure restores them with everything else).
// PostgreSQL checks a foreign key row by row, one query per row and
// constraint, which made loading a million allocations take minutes;
// adding the constraint back checks every row in one join. The
// definitions are read from the catalog, so they come back exactly as
// the migrations made them.
func dropForeignKeys(ctx context.Context, tx pgx.Tx, tables []string) ([]foreignKey, error) {
	rows, err := tx.Query(ctx, `
		SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)
		FROM pg_constraint c
		WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY($1)
		ORDER BY 1, 2`, tables)
	if err != nil {
		return nil, fmt.Errorf("reading foreign keys: %w", err)
	}
	var fks []foreignKey
	var fk foreignKey
	if _, err := pgx.ForEachRow(rows, []any{&fk.table, &fk.name, &fk.def}, func() error {
		fks = append(fks, fk)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading foreign keys: %w", err)
	}
	for _, fk := range fks {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+pgx.Identifier{fk.table}.Sanitize()+` DROP CONSTRAINT `+pgx.Identifier{fk.name}.Sanitize()); err != nil {
			return nil, fmt.Errorf("dropping %s: %w", fk.name, err)
		}
	}
	return fks, nil
}

// restoreForeignKeys adds back what dropForeignKeys dropped, which checks
// every loaded row.
func restoreForeignKeys(ctx context.Context, tx pgx.Tx, fks []foreignKey) error {
	for _, fk := range fks {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+pgx.Identifier{fk.table}.Sanitize()+` ADD CONSTRAINT `+pgx.Identifier{fk.name}.Sanitize()+` `+fk.def); err != nil {
			return fmt.Errorf("checking %s: %w", fk.name, err)
		}
	}
	return nil
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// berthNamed makes every class (or trait) of src exist in the target by
// name, with src's timestamps, and returns the map from src's ids to the
// target's. A custom class keeps its id when it is free.
func berthNamed(ctx context.Context, tx pgx.Tx, src []NamedRow, table string, classes bool) (map[int64]int64, error) {
	have := map[string]int64{}
	rows, err := tx.Query(ctx, `SELECT id, name FROM `+table)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	used := map[int64]bool{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, err
		}
		have[name] = id
		used[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(src))
	var names []string
	var created, updated []time.Time
	for _, n := range src {
		names = append(names, n.Name)
		created = append(created, n.Created)
		updated = append(updated, n.Updated)
		if id, ok := have[n.Name]; ok {
			out[n.ID] = id
			continue
		}
		var id int64
		switch {
		case classes && n.ID >= resources.CustomClassMinID && !used[n.ID]:
			id = n.ID
			err = tx.QueryRow(ctx, `INSERT INTO resource_classes (id, name) VALUES ($1, $2) RETURNING id`, id, n.Name).Scan(&id)
		case classes:
			err = tx.QueryRow(ctx, `INSERT INTO resource_classes (id, name) VALUES (nextval('resource_classes_custom_id_seq'), $1) RETURNING id`, n.Name).Scan(&id)
		default:
			err = tx.QueryRow(ctx, `INSERT INTO traits (name) VALUES ($1) RETURNING id`, n.Name).Scan(&id)
		}
		if err != nil {
			return nil, fmt.Errorf("adding %s %q: %w", table, n.Name, err)
		}
		used[id] = true
		out[n.ID] = id
	}
	if _, err := tx.Exec(ctx, `UPDATE `+table+` t SET created_at = s.c, updated_at = s.u
		FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS s(n, c, u) WHERE t.name = s.n`, names, created, updated); err != nil {
		return nil, fmt.Errorf("timestamps of %s: %w", table, err)
	}
	return out, nil
}

// translateBerth turns a constraint violation into one line that says
// which row the target refused.
func translateBerth(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Detail != "" {
			msg += ": " + pe.Detail
		}
		return fmt.Errorf("the berth database refused the import (nothing written): %s", oneLine(errors.New(msg)))
	}
	return fmt.Errorf("import failed (nothing written): %v", oneLine(err))
}
