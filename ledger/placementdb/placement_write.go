package placementdb

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// WritePlacement writes d into the Placement database at dst, whose schema
// `placement-manage db sync` created (revision PlacementHead), in one
// transaction. It refuses, before writing anything, a target holding
// providers, consumers, allocations or custom classes and traits; values
// Placement's 32-bit integer columns cannot hold; and on MySQL/MariaDB,
// names its collation would take as equal and 4-byte characters a utf8mb3
// column cannot store, listing them. Classes and traits already in the
// target (Placement adds the standard ones when it starts) are matched by
// name; standard classes keep their fixed ids (0 for VCPU, which MySQL
// writes only under NO_AUTO_VALUE_ON_ZERO).
func WritePlacement(ctx context.Context, dst Source, d *Dump) error {
	if err := checkInt32(d); err != nil {
		return err
	}
	p, err := openPlacement(ctx, dst)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.checkSchema(ctx); err != nil {
		return err
	}
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("%s: %v", dst, oneLine(err))
	}
	defer conn.Close()
	if dst.Dialect == MySQL {
		if err := p.checkMySQLNames(ctx, conn, d); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, `SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_AUTO_VALUE_ON_ZERO')`); err != nil {
			return fmt.Errorf("%s: setting NO_AUTO_VALUE_ON_ZERO: %v", dst, oneLine(err))
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %v", dst, oneLine(err))
	}
	defer tx.Rollback()
	w := &pwriter{tx: tx, dialect: dst.Dialect}
	if err := w.checkEmpty(ctx); err != nil {
		return fmt.Errorf("%s: %v", dst, err)
	}
	if err := w.write(ctx, d); err != nil {
		return fmt.Errorf("%s: export failed (nothing written): %v", dst, oneLine(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %v", dst, oneLine(err))
	}
	return nil
}

// checkInt32 refuses values Placement's Integer columns cannot hold.
func checkInt32(d *Dump) error {
	var bad []string
	big := func(v int64) bool { return v > math.MaxInt32 || v < math.MinInt32 }
	for _, p := range d.Providers {
		if big(p.ID) || big(p.Generation) {
			bad = append(bad, fmt.Sprintf("provider %s: id %d or generation %d", p.UUID, p.ID, p.Generation))
		}
	}
	for _, in := range d.Inventories {
		if big(in.Total) || big(in.Reserved) || big(in.MinUnit) || big(in.MaxUnit) || big(in.StepSize) {
			bad = append(bad, fmt.Sprintf("inventory of class id %d on provider id %d: total %d", in.ClassID, in.ProviderID, in.Total))
		}
	}
	for _, a := range d.Allocations {
		if big(a.ID) || big(a.Used) {
			bad = append(bad, fmt.Sprintf("allocation id %d: used %d", a.ID, a.Used))
		}
	}
	for _, c := range d.Consumers {
		if big(c.ID) || big(c.Generation) {
			bad = append(bad, fmt.Sprintf("consumer %s: id %d or generation %d", c.UUID, c.ID, c.Generation))
		}
	}
	if len(bad) > 0 {
		return &RowsError{Msg: fmt.Sprintf("%d values exceed Placement's 32-bit integer columns; nothing written", len(bad)), Rows: bad}
	}
	return nil
}

// nameKinds are the names MySQL's collation and character set constrain,
// with the column that holds them.
func nameKinds(d *Dump) []struct {
	kind, table string
	names       []string
} {
	get := func(ns []NamedRow) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n.Name
		}
		return out
	}
	provs := make([]string, len(d.Providers))
	for i, p := range d.Providers {
		provs[i] = p.Name
	}
	ext := func(es []ExternalRow) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = e.ExternalID
		}
		return out
	}
	return []struct {
		kind, table string
		names       []string
	}{
		{"provider name", "resource_providers", provs},
		{"resource class", "resource_classes", get(d.Classes)},
		{"trait", "traits", get(d.Traits)},
		{"consumer type", "consumer_types", get(d.ConsumerTypes)},
		{"project", "projects", ext(d.Projects)},
		{"user", "users", ext(d.Users)},
	}
}

// checkMySQLNames refuses names the target's columns cannot keep apart or
// cannot store. It asks the server itself, so the answer is the target
// collation's (utf8mb3_general_ci also equates accented letters, for
// instance), not a guess at it.
func (p *placementDB) checkMySQLNames(ctx context.Context, conn *sql.Conn, d *Dump) error {
	var bad []string
	for i, k := range nameKinds(d) {
		col := "name"
		if k.table == "projects" || k.table == "users" {
			col = "external_id"
		}
		var charset, collation string
		err := conn.QueryRowContext(ctx, `SELECT character_set_name, collation_name FROM information_schema.columns
			WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?`, k.table, col).Scan(&charset, &collation)
		if err != nil {
			return fmt.Errorf("%s: reading the collation of %s.%s: %v", p.src, k.table, col, oneLine(err))
		}
		if charset != "utf8mb4" {
			for _, n := range k.names {
				if has4Byte(n) {
					bad = append(bad, fmt.Sprintf("%s %q: a 4-byte character %s.%s (%s) cannot store", k.kind, n, k.table, col, charset))
				}
			}
		}
		if len(k.names) < 2 {
			continue
		}
		tmp := "berth_export_names_" + strconv.Itoa(i)
		if _, err := conn.ExecContext(ctx, `CREATE TEMPORARY TABLE `+tmp+` (name VARCHAR(255) CHARACTER SET `+charset+` COLLATE `+collation+` NOT NULL)`); err != nil {
			return fmt.Errorf("%s: checking names: %v", p.src, oneLine(err))
		}
		var fits []any
		for _, n := range k.names {
			if charset == "utf8mb4" || !has4Byte(n) {
				fits = append(fits, n)
			}
		}
		for start := 0; start < len(fits); start += 1000 {
			end := min(start+1000, len(fits))
			q := `INSERT INTO ` + tmp + ` (name) VALUES ` + strings.TrimSuffix(strings.Repeat("(?),", end-start), ",")
			if _, err := conn.ExecContext(ctx, q, fits[start:end]...); err != nil {
				return fmt.Errorf("%s: checking names: %v", p.src, oneLine(err))
			}
		}
		rows, err := conn.QueryContext(ctx, `SELECT GROUP_CONCAT(CONCAT('"', name, '"') ORDER BY BINARY name SEPARATOR ', ') FROM `+tmp+` GROUP BY name HAVING COUNT(*) > 1`)
		if err != nil {
			return fmt.Errorf("%s: checking names: %v", p.src, oneLine(err))
		}
		for rows.Next() {
			var same string
			if err := rows.Scan(&same); err != nil {
				rows.Close()
				return err
			}
			bad = append(bad, fmt.Sprintf("%s names %s are one name under %s", k.kind, same, collation))
		}
		rows.Close()
		if _, err := conn.ExecContext(ctx, `DROP TEMPORARY TABLE `+tmp); err != nil {
			return fmt.Errorf("%s: checking names: %v", p.src, oneLine(err))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return &RowsError{Msg: fmt.Sprintf("%s cannot hold %d of Berth's names (listed above); nothing written: rename them in Berth first", p.src, len(bad)), Rows: bad}
	}
	return nil
}

func has4Byte(s string) bool {
	for _, r := range s {
		if utf8.RuneLen(r) == 4 {
			return true
		}
	}
	return false
}

// pwriter writes into a Placement database inside one transaction.
type pwriter struct {
	tx      *sql.Tx
	dialect Dialect
}

func (w *pwriter) checkEmpty(ctx context.Context) error {
	var n int64
	err := w.tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM resource_providers) + (SELECT count(*) FROM consumers) +
		(SELECT count(*) FROM allocations) + (SELECT count(*) FROM inventories) +
		(SELECT count(*) FROM placement_aggregates) + (SELECT count(*) FROM projects) +
		(SELECT count(*) FROM users) + (SELECT count(*) FROM consumer_types) +
		(SELECT count(*) FROM resource_classes WHERE name LIKE 'CUSTOM\_%') +
		(SELECT count(*) FROM traits WHERE name LIKE 'CUSTOM\_%')`).Scan(&n)
	if err != nil {
		return fmt.Errorf("checking that it is empty: %v", oneLine(err))
	}
	if n > 0 {
		return fmt.Errorf("the Placement database is not empty (%d rows of providers, consumers, allocations, custom classes or traits); export writes only into a database fresh from `placement-manage db sync`", n)
	}
	return nil
}

// insert writes rows in multi-row INSERT statements.
func (w *pwriter) insert(ctx context.Context, table string, cols []string, n int, row func(i int) []any) error {
	per := max(1, min(1000, 60000/len(cols)))
	for start := 0; start < n; start += per {
		end := min(start+per, n)
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
		args := make([]any, 0, (end-start)*len(cols))
		for i := start; i < end; i++ {
			if i > start {
				b.WriteByte(',')
			}
			b.WriteByte('(')
			for j := range cols {
				if j > 0 {
					b.WriteByte(',')
				}
				if w.dialect == MySQL {
					b.WriteByte('?')
				} else {
					b.WriteString("$" + strconv.Itoa(len(args)+j+1))
				}
			}
			b.WriteByte(')')
			args = append(args, row(i)...)
		}
		if _, err := w.tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("writing %s: %v", table, err)
		}
	}
	return nil
}

func (w *pwriter) names(ctx context.Context, table string) (map[string]int64, map[int64]bool, error) {
	rows, err := w.tx.QueryContext(ctx, `SELECT id, name FROM `+table)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	byName, ids := map[string]int64{}, map[int64]bool{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, nil, err
		}
		byName[name], ids[id] = id, true
	}
	return byName, ids, rows.Err()
}

// named makes src's classes or traits exist by name with their
// timestamps and returns the map from src's ids to the target's.
// withIDs keeps src's ids (classes); traits take the target's.
func (w *pwriter) named(ctx context.Context, table string, src []NamedRow, withIDs bool) (map[int64]int64, error) {
	have, used, err := w.names(ctx, table)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", table, err)
	}
	var add []NamedRow
	next := int64(10000)
	for id := range used {
		next = max(next, id+1)
	}
	for _, n := range src {
		if _, ok := have[n.Name]; ok {
			continue
		}
		if withIDs && used[n.ID] {
			n.ID = next
			next++
		}
		used[n.ID] = true
		add = append(add, n)
	}
	cols := []string{"name", "created_at", "updated_at"}
	if withIDs {
		cols = append(cols, "id")
	}
	if err := w.insert(ctx, table, cols, len(add), func(i int) []any {
		r := []any{add[i].Name, add[i].Created, add[i].Updated}
		if withIDs {
			r = append(r, add[i].ID)
		}
		return r
	}); err != nil {
		return nil, err
	}
	// Rows that were there (the standard ones) take Berth's timestamps,
	// which came from Placement at import.
	upd := `UPDATE ` + table + ` SET created_at = ?, updated_at = ? WHERE name = ?`
	if w.dialect == Postgres {
		upd = `UPDATE ` + table + ` SET created_at = $1, updated_at = $2 WHERE name = $3`
	}
	for _, n := range src {
		if _, ok := have[n.Name]; ok {
			if _, err := w.tx.ExecContext(ctx, upd, n.Created, n.Updated, n.Name); err != nil {
				return nil, fmt.Errorf("timestamps of %s: %v", table, err)
			}
		}
	}
	have, _, err = w.names(ctx, table)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", table, err)
	}
	out := make(map[int64]int64, len(src))
	for _, n := range src {
		out[n.ID] = have[n.Name]
	}
	return out, nil
}

func (w *pwriter) write(ctx context.Context, d *Dump) error {
	classMap, err := w.named(ctx, "resource_classes", d.Classes, true)
	if err != nil {
		return err
	}
	traitMap, err := w.named(ctx, "traits", d.Traits, false)
	if err != nil {
		return err
	}
	ts := func(s Stamps) (time.Time, time.Time) { return s.Created.UTC(), s.Updated.UTC() }
	if err := w.insert(ctx, "projects", []string{"id", "external_id"}, len(d.Projects), func(i int) []any {
		return []any{d.Projects[i].ID, d.Projects[i].ExternalID}
	}); err != nil {
		return err
	}
	if err := w.insert(ctx, "users", []string{"id", "external_id"}, len(d.Users), func(i int) []any {
		return []any{d.Users[i].ID, d.Users[i].ExternalID}
	}); err != nil {
		return err
	}
	if err := w.insert(ctx, "consumer_types", []string{"id", "name", "created_at", "updated_at"}, len(d.ConsumerTypes), func(i int) []any {
		c, u := ts(d.ConsumerTypes[i].Stamps)
		return []any{d.ConsumerTypes[i].ID, d.ConsumerTypes[i].Name, c, u}
	}); err != nil {
		return err
	}
	if err := w.insert(ctx, "placement_aggregates", []string{"id", "uuid"}, len(d.Aggregates), func(i int) []any {
		return []any{d.Aggregates[i].ID, d.Aggregates[i].UUID}
	}); err != nil {
		return err
	}
	// Parents before children: the self-references are checked row by row.
	provs := byDepth(d.Providers)
	if err := w.insert(ctx, "resource_providers", []string{"id", "uuid", "name", "generation", "root_provider_id", "parent_provider_id", "created_at", "updated_at"}, len(provs), func(i int) []any {
		p := provs[i]
		c, u := ts(p.Stamps)
		return []any{p.ID, p.UUID, p.Name, p.Generation, p.RootID, nullID(p.ParentID), c, u}
	}); err != nil {
		return err
	}
	if err := w.insert(ctx, "inventories", []string{"resource_provider_id", "resource_class_id", "total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio", "created_at", "updated_at"}, len(d.Inventories), func(i int) []any {
		v := d.Inventories[i]
		c, u := ts(v.Stamps)
		return []any{v.ProviderID, classMap[v.ClassID], v.Total, v.Reserved, v.MinUnit, v.MaxUnit, v.StepSize, v.AllocationRatio, c, u}
	}); err != nil {
		return err
	}
	if err := w.insert(ctx, "resource_provider_traits", []string{"resource_provider_id", "trait_id"}, len(d.ProviderTraits), func(i int) []any {
		return []any{d.ProviderTraits[i].A, traitMap[d.ProviderTraits[i].B]}
	}); err != nil {
		return err
	}
	if err := w.insert(ctx, "resource_provider_aggregates", []string{"resource_provider_id", "aggregate_id"}, len(d.ProviderAggregates), func(i int) []any {
		return []any{d.ProviderAggregates[i].A, d.ProviderAggregates[i].B}
	}); err != nil {
		return err
	}
	if err := w.insert(ctx, "consumers", []string{"id", "uuid", "project_id", "user_id", "generation", "consumer_type_id", "created_at", "updated_at"}, len(d.Consumers), func(i int) []any {
		k := d.Consumers[i]
		c, u := ts(k.Stamps)
		return []any{k.ID, k.UUID, k.ProjectID, k.UserID, k.Generation, nullID(k.TypeID), c, u}
	}); err != nil {
		return err
	}
	uuidOf := make(map[int64]string, len(d.Consumers))
	for _, c := range d.Consumers {
		uuidOf[c.ID] = c.UUID
	}
	if err := w.insert(ctx, "allocations", []string{"id", "resource_provider_id", "consumer_id", "resource_class_id", "used", "created_at", "updated_at"}, len(d.Allocations), func(i int) []any {
		a := d.Allocations[i]
		c, u := ts(a.Stamps)
		return []any{a.ID, a.ProviderID, uuidOf[a.ConsumerID], classMap[a.ClassID], a.Used, c, u}
	}); err != nil {
		return err
	}
	if w.dialect == Postgres {
		// Explicit ids do not advance PostgreSQL's sequences.
		for _, t := range []string{"resource_classes", "traits", "projects", "users", "consumer_types", "placement_aggregates", "resource_providers", "inventories", "consumers", "allocations"} {
			if _, err := w.tx.ExecContext(ctx, `SELECT setval(s, COALESCE((SELECT max(id) FROM `+t+`), 0) + 1, false)
				FROM (SELECT pg_get_serial_sequence($1, 'id') AS s) q WHERE s IS NOT NULL`, t); err != nil {
				return fmt.Errorf("sequence of %s: %v", t, err)
			}
		}
	}
	return nil
}

// byDepth orders providers roots first, then their children, and so on.
func byDepth(ps []ProviderRow) []ProviderRow {
	parent := make(map[int64]int64, len(ps))
	for _, p := range ps {
		parent[p.ID] = p.ParentID
	}
	depth := func(id int64) int {
		n := 0
		for id = parent[id]; id != 0 && n < len(ps); id = parent[id] {
			n++
		}
		return n
	}
	out := make([]ProviderRow, len(ps))
	copy(out, ps)
	ds := make(map[int64]int, len(ps))
	for _, p := range ps {
		ds[p.ID] = depth(p.ID)
	}
	sort.SliceStable(out, func(i, j int) bool { return ds[out[i].ID] < ds[out[j].ID] })
	return out
}
