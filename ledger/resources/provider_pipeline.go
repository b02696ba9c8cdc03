package resources

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The provider writes' fast paths: the writes a cloud is seeded with
// (POST /resource_providers of a root provider, PUT of a provider's
// inventories, aggregates and traits) and DELETE of a provider, each as
// one pipeline of a few
// statements sent in one round trip, which PostgreSQL runs as one implicit
// transaction (one Sync: no BEGIN, no COMMIT), instead of a transaction
// whose statements each wait for the one before (5 to 11 round trips).
//
// A fast path only ever writes what the general path would have written
// and answers what it would have answered. Its statements check what the
// general path checks (the provider exists, its generation, the names
// exist, nothing in use is removed) and write only if every check passes;
// when one fails they write nothing, and the general path runs in a
// transaction of its own, which either writes (the state changed
// meanwhile) or refuses with Placement's exact error, its checks in
// Placement's order. Any statement error (a unique or foreign key
// violation from a concurrent write, a deadlock) rolls back the whole
// pipeline and leads to the general path too. Only an outage is returned
// as is, since the implicit transaction may then have committed, as
// WithTx does for an outage during COMMIT.
//
// Where a write depends on rows that concurrent writers change under the
// provider's row lock (the allocations an inventory removal must not
// orphan, the generation), the pipeline first locks the provider's row in
// a statement of its own (lockProviderSQL) so that the next statement's
// snapshot, taken after the lock was granted, sees every such write.
//
// The pipelines with statements whose plans depend on their parameters
// start with fastPlanSQL (claim_write.go): those statements then run
// their generic plans, which PostgreSQL might otherwise replace by custom
// plans planned afresh at every execution, at a cost per write above the
// generic plan's.

// errFallBack says a fast path wrote nothing and the general path must run.
var errFallBack = errors.New("ledger: fast path refused; general path")

// lockProviderSQL locks a provider's row by uuid (lockProvider's
// statement, so they share the prepared statement).
const lockProviderSQL = `SELECT id, generation FROM resource_providers WHERE uuid = $1 FOR UPDATE`

// lockedBatch starts the statements of a fast path that writes under the
// provider's row lock: lockProviderSQL on the provider of stored uuid.
// The caller queues its statements after it and reads past it with
// skipResults.
func lockedBatch(stored string) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(lockProviderSQL, stored)
	return b
}

// skipResults reads past the next n results of br, which change nothing
// the caller needs to know (fastPlanSQL, a lock, an insert).
func skipResults(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// distinctInOrder returns in without repeats, in first-seen order.
func distinctInOrder(in []string) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// scanWritten scans row, a fast path's answer, into dest: no row means
// the statement refused and wrote nothing (errFallBack).
func scanWritten(row pgx.Row, dest ...any) error {
	err := row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errFallBack
	}
	return err
}

// oneTrip is a provider write's fast path: its statements and how to
// read their answers.
type oneTrip struct {
	// lock is the stored uuid of the provider whose row the write
	// locks, with lockProviderSQL as b's first statement; "" for a
	// create, which locks nothing.
	lock string
	// plan says the statements need fastPlanSQL's settings.
	plan bool
	b    *pgx.Batch
	// read reads the answers of b's statements, every one, and records
	// in t what the write touched. It returns errFallBack when the
	// write's statement refused and wrote nothing. It may run twice
	// (provider_writers.go), so it sets what it reports rather than
	// appending to it.
	read func(br pgx.BatchResults, t *core.Txn) error
}

// sendOneTrip sends w's statements in one round trip and one implicit
// transaction, grouped with other provider writes when the writers are
// busy (provider_writers.go). It returns nil when w committed, errFallBack
// when it wrote nothing (a refusal, a statement error, a connection that
// failed before anything was sent or that the server ended before the
// commit), and any other error as is (an outage: it may have
// committed). A commit whose wait for the synchronous standby was
// cancelled is core.ErrNotReplicated, as in WithTx. After a commit the change
// hooks run with what w touched.
func (s *Providers) sendOneTrip(ctx context.Context, w oneTrip) error {
	if s.generalWrites {
		return errFallBack
	}
	if s.trips != nil {
		_, err := s.trips.Send(ctx, w)
		if !errors.Is(err, errAlone) {
			return core.DBError(err)
		}
	}
	return core.DBError(s.sendAlone(ctx, w))
}

// sendAlone is sendOneTrip for w alone: one implicit transaction.
func (s *Providers) sendAlone(ctx context.Context, w oneTrip) error {
	b := &pgx.Batch{}
	if w.plan {
		b.Queue(fastPlanSQL)
	}
	queueAfresh(b, w.b.QueuedQueries)
	t := &core.Txn{}
	err := s.sendPipeline(ctx, b, func(br pgx.BatchResults) error {
		if err := skipResults(br, b.Len()-w.b.Len()); err != nil {
			return err
		}
		return w.read(br, t)
	})
	if err != nil && !errors.Is(err, core.ErrNotReplicated) {
		return err
	}
	s.fastWrites.Add(1)
	s.core.Notify(t)
	return err
}

// queueAfresh queues qs on b as new queries, so that every send of a
// write builds its statements anew. A query pgx has sent keeps the
// statement description it was sent with, which names a statement
// prepared on that connection, and which a send that failed while
// preparing (a connection the server ended) leaves without its
// parameters; sent again as it is, on any connection, it fails ("mismatched
// param and argument count", a 500) or names a statement the
// connection lacks. A write is sent twice when its group failed as a
// whole (provider_writers.go).
func queueAfresh(b *pgx.Batch, qs []*pgx.QueuedQuery) {
	for _, q := range qs {
		b.Queue(q.SQL, q.Arguments...)
	}
}

// sendPipeline sends b as one pipeline and one implicit transaction on a
// pooled connection and hands its answers to read. It returns nil once
// the transaction committed, core.ErrNotReplicated if it committed but the
// wait for the synchronous standby was cancelled (as WithTx), and
// errFallBack when nothing was written: read returned errFallBack, a
// statement failed, or the connection failed before anything was sent
// or the server ended it before the commit (the commit comes with the
// Sync, after every statement's answer, so an error in place of an
// answer means none). Any other error is returned as is: an outage, and
// the transaction may have committed.
func (s *Providers) sendPipeline(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	actx, cancel := context.WithTimeout(ctx, s.core.Txs.AcquireTimeout)
	conn, err := s.core.Pool.Acquire(actx)
	cancel()
	if err != nil {
		return &core.BeginError{Err: err}
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	s.core.Unsynced.Forget(pc) // a mark left by another statement's commit
	br := conn.SendBatch(ctx, b)
	if err := read(br); err != nil {
		_ = br.Close()
		if errors.Is(err, errFallBack) || pgconn.SafeToRetry(err) || rolledBack(err) {
			return errFallBack
		}
		return err
	}
	if err := br.Close(); err != nil {
		// An error at the commit itself (a deferred check): nothing
		// written, unless the server went away, which may have been
		// after the commit.
		if pgconn.SafeToRetry(err) || statementError(err) {
			return errFallBack
		}
		return err
	}
	return s.core.Unsynced.Replicated(pc)
}

// rolledBack reports whether err, received in place of a statement's
// answer, means that PostgreSQL rolled the implicit transaction back and
// that the general path may run: a statement's error, or a connection
// the server terminated (FATAL, as after a restart: the general path's
// BEGIN takes another connection). A statement cancelled by
// statement_timeout, or refused by a read-only server, is an outage the
// general path would only meet again: it is returned as is.
func rolledBack(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Severity == "FATAL" || !core.Unavailable(err))
}

// statementError reports whether err is a statement's error from
// PostgreSQL, not an outage.
func statementError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && !core.Unavailable(err)
}

// providerCreateFastSQL inserts a root provider and returns it. A taken
// uuid or name is a unique violation: the general path words it.
const providerCreateFastSQL = `
INSERT INTO resource_providers (id, uuid, name, root_provider_id)
SELECT n.id, $1, $2, n.id
FROM (SELECT nextval('resource_providers_id_seq'::regclass) AS id) n
RETURNING id, uuid::text, name, generation, created_at, updated_at`

// providerCreateFast creates a root provider in one round trip.
func (s *Providers) providerCreateFast(ctx context.Context, rpUUID, name string) (engine.Provider, error) {
	var p engine.Provider
	// No fastPlanSQL: this statement's plan depends on no parameter,
	// so PostgreSQL settles on the generic plan after five executions
	// by itself.
	b := &pgx.Batch{}
	b.Queue(providerCreateFastSQL, rpUUID, name)
	err := s.sendOneTrip(ctx, oneTrip{b: b, read: func(br pgx.BatchResults, t *core.Txn) error {
		if err := br.QueryRow().Scan(&p.ID, &p.UUID, &p.Name, &p.Generation, &p.CreatedAt, &p.UpdatedAt); err != nil {
			return err
		}
		p.RootUUID = p.UUID
		t.Touch(p.ID)
		return nil
	}})
	return p, err
}

// providerDeleteFastSQL deletes a provider that has neither children nor
// allocations (its inventories, traits and aggregate links go with it, ON
// DELETE CASCADE), under its row lock, and answers its id and parent; no
// row if it refused. A child created meanwhile under a parent of its own
// tree's lock makes the delete fail on the foreign key: the general path
// words that. It runs after lockProviderSQL, so its snapshot holds every
// allocation committed on the provider: allocations have no foreign key
// to their provider (migrations/0020), and this check is what keeps a
// provider that has them.
const providerDeleteFastSQL = `
DELETE FROM resource_providers rp
WHERE rp.uuid = $1
  AND NOT EXISTS (SELECT 1 FROM resource_providers c WHERE c.parent_provider_id = rp.id)
  AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.resource_provider_id = rp.id)
RETURNING rp.id, rp.parent_provider_id`

// providerDeleteFast is ProviderDelete in one round trip. It returns
// errFallBack when it deleted nothing.
func (s *Providers) providerDeleteFast(ctx context.Context, rpUUID string) error {
	stored, ok := core.StoredUUID(rpUUID)
	if !ok {
		return errFallBack
	}
	b := &pgx.Batch{}
	b.Queue(lockProviderSQL, stored)
	b.Queue(providerDeleteFastSQL, stored)
	return s.sendOneTrip(ctx, oneTrip{lock: stored, b: b, read: func(br pgx.BatchResults, t *core.Txn) error {
		if err := skipResults(br, 1); err != nil {
			return err
		}
		var id int64
		var parent *int64
		if err := scanWritten(br.QueryRow(), &id, &parent); err != nil {
			return err
		}
		t.Touch(id)
		if parent != nil {
			t.Touch(*parent)
		}
		return nil
	}})
}

// inventoriesReplaceFastSQL is InventoriesReplace in one statement, run
// under the provider's row lock: it writes only if the provider exists at
// the expected generation ($2, NULL: any), every class exists and no class
// it removes has allocations. Then it removes the classes not given,
// inserts the new ones in the order given and updates the others (an
// insert, not an upsert: no other writer changes the provider's inventory
// while we hold its lock, and one that did would make the insert fail
// and the general path run), bumps the generation, and answers one row
// per inventory (one row of NULLs if none) with the new generation and
// each class's usage against its new capacity (overCapacity's test); no
// row if it refused.
const inventoriesReplaceFastSQL = `
WITH rp AS (
	SELECT id FROM resource_providers WHERE uuid = $1 AND ($2::bigint IS NULL OR generation = $2)
), req AS (
	SELECT r.*, rc.id AS class_id
	FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::float8[])
	     WITH ORDINALITY AS r(class, total, reserved, min_unit, max_unit, step_size, allocation_ratio, ord)
	LEFT JOIN resource_classes rc ON rc.name = r.class
), cur AS (
	SELECT resource_provider_id, resource_class_id FROM inventories WHERE resource_provider_id = (SELECT id FROM rp)
), chk AS (
	SELECT EXISTS (SELECT 1 FROM rp)
	   AND NOT EXISTS (SELECT 1 FROM req WHERE class_id IS NULL)
	   AND NOT EXISTS (
		SELECT 1 FROM cur
		WHERE cur.resource_class_id <> ALL (ARRAY(SELECT class_id FROM req))
		  AND COALESCE((SELECT sum(a.used) FROM allocations a
		                WHERE a.resource_provider_id = cur.resource_provider_id
		                  AND a.resource_class_id = cur.resource_class_id), 0) > 0) AS ok
), del AS (
	DELETE FROM inventories i
	WHERE (SELECT ok FROM chk) AND i.resource_provider_id = (SELECT id FROM rp)
	  AND i.resource_class_id <> ALL (ARRAY(SELECT class_id FROM req))
), ins AS (
	INSERT INTO inventories AS i (resource_provider_id, resource_class_id, total, reserved,
	                              min_unit, max_unit, step_size, allocation_ratio)
	SELECT rp.id, req.class_id, req.total, req.reserved, req.min_unit, req.max_unit, req.step_size, req.allocation_ratio
	FROM rp, req
	WHERE (SELECT ok FROM chk) AND req.class_id NOT IN (SELECT resource_class_id FROM cur)
	ORDER BY req.ord
	RETURNING i.resource_provider_id, i.resource_class_id, i.total, i.reserved, i.min_unit, i.max_unit,
	          i.step_size, i.allocation_ratio, i.updated_at
), upd AS (
	UPDATE inventories AS i SET
		total = req.total, reserved = req.reserved, min_unit = req.min_unit, max_unit = req.max_unit,
		step_size = req.step_size, allocation_ratio = req.allocation_ratio, updated_at = now()
	FROM req
	WHERE (SELECT ok FROM chk) AND i.resource_provider_id = (SELECT id FROM rp) AND i.resource_class_id = req.class_id
	RETURNING i.resource_provider_id, i.resource_class_id, i.total, i.reserved, i.min_unit, i.max_unit,
	          i.step_size, i.allocation_ratio, i.updated_at
), up AS (
	SELECT * FROM ins UNION ALL SELECT * FROM upd
), g AS (
	UPDATE resource_providers SET generation = generation + 1, updated_at = now()
	WHERE (SELECT ok FROM chk) AND id = (SELECT id FROM rp)
	RETURNING id, generation
)
SELECT g.id, g.generation, u.resource_class_id, u.name, u.total, u.reserved, u.min_unit, u.max_unit,
       u.step_size, u.allocation_ratio, u.updated_at, u.used, u.used > u.capacity, u.capacity
FROM g LEFT JOIN (
	SELECT up.*, rc.name, (up.total - up.reserved) * up.allocation_ratio AS capacity,
	       COALESCE((SELECT sum(a.used) FROM allocations a
	                 WHERE a.resource_provider_id = up.resource_provider_id
	                   AND a.resource_class_id = up.resource_class_id), 0)::bigint AS used
	FROM up JOIN resource_classes rc ON rc.id = up.resource_class_id
) u ON true
ORDER BY u.resource_class_id`

// inventoriesReplaceFast is InventoriesReplace in one round trip, for a
// write whose capacities the caller has checked. It returns errFallBack
// when it wrote nothing, and the classes left over capacity (in class
// order) for the caller to log.
func (s *Providers) inventoriesReplaceFast(ctx context.Context, p InventoryParams, invs []engine.Inventory) (ProviderInventories, []OverCapacity, error) {
	canon, ok := core.StoredUUID(p.ProviderUUID) // a path's uuid, compared as written
	if !ok {
		return ProviderInventories{}, nil, errFallBack
	}
	n := len(invs)
	classes := make([]string, n)
	totals, reserved, minUnits, maxUnits, steps := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	ratios := make([]float64, n)
	seen := make(map[string]bool, n)
	for i, inv := range invs {
		if seen[inv.ResourceClass] {
			return ProviderInventories{}, nil, errFallBack
		}
		seen[inv.ResourceClass] = true
		classes[i], totals[i], reserved[i], minUnits[i], maxUnits[i], steps[i], ratios[i] =
			inv.ResourceClass, inv.Total, inv.Reserved, inv.MinUnit, inv.MaxUnit, inv.StepSize, inv.AllocationRatio
	}
	b := lockedBatch(canon)
	b.Queue(inventoriesReplaceFastSQL, canon, p.Generation, classes, totals, reserved, minUnits, maxUnits, steps, ratios)
	var out ProviderInventories
	var over []OverCapacity
	err := s.sendOneTrip(ctx, oneTrip{lock: canon, plan: true, b: b, read: func(br pgx.BatchResults, t *core.Txn) error {
		over = nil
		if err := skipResults(br, 1); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var ids []int64
		var invs []engine.Inventory
		var providerID int64
		found := false
		for rows.Next() {
			found = true
			var classID *int64
			var name *string
			var inv engine.Inventory
			var total, reserved, minUnit, maxUnit, step, used *int64
			var ratio, capacity *float64
			var updated *time.Time
			var isOver *bool
			if err := rows.Scan(&providerID, &out.Generation, &classID, &name, &total, &reserved, &minUnit, &maxUnit,
				&step, &ratio, &updated, &used, &isOver, &capacity); err != nil {
				rows.Close()
				return err
			}
			if classID == nil {
				continue // no inventories
			}
			inv = engine.Inventory{ResourceClass: *name, Total: *total, Reserved: *reserved, MinUnit: *minUnit,
				MaxUnit: *maxUnit, StepSize: *step, AllocationRatio: *ratio, UpdatedAt: *updated}
			ids = append(ids, *classID)
			invs = append(invs, inv)
			if *isOver {
				over = append(over, OverCapacity{ProviderUUID: p.ProviderUUID, ResourceClass: *name,
					Used: *used, Capacity: *capacity})
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			return errFallBack
		}
		out.Inventories = pyOrderInventories(ids, invs)
		t.Touch(providerID)
		return nil
	}})
	return out, over, err
}

// aggregatesCreateFastSQL creates, in the order given, the aggregates
// not seen before, if the provider is at the expected generation ($2,
// NULL: any), as ProviderAggregatesReplace does before linking them. It
// runs under the provider's row lock, so the write statement after it
// finds the same generation.
const aggregatesCreateFastSQL = `
INSERT INTO placement_aggregates (uuid)
SELECT u FROM unnest($3::text[]) WITH ORDINALITY AS a(u, i)
WHERE EXISTS (SELECT 1 FROM resource_providers WHERE uuid = $1 AND ($2::bigint IS NULL OR generation = $2))
  AND NOT EXISTS (SELECT 1 FROM placement_aggregates WHERE uuid = u)
ORDER BY i
ON CONFLICT (uuid) DO NOTHING`

// aggregatesReplaceFastSQL makes the aggregates $3 (distinct uuids) the
// provider's, if it is at the expected generation ($2, NULL: any, and
// then the generation is not bumped) and every aggregate exists, and
// answers the provider's id and generation; no row if it refused.
const aggregatesReplaceFastSQL = `
WITH agg AS (
	SELECT id FROM placement_aggregates WHERE uuid = ANY($3::text[])
), rp AS (
	SELECT id, generation FROM resource_providers
	WHERE uuid = $1 AND ($2::bigint IS NULL OR generation = $2)
	  AND (SELECT count(*) FROM agg) = cardinality($3::text[])
), del AS (
	DELETE FROM resource_provider_aggregates
	WHERE resource_provider_id = (SELECT id FROM rp) AND aggregate_id <> ALL (ARRAY(SELECT id FROM agg))
), ins AS (
	INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
	SELECT rp.id, agg.id FROM rp, agg
	ON CONFLICT DO NOTHING
), g AS (
	UPDATE resource_providers SET generation = generation + 1, updated_at = now()
	WHERE id = (SELECT id FROM rp) AND $2::bigint IS NOT NULL
	RETURNING generation
)
SELECT rp.id, COALESCE((SELECT generation FROM g), rp.generation) FROM rp`

// aggregatesReplaceFast is ProviderAggregatesReplace in one round trip,
// for aggregate uuids as spelled (aggregateSpellings). It creates the
// aggregates only when one is not among those these Providers have seen written
// (knownAggregates): a write of aggregates all seen is two statements. Should one have gone
// since (berth import --replace empties the table), the write statement
// refuses and the general path creates it. It returns errFallBack when
// it wrote nothing.
func (s *Providers) aggregatesReplaceFast(ctx context.Context, rpUUID string, spelled []string, generation *int64) (int64, error) {
	stored, ok := core.StoredUUID(rpUUID)
	if !ok {
		return 0, errFallBack
	}
	distinct := distinctInOrder(spelled)
	b := lockedBatch(stored)
	if slices.ContainsFunc(distinct, func(u string) bool { _, known := s.knownAggregates.Load(u); return !known }) {
		b.Queue(aggregatesCreateFastSQL, stored, generation, spelled)
	}
	b.Queue(aggregatesReplaceFastSQL, stored, generation, distinct)
	var gen int64
	err := s.sendOneTrip(ctx, oneTrip{lock: stored, plan: true, b: b, read: func(br pgx.BatchResults, t *core.Txn) error {
		if err := skipResults(br, b.Len()-1); err != nil {
			return err
		}
		var id int64
		if err := scanWritten(br.QueryRow(), &id, &gen); err != nil {
			return err
		}
		t.Touch(id)
		return nil
	}})
	if err == nil {
		for _, u := range distinct {
			s.knownAggregates.Store(u, struct{}{})
		}
	}
	return gen, err
}

// traitsReplaceFastSQL makes the traits named $3 (distinct names) the
// exact trait set of the provider, if it is at generation $2 and every
// name is a trait, bumps the generation if the set changed, and answers
// the generation, whether it changed, and one row per trait ordered by
// name (one row of NULLs if none); no row if it refused.
const traitsReplaceFastSQL = `
WITH rp AS (
	SELECT id FROM resource_providers WHERE uuid = $1 AND generation = $2::bigint
), t AS (
	-- One index lookup per name: a generic plan of name = ANY($3) reads
	-- the whole table.
	SELECT tr.* FROM unnest($3::text[]) AS n(name)
	CROSS JOIN LATERAL (SELECT id, name, created_at, updated_at FROM traits WHERE traits.name = n.name LIMIT 1) tr
), chk AS (
	SELECT EXISTS (SELECT 1 FROM rp) AND (SELECT count(*) FROM t) = cardinality($3::text[]) AS ok
), del AS (
	DELETE FROM resource_provider_traits
	WHERE (SELECT ok FROM chk) AND resource_provider_id = (SELECT id FROM rp)
	  AND trait_id <> ALL (ARRAY(SELECT id FROM t))
	RETURNING 1
), ins AS (
	INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
	SELECT rp.id, t.id FROM rp, t WHERE (SELECT ok FROM chk)
	ON CONFLICT DO NOTHING
	RETURNING 1
), g AS (
	UPDATE resource_providers SET generation = generation + 1, updated_at = now()
	WHERE id = (SELECT id FROM rp) AND (EXISTS (SELECT 1 FROM del) OR EXISTS (SELECT 1 FROM ins))
	RETURNING generation
)
SELECT (SELECT id FROM rp), COALESCE((SELECT generation FROM g), $2::bigint), EXISTS (SELECT 1 FROM g),
       t.id, t.name, t.created_at, t.updated_at
FROM chk LEFT JOIN t ON true
WHERE chk.ok
ORDER BY t.name`

// traitsReplaceFast is ProviderTraitsReplace in one round trip. It
// returns errFallBack when it wrote nothing.
func (s *Providers) traitsReplaceFast(ctx context.Context, rpUUID string, generation int64, names []string) (int64, []Trait, error) {
	stored, ok := core.StoredUUID(rpUUID)
	if !ok {
		return 0, nil, errFallBack
	}
	var next int64
	traits := []Trait{}
	err := s.sendOneTrip(ctx, traitsReplaceTrip(stored, generation, names, &next, &traits))
	return next, traits, err
}

// traitsReplaceTrip is traitsReplaceFast's write on the provider of
// stored uuid; its answer goes to next and traits.
func traitsReplaceTrip(stored string, generation int64, names []string, next *int64, traits *[]Trait) oneTrip {
	b := lockedBatch(stored)
	b.Queue(traitsReplaceFastSQL, stored, generation, distinctInOrder(names))
	return oneTrip{lock: stored, plan: true, b: b, read: func(br pgx.BatchResults, t *core.Txn) error {
		*traits = (*traits)[:0]
		if err := skipResults(br, 1); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		found, changed := false, false
		var providerID int64
		for rows.Next() {
			found = true
			var id *int32
			var name *string
			var created, updated *time.Time
			if err := rows.Scan(&providerID, next, &changed, &id, &name, &created, &updated); err != nil {
				return err
			}
			if id != nil {
				*traits = append(*traits, Trait{ID: *id, Name: *name, CreatedAt: *created, UpdatedAt: *updated})
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			return errFallBack
		}
		if changed {
			t.Touch(providerID)
		}
		return nil
	}}
}
