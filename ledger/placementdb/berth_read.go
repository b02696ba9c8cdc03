package placementdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ReadBerth reads the Berth database at databaseURL into a Dump, in one
// repeatable-read transaction (a consistent view while berthd keeps
// writing). notExported lists, as one phrase, the Berth-only state that
// has no place in Placement's schema ("" when there is none).
func ReadBerth(ctx context.Context, databaseURL string) (d *Dump, notExported string, err error) {
	conn, err := connectBerth(ctx, databaseURL)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, "", fmt.Errorf("berth database %s: begin: %v", Redact(databaseURL), oneLine(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	r := &berthReader{tx: tx, databaseURL: databaseURL}
	d = &Dump{}
	if err := r.readNames(ctx, d); err != nil {
		return nil, "", err
	}
	for _, s := range berthScans(d) {
		if err := r.scan(ctx, s); err != nil {
			return nil, "", err
		}
	}
	if notExported, err = r.berthOnly(ctx); err != nil {
		return nil, "", err
	}
	return d, notExported, nil
}

// berthReader reads Berth's tables in ReadBerth's transaction.
type berthReader struct {
	tx          pgx.Tx
	databaseURL string
}

// fail is the error of reading what.
func (r *berthReader) fail(what string, err error) error {
	return fmt.Errorf("berth database %s: reading %s: %v", Redact(r.databaseURL), what, oneLine(err))
}

// readNames reads the resource classes, traits and consumer types, and
// the projects and users, into d.
func (r *berthReader) readNames(ctx context.Context, d *Dump) error {
	var err error
	if d.Classes, err = r.named(ctx, "resource_classes"); err != nil {
		return err
	}
	if d.Traits, err = r.named(ctx, "traits"); err != nil {
		return err
	}
	if d.ConsumerTypes, err = r.named(ctx, "consumer_types"); err != nil {
		return err
	}
	if d.Projects, err = r.externals(ctx, "projects"); err != nil {
		return err
	}
	d.Users, err = r.externals(ctx, "users")
	return err
}

// named reads a table of names (id, name and timestamps).
func (r *berthReader) named(ctx context.Context, table string) ([]NamedRow, error) {
	rows, err := r.tx.Query(ctx, `SELECT id, name, created_at, updated_at FROM `+table+` ORDER BY id`)
	if err != nil {
		return nil, r.fail(table, err)
	}
	var out []NamedRow
	var n NamedRow
	_, err = pgx.ForEachRow(rows, []any{&n.ID, &n.Name, &n.Created, &n.Updated}, func() error {
		n.Created, n.Updated = n.Created.UTC(), n.Updated.UTC()
		out = append(out, n)
		return nil
	})
	if err != nil {
		return nil, r.fail(table, err)
	}
	return out, nil
}

// externals reads a table of external ids (projects, users).
func (r *berthReader) externals(ctx context.Context, table string) ([]ExternalRow, error) {
	rows, err := r.tx.Query(ctx, `SELECT id, external_id FROM `+table+` ORDER BY id`)
	if err != nil {
		return nil, r.fail(table, err)
	}
	var out []ExternalRow
	var x ExternalRow
	if _, err := pgx.ForEachRow(rows, []any{&x.ID, &x.ExternalID}, func() error {
		out = append(out, x)
		return nil
	}); err != nil {
		return nil, r.fail(table, err)
	}
	return out, nil
}

// scanSpec is one query of ReadBerth: dest gives the scan targets, add
// appends the scanned row.
type scanSpec struct {
	what string
	sql  string
	dest func() []any
	add  func()
}

// berthScans are the queries of the tables with rows of their own, one
// per table, in the order ReadBerth reads them; each appends to d.
func berthScans(d *Dump) []scanSpec {
	var a AggregateRow
	var p ProviderRow
	var in InventoryRow
	var l LinkRow
	var c ConsumerRow
	var al AllocationRow
	return []scanSpec{
		{"aggregates", `SELECT id, uuid::text FROM placement_aggregates ORDER BY id`,
			func() []any { return []any{&a.ID, &a.UUID} }, func() { d.Aggregates = append(d.Aggregates, a) }},
		{"providers", `SELECT id, uuid::text, name, generation, root_provider_id, COALESCE(parent_provider_id, 0), created_at, updated_at FROM resource_providers ORDER BY id`,
			func() []any {
				return []any{&p.ID, &p.UUID, &p.Name, &p.Generation, &p.RootID, &p.ParentID, &p.Created, &p.Updated}
			}, func() { p.Stamps = utc(p.Stamps); d.Providers = append(d.Providers, p) }},
		{"inventories", `SELECT resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio, created_at, updated_at FROM inventories ORDER BY resource_provider_id, resource_class_id`,
			func() []any {
				return []any{&in.ProviderID, &in.ClassID, &in.Total, &in.Reserved, &in.MinUnit, &in.MaxUnit, &in.StepSize, &in.AllocationRatio, &in.Created, &in.Updated}
			}, func() { in.Stamps = utc(in.Stamps); d.Inventories = append(d.Inventories, in) }},
		{"provider traits", `SELECT resource_provider_id, trait_id FROM resource_provider_traits ORDER BY 1, 2`,
			func() []any { return []any{&l.A, &l.B} }, func() { d.ProviderTraits = append(d.ProviderTraits, l) }},
		{"provider aggregates", `SELECT resource_provider_id, aggregate_id FROM resource_provider_aggregates ORDER BY 1, 2`,
			func() []any { return []any{&l.A, &l.B} }, func() { d.ProviderAggregates = append(d.ProviderAggregates, l) }},
		{"consumers", `SELECT id, uuid::text, project_id, user_id, COALESCE(consumer_type_id, 0), generation, created_at, updated_at FROM consumers ORDER BY id`,
			func() []any {
				return []any{&c.ID, &c.UUID, &c.ProjectID, &c.UserID, &c.TypeID, &c.Generation, &c.Created, &c.Updated}
			}, func() { c.Stamps = utc(c.Stamps); d.Consumers = append(d.Consumers, c) }},
		{"allocations", `SELECT id, resource_provider_id, consumer_id, resource_class_id, used, created_at, updated_at FROM allocations ORDER BY id`,
			func() []any {
				return []any{&al.ID, &al.ProviderID, &al.ConsumerID, &al.ClassID, &al.Used, &al.Created, &al.Updated}
			}, func() { al.Stamps = utc(al.Stamps); d.Allocations = append(d.Allocations, al) }},
	}
}

// scan runs one of berthScans.
func (r *berthReader) scan(ctx context.Context, s scanSpec) error {
	rows, err := r.tx.Query(ctx, s.sql)
	if err != nil {
		return r.fail(s.what, err)
	}
	if _, err := pgx.ForEachRow(rows, s.dest(), func() error { s.add(); return nil }); err != nil {
		return r.fail(s.what, err)
	}
	return nil
}

// berthOnly counts the Berth-only state, which has no place in
// Placement's schema, and names it as one phrase ("" for none).
func (r *berthReader) berthOnly(ctx context.Context) (string, error) {
	var policies, scriptlets, config, states, pkeys, ckeys, failures, moves, stored, described, evacuated, gangs, preempted int64
	err := r.tx.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM scheduling_policies), (SELECT count(*) FROM scriptlets),
		(SELECT count(*) FROM config), (SELECT count(*) FROM provider_state),
		(SELECT count(*) FROM provider_placement_keys), (SELECT count(*) FROM consumer_placement_keys),
		(SELECT count(*) FROM claim_failures), (SELECT count(*) FROM claim_moves),
		(SELECT count(*) FROM claim_state),
		(SELECT count(*) FROM consumers WHERE name IS NOT NULL OR properties IS NOT NULL),
		(SELECT count(*) FROM provider_evacuations),
		(SELECT count(*) FROM gang_members), (SELECT count(*) FROM preemptions)`).
		Scan(&policies, &scriptlets, &config, &states, &pkeys, &ckeys, &failures, &moves, &stored, &described, &evacuated, &gangs, &preempted)
	if err != nil {
		return "", r.fail("Berth-only state", err)
	}
	var parts []string
	for _, x := range []struct {
		n    int64
		what string
	}{
		{policies, "scheduling policies"}, {scriptlets, "scriptlets"}, {config, "configuration settings"},
		{states, "agent reports (provider state)"}, {pkeys, "provider placement keys"},
		{ckeys, "consumer placement keys"}, {failures, "claim failures (reschedule history)"},
		{moves, "moves in progress (claim history)"}, {stored, "stored claims (their requests and leases)"},
		{described, "consumers' names and properties"}, {evacuated, "evacuated providers"},
		{gangs, "gang members (which gang each consumer is in)"}, {preempted, "preemption records"},
	} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	return strings.Join(parts, ", "), nil
}

func utc(s Stamps) Stamps { return Stamps{Created: s.Created.UTC(), Updated: s.Updated.UTC()} }
