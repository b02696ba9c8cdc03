package placementdb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	berthuuid "github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/resources"
)

// ReadPlacement reads the Placement database at src into a Dump after
// checking its schema (see checkSchema). Rows that point at nothing
// (Placement's allocations, inventories and aggregate links have no
// foreign keys, so real databases hold such rows) are left out of the
// dump and listed in orphans, one line each. Rows Berth cannot represent
// at all (a provider without a name or root, an id that is not a UUID)
// make it fail.
func ReadPlacement(ctx context.Context, src Source) (d *Dump, orphans []string, err error) {
	p, err := openPlacement(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	if err := p.checkSchema(ctx); err != nil {
		return nil, nil, err
	}
	// One consistent view when the engine offers it (InnoDB: a
	// consistent snapshot; PostgreSQL: a repeatable-read transaction).
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: begin: %v", src, oneLine(err))
	}
	defer tx.Rollback()
	r := &reader{tx: tx, src: src, now: time.Now().UTC(), d: &Dump{}}
	if err := r.readAll(ctx); err != nil {
		return nil, nil, err
	}
	return r.d, r.orphans, nil
}

type reader struct {
	tx      *sql.Tx
	src     Source
	now     time.Time
	d       *Dump
	orphans []string
	// bad lists the rows Berth cannot represent, one line each.
	bad []string
	// known holds the ids of the rows read so far that later rows
	// point at.
	known struct {
		classes, traits, types, projects, users, providers, aggregates map[int64]bool
	}
}

// query runs q and calls scan for each row with a scanner for its columns.
func (r *reader) query(ctx context.Context, what, q string, scan func(*sql.Rows) error) error {
	rows, err := r.tx.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: reading %s: %v", r.src, what, oneLine(err))
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("%s: reading %s: %v", r.src, what, oneLine(err))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: reading %s: %v", r.src, what, oneLine(err))
	}
	return nil
}

func (r *reader) stamps(c, u sql.NullTime) Stamps {
	var cp, up *time.Time
	if c.Valid {
		cp = &c.Time
	}
	if u.Valid {
		up = &u.Time
	}
	return stamps(cp, up, r.now)
}

func (r *reader) named(ctx context.Context, table string) ([]NamedRow, error) {
	var out []NamedRow
	err := r.query(ctx, table, `SELECT id, name, created_at, updated_at FROM `+table+` ORDER BY id`, func(rows *sql.Rows) error {
		var n NamedRow
		var c, u sql.NullTime
		if err := rows.Scan(&n.ID, &n.Name, &c, &u); err != nil {
			return err
		}
		n.Stamps = r.stamps(c, u)
		out = append(out, n)
		return nil
	})
	return out, err
}

func (r *reader) externals(ctx context.Context, table string) ([]ExternalRow, error) {
	var out []ExternalRow
	err := r.query(ctx, table, `SELECT id, external_id FROM `+table+` ORDER BY id`, func(rows *sql.Rows) error {
		var e ExternalRow
		if err := rows.Scan(&e.ID, &e.ExternalID); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// readAll reads every table into r.d, one function per table, tables
// that others point at first: a row that points at nothing is left out
// (listed in r.orphans) as it is read, and a row Berth cannot represent
// is listed in r.bad, which fails the read once every table is read.
func (r *reader) readAll(ctx context.Context) error {
	if err := r.readNames(ctx); err != nil {
		return err
	}
	if err := r.readProviders(ctx); err != nil {
		return err
	}
	if err := r.readInventories(ctx); err != nil {
		return err
	}
	if err := r.readProviderTraits(ctx); err != nil {
		return err
	}
	if err := r.readAggregates(ctx); err != nil {
		return err
	}
	if err := r.readProviderAggregates(ctx); err != nil {
		return err
	}
	consumerByUUID, err := r.readConsumers(ctx)
	if err != nil {
		return err
	}
	holds, err := r.readAllocations(ctx, consumerByUUID)
	if err != nil {
		return err
	}
	r.dropIdleConsumers(holds)
	if len(r.bad) > 0 {
		sort.Strings(r.bad)
		return &RowsError{Msg: fmt.Sprintf("%s holds %d rows Berth cannot represent", r.src, len(r.bad)), Rows: r.bad}
	}
	return nil
}

// readNames reads the resource classes (with the standard ones the
// table lacks), traits, consumer types, projects and users.
func (r *reader) readNames(ctx context.Context) error {
	d := r.d
	var err error
	if d.Classes, err = r.named(ctx, "resource_classes"); err != nil {
		return err
	}
	// Placement gives standard classes fixed ids (their index in
	// os-resource-classes, the list Berth's is) and adds them to the table
	// when it first starts: a database `placement-manage db sync` made but
	// no Placement served yet lacks them, and its rows may still use them.
	have := map[int64]bool{}
	for _, c := range d.Classes {
		have[c.ID] = true
	}
	for i, name := range resources.StandardClasses {
		if !have[int64(i)] {
			d.Classes = append(d.Classes, NamedRow{ID: int64(i), Name: name, Stamps: Stamps{Created: r.now, Updated: r.now}})
		}
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
	if d.Users, err = r.externals(ctx, "users"); err != nil {
		return err
	}
	r.known.classes = idSet(len(d.Classes), func(i int) int64 { return d.Classes[i].ID })
	r.known.traits = idSet(len(d.Traits), func(i int) int64 { return d.Traits[i].ID })
	r.known.types = idSet(len(d.ConsumerTypes), func(i int) int64 { return d.ConsumerTypes[i].ID })
	r.known.projects = idSet(len(d.Projects), func(i int) int64 { return d.Projects[i].ID })
	r.known.users = idSet(len(d.Users), func(i int) int64 { return d.Users[i].ID })
	return nil
}

// readProviders reads resource_providers: a provider without a name or
// root, or whose uuid is not a UUID, or whose root or parent does not
// exist, is bad.
func (r *reader) readProviders(ctx context.Context) error {
	d := r.d
	err := r.query(ctx, "resource_providers", `SELECT id, uuid, name, generation, root_provider_id, parent_provider_id, created_at, updated_at FROM resource_providers ORDER BY id`, func(rows *sql.Rows) error {
		var p ProviderRow
		var name sql.NullString
		var gen, root, parent sql.NullInt64
		var c, u sql.NullTime
		if err := rows.Scan(&p.ID, &p.UUID, &name, &gen, &root, &parent, &c, &u); err != nil {
			return err
		}
		switch {
		case !name.Valid:
			r.bad = append(r.bad, fmt.Sprintf("provider %s has no name", p.UUID))
		case !root.Valid:
			r.bad = append(r.bad, fmt.Sprintf("provider %s has no root provider", p.UUID))
		}
		if _, err := uuid.Parse(p.UUID); err != nil {
			r.bad = append(r.bad, fmt.Sprintf("provider id %d: uuid %q is not a UUID", p.ID, p.UUID))
		}
		p.Name, p.Generation, p.RootID, p.ParentID = name.String, gen.Int64, root.Int64, parent.Int64
		p.Stamps = r.stamps(c, u)
		d.Providers = append(d.Providers, p)
		return nil
	})
	if err != nil {
		return err
	}
	providers := idSet(len(d.Providers), func(i int) int64 { return d.Providers[i].ID })
	for _, p := range d.Providers {
		if p.RootID != 0 && !providers[p.RootID] {
			r.bad = append(r.bad, fmt.Sprintf("provider %s: root provider id %d does not exist", p.UUID, p.RootID))
		}
		if p.ParentID != 0 && !providers[p.ParentID] {
			r.bad = append(r.bad, fmt.Sprintf("provider %s: parent provider id %d does not exist", p.UUID, p.ParentID))
		}
	}
	r.known.providers = providers
	return nil
}

// readInventories reads inventories; one of a provider or class that
// does not exist is an orphan.
func (r *reader) readInventories(ctx context.Context) error {
	d, mysqlFloat := r.d, r.src.Dialect == MySQL
	return r.query(ctx, "inventories", `SELECT resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio, created_at, updated_at FROM inventories ORDER BY resource_provider_id, resource_class_id`, func(rows *sql.Rows) error {
		var in InventoryRow
		var c, u sql.NullTime
		if err := rows.Scan(&in.ProviderID, &in.ClassID, &in.Total, &in.Reserved, &in.MinUnit, &in.MaxUnit, &in.StepSize, &in.AllocationRatio, &c, &u); err != nil {
			return err
		}
		if mysqlFloat {
			in.AllocationRatio = float32Shortest(in.AllocationRatio)
		}
		in.Stamps = r.stamps(c, u)
		switch {
		case !r.known.providers[in.ProviderID]:
			r.orphans = append(r.orphans, fmt.Sprintf("inventory of class id %d on provider id %d: no such provider", in.ClassID, in.ProviderID))
		case !r.known.classes[in.ClassID]:
			r.orphans = append(r.orphans, fmt.Sprintf("inventory on provider id %d: no resource class id %d", in.ProviderID, in.ClassID))
		default:
			d.Inventories = append(d.Inventories, in)
		}
		return nil
	})
}

// readProviderTraits reads resource_provider_traits; a link to a
// provider or trait that does not exist is an orphan.
func (r *reader) readProviderTraits(ctx context.Context) error {
	return r.query(ctx, "resource_provider_traits", `SELECT resource_provider_id, trait_id FROM resource_provider_traits ORDER BY resource_provider_id, trait_id`, func(rows *sql.Rows) error {
		var l LinkRow
		if err := rows.Scan(&l.A, &l.B); err != nil {
			return err
		}
		if !r.known.providers[l.A] || !r.known.traits[l.B] {
			r.orphans = append(r.orphans, fmt.Sprintf("trait id %d on provider id %d: no such provider or trait", l.B, l.A))
			return nil
		}
		r.d.ProviderTraits = append(r.d.ProviderTraits, l)
		return nil
	})
}

// readAggregates reads placement_aggregates; an aggregate whose uuid is
// not a UUID is bad.
func (r *reader) readAggregates(ctx context.Context) error {
	d := r.d
	err := r.query(ctx, "placement_aggregates", `SELECT id, uuid FROM placement_aggregates ORDER BY id`, func(rows *sql.Rows) error {
		var a AggregateRow
		var u sql.NullString
		if err := rows.Scan(&a.ID, &u); err != nil {
			return err
		}
		a.UUID = u.String
		// Kept as spelled; valid as Placement's own check has it.
		if !berthuuid.Valid(a.UUID) {
			r.bad = append(r.bad, fmt.Sprintf("aggregate id %d: uuid %q is not a UUID", a.ID, a.UUID))
		}
		d.Aggregates = append(d.Aggregates, a)
		return nil
	})
	if err != nil {
		return err
	}
	r.known.aggregates = idSet(len(d.Aggregates), func(i int) int64 { return d.Aggregates[i].ID })
	return nil
}

// readProviderAggregates reads resource_provider_aggregates; a link to a
// provider or aggregate that does not exist is an orphan.
func (r *reader) readProviderAggregates(ctx context.Context) error {
	return r.query(ctx, "resource_provider_aggregates", `SELECT resource_provider_id, aggregate_id FROM resource_provider_aggregates ORDER BY resource_provider_id, aggregate_id`, func(rows *sql.Rows) error {
		var l LinkRow
		if err := rows.Scan(&l.A, &l.B); err != nil {
			return err
		}
		if !r.known.providers[l.A] || !r.known.aggregates[l.B] {
			r.orphans = append(r.orphans, fmt.Sprintf("aggregate id %d on provider id %d: no such provider or aggregate", l.B, l.A))
			return nil
		}
		r.d.ProviderAggregates = append(r.d.ProviderAggregates, l)
		return nil
	})
}

// readConsumers reads consumers and returns their indexes in
// r.d.Consumers by uuid. A consumer of a project, user or consumer type
// that does not exist is an orphan; one whose uuid is not a UUID is bad.
func (r *reader) readConsumers(ctx context.Context) (map[string]int, error) {
	d := r.d
	consumerByUUID := map[string]int{}
	err := r.query(ctx, "consumers", `SELECT id, uuid, project_id, user_id, generation, consumer_type_id, created_at, updated_at FROM consumers ORDER BY id`, func(rows *sql.Rows) error {
		var c ConsumerRow
		var typ sql.NullInt64
		var ct, ut sql.NullTime
		if err := rows.Scan(&c.ID, &c.UUID, &c.ProjectID, &c.UserID, &c.Generation, &typ, &ct, &ut); err != nil {
			return err
		}
		c.TypeID = typ.Int64
		c.Stamps = r.stamps(ct, ut)
		switch {
		case !r.known.projects[c.ProjectID]:
			r.orphans = append(r.orphans, fmt.Sprintf("consumer %s: no project id %d", c.UUID, c.ProjectID))
			return nil
		case !r.known.users[c.UserID]:
			r.orphans = append(r.orphans, fmt.Sprintf("consumer %s: no user id %d", c.UUID, c.UserID))
			return nil
		case typ.Valid && !r.known.types[c.TypeID]:
			r.orphans = append(r.orphans, fmt.Sprintf("consumer %s: no consumer type id %d", c.UUID, c.TypeID))
			return nil
		}
		if _, err := uuid.Parse(c.UUID); err != nil {
			r.bad = append(r.bad, fmt.Sprintf("consumer id %d: uuid %q is not a UUID", c.ID, c.UUID))
		}
		consumerByUUID[c.UUID] = len(d.Consumers)
		d.Consumers = append(d.Consumers, c)
		return nil
	})
	return consumerByUUID, err
}

// readAllocations reads allocations, whose consumer column is a uuid
// (consumerByUUID gives its index in r.d.Consumers), and returns which
// consumers hold an allocation. An allocation of a consumer, provider or
// class that does not exist is an orphan.
func (r *reader) readAllocations(ctx context.Context, consumerByUUID map[string]int) ([]bool, error) {
	d := r.d
	holds := make([]bool, len(d.Consumers))
	err := r.query(ctx, "allocations", `SELECT id, resource_provider_id, consumer_id, resource_class_id, used, created_at, updated_at FROM allocations ORDER BY id`, func(rows *sql.Rows) error {
		var a AllocationRow
		var cu string
		var c, u sql.NullTime
		if err := rows.Scan(&a.ID, &a.ProviderID, &cu, &a.ClassID, &a.Used, &c, &u); err != nil {
			return err
		}
		a.Stamps = r.stamps(c, u)
		ci, ok := consumerByUUID[cu]
		switch {
		case !ok:
			r.orphans = append(r.orphans, fmt.Sprintf("allocation id %d: consumer %s does not exist", a.ID, cu))
		case !r.known.providers[a.ProviderID]:
			r.orphans = append(r.orphans, fmt.Sprintf("allocation id %d of consumer %s: provider id %d does not exist", a.ID, cu, a.ProviderID))
		case !r.known.classes[a.ClassID]:
			r.orphans = append(r.orphans, fmt.Sprintf("allocation id %d of consumer %s: resource class id %d does not exist", a.ID, cu, a.ClassID))
		default:
			a.ConsumerID = d.Consumers[ci].ID
			holds[ci] = true
			d.Allocations = append(d.Allocations, a)
		}
		return nil
	})
	return holds, err
}

// dropIdleConsumers removes from r.d the consumers that hold no
// allocation (holds, by index). Such a consumer is invisible through the
// API (Placement deletes them when their last allocation goes); Berth
// does not keep them either.
func (r *reader) dropIdleConsumers(holds []bool) {
	d := r.d
	kept := d.Consumers[:0]
	for i, c := range d.Consumers {
		if holds[i] {
			kept = append(kept, c)
		}
	}
	d.Consumers = kept
}

func idSet(n int, id func(int) int64) map[int64]bool {
	m := make(map[int64]bool, n)
	for i := range n {
		m[id(i)] = true
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// RowsError is a refusal that names the rows it is about: one line of
// message and then the rows, for the operator to fix.
type RowsError struct {
	Msg  string
	Rows []string
}

func (e *RowsError) Error() string { return e.Msg }
