package resources

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The claim write: ClaimWrite is where every claim, reschedule and move of
// package claims commits, in one transaction with what it records
// (ledger/claimrecords/records.go). A new consumer's allocations take the one-round-trip
// path below (claimFast), grouped with other claims when the writers are
// busy (claim_writers.go, on the group writer of ledger/internal/core/group_writer.go); a commit
// the synchronous standby did not confirm is caught as ledger/internal/core/replication.go
// says; after the commit the snapshot and the other processes hear of it
// (core.Core.Notify, ledger/snapshot/notifier.go, ledger/snapshot/cache.go).

// ClaimWriteParams is one claim transaction: allocation writes as for
// AllocationsReplace, plus the claims bookkeeping that must commit or
// roll back with them.
type ClaimWriteParams struct {
	Consumers []ConsumerAllocations
	// Move, when not nil, records a move in progress for its consumer,
	// replacing any earlier record.
	Move *claimrecords.MoveRecord
	// ForgetMove, when not empty, drops the move record of that consumer;
	// MoveEnd (MoveConfirmed or claimrecords.MoveReverted), when set, ends the move in
	// its stored claim too.
	ForgetMove string
	MoveEnd    string
	// Request, when not nil, is recorded for retries (ledger/claimrecords/records.go).
	Request *claimrecords.ClaimRequest
	// State, when not nil, is stored as the claim of Consumers[0]
	// (ledger/claimrecords/records.go, claim_state).
	State *claimrecords.ClaimStateWrite
	// IfLeaseExpired, when not empty, writes only if that consumer's
	// lease has run out, checked under its row locks (claimrecords.CheckLeaseExpired):
	// the lease reaper's release or revert. Otherwise nothing is written
	// and the error is fault.ErrConflict with CodeLeaseNotExpired.
	IfLeaseExpired string
	// Quota, when not nil, are the limits the allocation writes are
	// checked against (quota_check.go): a write that would take a project past
	// one is refused with nothing written.
	Quota *quotas.Quota
	// Preempt, when not nil, displaces its victims in the same
	// transaction (preempt.go): their allocations are removed (and their
	// usage taken out of their projects' counters) after their locks are
	// taken and they are re-checked, and each displacement is recorded
	// (claimrecords.WritePreemptions).
	Preempt *Preemption
}

// ClaimWrite runs p in one transaction: the allocation writes, checked
// and rejected exactly as by AllocationsReplace (and, without move or
// lease bookkeeping, by AllocationsReplace itself, fast path included),
// then the records. Either all of it commits or nothing does. Unlike
// AllocationsReplace it leaves the consumers' stored claims to p.State
// (a Placement-API write makes them permanent). With p.Quota, a write
// over a project's limit is refused (fault.ErrForbidden,
// fault.CodeOverQuota). Like every transaction of the ledger, it may run
// more than once on a serialization failure.
func (s *Allocations) ClaimWrite(ctx context.Context, p ClaimWriteParams) error {
	if p.Move == nil && p.ForgetMove == "" && p.IfLeaseExpired == "" && p.Preempt == nil {
		// Allocations alone: AllocationsReplace's paths, with its fast
		// path for a new consumer.
		return s.allocationsReplace(ctx, p.Consumers, &p, p.Quota)
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		if p.IfLeaseExpired != "" {
			if err := lockLeaseExpired(ctx, t, p.IfLeaseExpired, p.Consumers); err != nil {
				return err
			}
		}
		consumers := p.Consumers
		if p.Preempt != nil {
			var err error
			if consumers, err = lockVictims(ctx, t, consumers, p.Preempt); err != nil {
				return err
			}
		}
		if len(consumers) > 0 {
			if err := s.replaceAllocationsGeneral(ctx, t, consumers, p.Quota); err != nil {
				return err
			}
		}
		if p.Preempt != nil && len(p.Consumers) > 0 {
			if err := claimrecords.ForgetRequests(ctx, t, p.Preempt.victimUUIDs()); err != nil {
				return err
			}
			if err := claimrecords.WritePreemptions(ctx, t, preemptionRecords(p.Consumers[0].ConsumerUUID, p.Preempt)); err != nil {
				return err
			}
		}
		if err := claimrecords.ForgetMove(ctx, t, p.ForgetMove, p.MoveEnd); err != nil {
			return err
		}
		if err := claimrecords.WriteMove(ctx, t, p.Move); err != nil {
			return err
		}
		if err := writeClaimStateOf(ctx, t, p.Consumers, p.State); err != nil {
			return err
		}
		return claimrecords.WriteRequest(ctx, t, p.Request)
	})
}

// lockLeaseExpired locks consumer's row, with the rows of the consumers
// the write changes (in uuid order, as every writer of allocations locks
// consumers: a revert changes the instance and its migration consumer),
// then checks that consumer's lease has run out
// (claimrecords.CheckLeaseExpired).
func lockLeaseExpired(ctx context.Context, t *core.Txn, consumer string, consumers []ConsumerAllocations) error {
	id, ok := core.CanonicalUUID(consumer)
	if !ok {
		return fault.Invalid("", "Malformed consumer uuid: %s", consumer)
	}
	ids := []string{id}
	for _, c := range consumers {
		if other, ok := core.CanonicalUUID(c.ConsumerUUID); ok {
			ids = append(ids, other)
		}
	}
	if _, err := LockConsumers(ctx, t, ids); err != nil {
		return err
	}
	return claimrecords.CheckLeaseExpired(ctx, t, id)
}

// writeClaimStateOf stores w as the claim of consumers[0] (w nil, or no
// consumer: nothing). The consumer existed before when its generation
// was given (and checked).
func writeClaimStateOf(ctx context.Context, t *core.Txn, consumers []ConsumerAllocations, w *claimrecords.ClaimStateWrite) error {
	if w == nil || len(consumers) == 0 {
		return nil
	}
	return claimrecords.WriteState(ctx, t, consumers[0].ConsumerUUID, consumers[0].Generation != nil, w)
}

// allocationsReplace writes consumers' allocations, on the fast path for
// a new consumer as on the general one. cw nil: a Placement-API write
// (AllocationsReplace), which makes the consumers' stored claims
// permanent; otherwise a claim's, which records cw.Request and stores
// cw.State in the same transaction. Either is checked against q (nil: no
// limits).
func (s *Allocations) allocationsReplace(ctx context.Context, consumers []ConsumerAllocations, cw *ClaimWriteParams, q *quotas.Quota) error {
	if fc, ok := fastClaimOf(consumers); ok {
		// A new consumer: try the claim fast path (below),
		// one round trip. If it refuses, the general path gives the
		// answer, with its exact error. (A new consumer has no stored
		// claim for a Placement-API write to settle.)
		if cw != nil {
			fc.request, fc.state = cw.Request, cw.State
		}
		fc.quota = quotaArgsFor(q, fc.project)
		if done, err := s.claimFast(ctx, fc); done || err != nil {
			return err
		}
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		if err := s.replaceAllocationsGeneral(ctx, t, consumers, q); err != nil {
			return err
		}
		if cw == nil {
			return claimrecords.SettleStates(ctx, t, consumerUUIDs(consumers))
		}
		if err := writeClaimStateOf(ctx, t, consumers, cw.State); err != nil {
			return err
		}
		return claimrecords.WriteRequest(ctx, t, cw.Request)
	})
}

// The claim fast path: the write of a new consumer's allocations (a
// claim, or PUT /allocations/{uuid} with "consumer_generation": null) as
// two statements sent in one round trip, instead of the general path's
// dozen statements each waiting for the one before.
//
//  1. fastLockXidSQL locks the rows of the providers written to (FOR
//     UPDATE, in id order, as lockProviders does), and answers the
//     transaction's id.
//  2. fastWriteSQL runs with a snapshot taken after those locks were
//     granted, so it sees every allocation committed on those providers
//     (every writer of allocations holds the provider's lock until it
//     commits). It re-checks every allocation against the inventory
//     (class present, min_unit, max_unit, step_size, capacity) and, only
//     if all fit and the claim's project, user and consumer type exist,
//     creates the consumer (generation 1, with the claim's name and
//     properties), inserts the allocations, copies the providers' sticky
//     placement keys to the consumer when asked (as writeConsumerDetails
//     does) and bumps the providers' generations. It answers whether it
//     wrote. It adds what it wrote to the project's usage counters, and
//     with limits (quota_check.go) writes only if the claim keeps its project
//     within them: it locks the project's counters itself, once the claim
//     is known to fit, and checks their newest state (lk, qok), so a
//     limited claim holds them from its write on, as an unlimited one
//     holds them from its count (cnt), not from the pipeline's start.
//
// Both go in one pipeline with one Sync, so PostgreSQL runs them as one
// implicit transaction: one round trip, no BEGIN or COMMIT.
//
// When the write statement refuses (no room, a provider or class that
// does not exist, a consumer that exists after all, a new project, user
// or type), it wrote nothing and the general path runs in a transaction
// of its own: it either writes (if room was made meanwhile) or refuses
// with Placement's exact error. So the fast path changes the cost of a
// claim, never what a write may do.
//
// Locks, in the global order (ledger's doc.go): providers, then the
// project's counters. It creates no project, user or type: creating a
// name takes a lock on it (a concurrent creator of the same name waits
// for the transaction's end), and every other writer takes names first,
// before any provider's lock, so a name created here, after the
// providers', could close a cycle with a general-path write that created
// it and waits for one of those providers. The first claim of a new project,
// user or type takes the general path, which creates the names first.
// The consumer's row is created after the providers' locks, unlike the
// general path's (which creates it before them): a new consumer's uuid
// is a lock only for another write of the same new consumer at the same
// moment, the one case where the two paths can deadlock (one is
// retried).
//
// fastPlanSQL comes first in the pipeline: for the rest of the implicit
// transaction, prepared statements run their generic plan. Left to
// choose, PostgreSQL plans fastWriteSQL afresh at every execution (its
// custom plans look cheaper than the generic one), and planning that
// statement costs more than its execution; the generic plan has the same
// index scans. is_local true: the setting ends with the transaction, so
// the connection's other statements plan as before.
//
// enable_seqscan off, for the same statements: a generic plan is made once
// per connection and kept until the tables' statistics change, so the
// statistics at that moment decide it. Right after an ANALYZE of a fresh
// cloud's empty allocations and consumers (as scale.sh's VACUUM (ANALYZE)
// after seeding did), it read those tables sequentially, and kept doing
// so while they grew until autovacuum analysed them again, at many times
// the CPU per claim. Every row these statements read has an index to be found by; off, the
// planner takes it whatever the statistics say
// (TestClaimPlansAfterEmptyAnalyze).
const fastPlanSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`

// fastLockSQL locks the providers $1 (uuids) in id order.
const fastLockSQL = `
SELECT id FROM resource_providers WHERE uuid = ANY($1::uuid[]) ORDER BY id FOR UPDATE`

// fastLockXidSQL is fastLockSQL answering, once every provider is locked,
// how many it locked and the transaction's id (core.SQLOwnXid's answer):
// a row lock gives the transaction its id, and a claim writes only on
// providers it locked, so a claim pipeline needs no statement of its own
// for the id. (An id of 0, nothing locked, means "unknown" to the
// snapshot, as SQLOwnXid's NULL does.)
const fastLockXidSQL = `
WITH l AS (SELECT id FROM resource_providers WHERE uuid = ANY($1::uuid[]) ORDER BY id FOR UPDATE)
SELECT count(*), pg_current_xact_id_if_assigned()::text FROM l`

// claimWriteMark begins the claim statements that write the change log's
// row of what they changed themselves (lc in fastWriteSQL and
// batchWriteSQL): the change log's triggers of allocations' insert and
// resource_providers' update, which would log the same providers again,
// do not run for a statement that begins with it (their WHEN,
// migrations/0019). No other statement may begin with it.
const claimWriteMark = `/* berth: claim write, logs its own change */`

const fastWriteSQL = claimWriteMark + `
WITH req AS (
	SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[]) WITH ORDINALITY AS r(provider_uuid, class, amount, ord)
), rp AS MATERIALIZED (
	-- The claim's providers and classes, each looked up once.
	SELECT uuid, id FROM resource_providers WHERE uuid = ANY($1::uuid[])
), rc AS MATERIALIZED (
	SELECT name, id FROM resource_classes WHERE name = ANY($2::text[])
), chk AS (
	SELECT req.ord, rp.id AS provider_id, rc.id AS class_id, req.amount,
	       i.resource_provider_id IS NOT NULL
	       AND req.amount >= i.min_unit AND req.amount <= i.max_unit AND req.amount % i.step_size = 0
	       AND (COALESCE((SELECT sum(a.used) FROM allocations a
	                      WHERE a.resource_provider_id = rp.id AND a.resource_class_id = rc.id), 0)::bigint
	            + req.amount)::double precision <= (i.total - i.reserved)::double precision * i.allocation_ratio
	       AS fits
	FROM req
	LEFT JOIN rp ON rp.uuid = req.provider_uuid
	LEFT JOIN rc ON rc.name = req.class
	LEFT JOIN inventories i ON i.resource_provider_id = rp.id AND i.resource_class_id = rc.id
), ok AS (
	SELECT bool_and(COALESCE(fits, false)) AS ok FROM chk
), owner AS (
	-- The project, user and type, which must exist (NULL: not written).
	SELECT (SELECT id FROM projects WHERE external_id = $5::text) AS project_id,
	       (SELECT id FROM users WHERE external_id = $6::text) AS user_id,
	       (SELECT id FROM consumer_types WHERE name = $7::text) AS type_id
), lim AS (
	-- The project's limits (quota.go): those given ($19, $20; empty: none)
	-- or, when NULL, the stored ones.
	SELECT g.resource, g.resource_limit FROM unnest($19::text[], $20::bigint[]) AS g(resource, resource_limit)
	UNION ALL
	SELECT l.resource, l.resource_limit FROM limits_of($5::text) l WHERE $19::text[] IS NULL
), adds AS (
	-- What the claim adds to its project's usage: its amounts by class and
	-- one consumer (a migration consumer adds nothing).
	SELECT class AS resource, sum(amount)::bigint AS amount FROM req WHERE $7::text <> 'MIGRATION' GROUP BY class
	UNION ALL
	SELECT 'consumers', 1 WHERE $7::text <> 'MIGRATION'
), lk AS (
	-- The project's usage counters of every resource the claim adds to,
	-- when one of them is limited and the claim fits: locked here, in the
	-- global order (by resource in byte order, as every writer of counters
	-- orders them: quota.go), so after the providers' locks and only now,
	-- at the write. Locking follows the ORDER BY (FOR UPDATE locks the
	-- sorted rows one by one). Under READ COMMITTED, FOR UPDATE waits for
	-- a concurrent writer of a counter and returns the version it
	-- committed, whatever this statement's snapshot: the newest usage,
	-- which no other write can change until this transaction ends.
	SELECT u.resource, u.used FROM project_usages u
	WHERE u.project_id = (SELECT project_id FROM owner)
	  AND u.resource IN (SELECT resource FROM adds)
	  AND EXISTS (SELECT 1 FROM adds JOIN lim USING (resource)) AND (SELECT ok FROM ok)
	ORDER BY u.resource COLLATE "C"
	FOR UPDATE
), qok AS (
	-- Whether the claim keeps every limited counter of its project within
	-- its limit, counted from the locked counters (NULL: nothing it adds
	-- to is limited). A counter it adds to that does not exist yet (a new
	-- project, a resource the project never held) refuses: the general
	-- path creates it and decides.
	SELECT bool_and(lk.resource IS NOT NULL
	                AND (lim.resource_limit IS NULL OR lk.used + adds.amount <= lim.resource_limit)) AS ok
	FROM adds LEFT JOIN lim USING (resource) LEFT JOIN lk USING (resource)
	WHERE EXISTS (SELECT 1 FROM adds JOIN lim USING (resource))
), c AS (
	INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, name, properties)
	SELECT $4::uuid, owner.project_id, owner.user_id, owner.type_id, 1, $8::text, $9::jsonb FROM ok, owner, qok
	WHERE ok.ok AND owner.project_id IS NOT NULL AND owner.user_id IS NOT NULL
	  AND ($7::text = '' OR owner.type_id IS NOT NULL) AND qok.ok IS NOT FALSE
	ON CONFLICT (uuid) DO NOTHING
	RETURNING id
), k AS (
	INSERT INTO consumer_placement_keys (consumer_id, name, value)
	SELECT DISTINCT ON (pk.name) c.id, pk.name, pk.value
	FROM c, chk CROSS JOIN LATERAL (
		SELECT name, value FROM provider_placement_keys
		WHERE resource_provider_id = chk.provider_id AND sticky OFFSET 0) pk
	WHERE $10::boolean
	ORDER BY pk.name, chk.provider_id
	RETURNING 1
), a AS (
	INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
	SELECT c.id, chk.provider_id, chk.class_id, chk.amount FROM c, chk
	ORDER BY chk.ord -- ids in request order: GET /allocations lists them so
	RETURNING resource_provider_id, resource_class_id, used
), g AS (
	UPDATE resource_providers SET generation = generation + 1, updated_at = now()
	WHERE id = ANY (ARRAY(SELECT resource_provider_id FROM a))
	RETURNING id, generation, updated_at
), cnt AS (
	-- The project's usage counters: what the claim adds, if written.
	INSERT INTO project_usages AS u (project_id, resource, used)
	SELECT owner.project_id, adds.resource, adds.amount FROM c, owner, adds
	ORDER BY adds.resource COLLATE "C"
	ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used
	RETURNING 1
), q AS (
	INSERT INTO claim_requests (consumer_uuid, op, fingerprint, request, result, generation)
	SELECT $4::uuid, $11::text, $12::bytea, $13::json, $14::json, 1 FROM c WHERE $11::text IS NOT NULL
	ON CONFLICT (consumer_uuid, op) DO UPDATE
	SET fingerprint = EXCLUDED.fingerprint, request = EXCLUDED.request, result = EXCLUDED.result,
	    generation = EXCLUDED.generation, created_at = now()
	RETURNING 1
), s AS (
	-- The stored claim, when $15 (its op) is set: claimStateSetSQL's row
	-- for a new consumer (claim_records.go), which has none yet.
	INSERT INTO claim_state (consumer_uuid, op, request, root_uuid, state, lease_seconds, lease_expires_at)
	SELECT $4::uuid, $15::text, $16::jsonb, $17::uuid,
	       CASE WHEN $18::int IS NULL THEN 'permanent' ELSE 'provisional' END,
	       $18::int, now() + $18::int * interval '1 second'
	FROM c WHERE $15::text IS NOT NULL
	RETURNING 1
), lc AS (
	-- The change log's row (migrations/0008 and 0019): the providers the
	-- claim changed, which are those whose generations g bumped; the
	-- triggers that would log them do not run for this statement
	-- (claimWriteMark).
	INSERT INTO ledger_changes (xid, providers)
	SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END FROM g HAVING count(*) > 0
	RETURNING 1
)
SELECT (SELECT id FROM c), (SELECT count(*) FROM g),
       (SELECT array_agg(id) FROM g), (SELECT array_agg(generation) FROM g), (SELECT array_agg(updated_at) FROM g),
       (SELECT array_agg(resource_provider_id) FROM a), (SELECT array_agg(resource_class_id) FROM a),
       (SELECT array_agg(used) FROM a)`

// fastClaim is a write the fast path can take: one new consumer with
// allocations of positive amounts, each (provider, class) once.
type fastClaim struct {
	consumer, project, user, consumerType string
	name                                  *string // nil: none
	properties                            []byte  // JSON; nil: none
	copySticky                            bool
	providers                             []string // distinct, canonical
	allocProviders, allocClasses          []string
	amounts                               []int64
	// request, when not nil, is recorded with the write (q in
	// fastWriteSQL; ledger/claimrecords/records.go); state, when not nil, is stored as
	// the consumer's claim (s in fastWriteSQL).
	request *claimrecords.ClaimRequest
	state   *claimrecords.ClaimStateWrite
	// quota are the limits the write is checked against (quota_check.go).
	quota quotaArgs
}

// fastClaimOf returns the fast-path form of ws, or ok false when the
// general path must handle it.
func fastClaimOf(ws []ConsumerAllocations) (fc fastClaim, ok bool) {
	if len(ws) != 1 {
		return fc, false
	}
	w := &ws[0]
	if !w.CheckGeneration || w.Generation != nil || len(w.Allocations) == 0 {
		return fc, false
	}
	if fc.consumer, ok = core.CanonicalUUID(w.ConsumerUUID); !ok {
		return fc, false
	}
	if w.Name != "" {
		fc.name = &w.Name
	}
	if w.Properties != nil {
		var err error
		if fc.properties, err = json.Marshal(w.Properties); err != nil {
			return fc, false // the general path words the error
		}
	}
	fc.copySticky = w.CopyStickyKeys
	fc.project, fc.user, fc.consumerType = w.ProjectID, w.UserID, w.ConsumerType
	if fc.project == "" {
		fc.project = IncompleteConsumerID
	}
	if fc.user == "" {
		fc.user = IncompleteConsumerID
	}
	n := 0
	for _, pr := range w.Allocations {
		n += len(pr.Resources)
	}
	names := make([]string, 2*n)
	fc.allocProviders, fc.allocClasses = names[:0:n], names[n:n:2*n]
	fc.amounts = make([]int64, 0, n)
	for _, pr := range w.Allocations {
		rp, ok := core.CanonicalUUID(pr.ProviderUUID)
		if !ok || len(pr.Resources) == 0 {
			return fc, false
		}
		if !slices.Contains(fc.providers, rp) {
			fc.providers = append(fc.providers, rp)
		}
		for _, r := range pr.Resources {
			if r.Amount <= 0 || fc.allocates(rp, r.Class) {
				return fc, false
			}
			fc.allocProviders = append(fc.allocProviders, rp)
			fc.allocClasses = append(fc.allocClasses, r.Class)
			fc.amounts = append(fc.amounts, r.Amount)
		}
	}
	return fc, true
}

// allocates reports whether fc has an allocation of class on provider.
func (fc *fastClaim) allocates(provider, class string) bool {
	for i, p := range fc.allocProviders {
		if p == provider && fc.allocClasses[i] == class {
			return true
		}
	}
	return false
}

// claimFast writes fc by the fast path, in a batch with other claims
// when the writers are busy (claim_writers.go). done reports that the
// allocations were written; when done is false and err is nil, nothing
// was written and the caller runs the general path. A deadlock or
// serialization failure is retried as WithTx retries, alone.
func (s *Allocations) claimFast(ctx context.Context, fc fastClaim) (done bool, err error) {
	var w *core.OwnWrite
	if s.claims != nil {
		w, err = s.queueClaim(ctx, fc)
	} else {
		w, err = s.sendFastAndNotify(ctx, fc)
	}
	for attempt := 1; ; attempt++ {
		if err == nil {
			return w != nil, nil
		}
		if !errors.Is(err, errAlone) {
			if !core.Retryable(err) || attempt == core.MaxTxAttempts {
				return false, core.DBError(err)
			}
			if err := core.Backoff(ctx, attempt, err); err != nil {
				return false, core.DBError(err)
			}
		}
		w, err = s.sendFastAndNotify(ctx, fc)
	}
}

// sendFastAndNotify writes fc alone and, if it wrote, tells the snapshot
// and the other processes.
func (s *Allocations) sendFastAndNotify(ctx context.Context, fc fastClaim) (*core.OwnWrite, error) {
	w, err := s.sendFast(ctx, fc)
	if w != nil {
		s.notifyOwnWrite(w)
	}
	return w, err
}

// notifyOwnWrite tells the snapshot and the other processes about a fast
// write that committed.
func (s *Allocations) notifyOwnWrite(w *core.OwnWrite) {
	s.core.Notify(&core.Txn{Touched: w.Providers, Writes: []*core.OwnWrite{w}})
}

// sendFast sends the fast path's statements for fc alone, as one
// implicit transaction, and reads what the write statement wrote (nil if
// it refused).
func (s *Allocations) sendFast(ctx context.Context, fc fastClaim) (*core.OwnWrite, error) {
	ws, err := s.sendWrites(ctx, []fastClaim{fc})
	if err != nil {
		return nil, err
	}
	return ws[0], nil
}

// sendWrites sends the write statements of fcs in one pipeline, as one
// implicit transaction after one lock statement: for a claim alone,
// fastLockSQL; for several (the claims of a batch that its statement did
// not write), usageLockSQL, which locks their providers and then every
// usage counter they add to (quota_check.go). It returns, per claim, what
// its statement wrote (nil: it refused). Any error rolls back every
// claim.
func (s *Allocations) sendWrites(ctx context.Context, fcs []fastClaim) ([]*core.OwnWrite, error) {
	ws := make([]*core.OwnWrite, len(fcs))
	var locks *usageLocks
	if len(fcs) > 1 {
		locks = usageLocksOf(fcs)
	}
	err := s.sendClaimPipeline(ctx, fcs, ws, locks, func(b *pgx.Batch) {
		for i := range fcs {
			queueFastWrite(b, &fcs[i])
		}
	}, func(br pgx.BatchResults) error {
		for i := range fcs {
			w, err := readFastWrite(br, fcs[i:i+1])
			if err != nil {
				return err
			}
			ws[i] = w
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// planAndLock starts the pipeline of a group of writes (a claim batch, a
// group of provider writes): fastPlanSQL, then fastLockSQL over the
// providers (stored uuids), which locks them in id order. The caller
// reads past both with skipResults.
func planAndLock(providers []string) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(fastPlanSQL)
	b.Queue(fastLockSQL, uuidArray(providers))
	return b
}

// sendClaimPipeline sends fastPlanSQL, the lock statement (fastLockXidSQL
// over every provider of fcs; usageLockSQL with locks, when not nil:
// quota_check.go), then the write statements queue adds (which lock their
// projects' usage counters themselves, after those of the lock
// statement), then, after usageLockSQL, core.SQLOwnXid, as one pipeline
// and one implicit transaction, and reads
// their answers with read, which fills ws (per claim, what it wrote; nil:
// refused). On any error nothing was written, except core.ErrNotReplicated:
// then ws committed on this primary, and the snapshot reloads their
// providers.
func (s *Allocations) sendClaimPipeline(ctx context.Context, fcs []fastClaim, ws []*core.OwnWrite, locks *usageLocks,
	queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	providers := fcs[0].providers
	if len(fcs) > 1 {
		providers = make([]string, 0, len(fcs))
		for _, fc := range fcs {
			for _, p := range fc.providers {
				if !slices.Contains(providers, p) {
					providers = append(providers, p)
				}
			}
		}
	}
	b := &pgx.Batch{}
	b.Queue(fastPlanSQL)
	// The transaction's id, for the snapshot to know its own change rows
	// (ledger/snapshot/changelog.go): answered by the providers' lock
	// (fastLockXidSQL), or, after the usage counters' lock, by one more
	// statement in the same pipeline.
	if locks != nil {
		// The providers' lock, then the usage counters' (quota_check.go).
		b.Queue(usageLockSQL, uuidArray(providers), locks.projects, locks.resources)
	} else {
		b.Queue(fastLockXidSQL, uuidArray(providers))
	}
	queue(b)
	if locks != nil {
		b.Queue(core.SQLOwnXid)
	}
	conn, err := s.core.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	s.core.Unsynced.Forget(conn.Conn().PgConn()) // a mark left by another statement's commit
	br := core.SendBatch(ctx, conn.Conn(), b)
	defer br.Close()
	if err := skipResults(br, 1); err != nil { // fastPlanSQL
		return err
	}
	var xid uint64
	if locks != nil {
		err = skipResults(br, 1)
	} else {
		xid, err = lockedXid(br)
	}
	if err != nil {
		return err
	}
	if err := read(br); err != nil {
		return err
	}
	if locks != nil {
		if xid, err = core.OwnXid(br); err != nil {
			return err
		}
	}
	for _, w := range ws {
		if w != nil {
			w.Xid = xid
		}
	}
	if err := br.Close(); err != nil {
		return err
	}
	// The implicit transaction committed: on the standby too, unless
	// PostgreSQL warned that it cancelled the wait (ledger/internal/core/replication.go). Then
	// the writes are visible here all the same: the snapshot reloads
	// their providers.
	if err := s.core.Unsynced.Replicated(conn.Conn().PgConn()); err != nil {
		t := &core.Txn{}
		for _, w := range ws {
			if w != nil {
				t.Touched = append(t.Touched, w.Providers...)
			}
		}
		s.core.Notify(t)
		return err
	}
	return nil
}

// lockedXid reads fastLockXidSQL's answer: the transaction's id, 0 if it
// has none.
func lockedXid(br pgx.BatchResults) (uint64, error) {
	var locked int64
	var xid *string
	if err := br.QueryRow().Scan(&locked, &xid); err != nil || xid == nil {
		return 0, err
	}
	return strconv.ParseUint(*xid, 10, 64)
}

// queueFastWrite queues fc's write statement, its allocations' arrays
// pointing at fc's own values.
func queueFastWrite(b *pgx.Batch, fc *fastClaim) {
	var op *string
	var fingerprint, request, result []byte
	if r := fc.request; r != nil {
		op, fingerprint, request, result = &r.Op, r.Fingerprint, r.Request, r.Result
	}
	st := fc.stateArgs()
	n := len(fc.amounts)
	args := newArgArrays(3, 3*n, n)
	rps, classes, amounts := args.next(n, (*uuidArg)(nil)), args.next(n, (*textArg)(nil)), args.next(n, (*int8Arg)(nil))
	for i := range fc.amounts {
		rps.elems[i], classes.elems[i], amounts.elems[i] = args.uuid(fc.allocProviders[i]),
			(*textArg)(&fc.allocClasses[i]), (*int8Arg)(&fc.amounts[i])
	}
	// JSON as json.RawMessage, not []byte, which pgx sends as a bytea when
	// it does not know the parameter's type (argArray).
	b.Queue(fastWriteSQL, rps, classes, amounts,
		fc.consumer, fc.project, fc.user, fc.consumerType, fc.name, json.RawMessage(fc.properties), fc.copySticky,
		op, fingerprint, json.RawMessage(request), json.RawMessage(result), st.op, json.RawMessage(st.request), st.root, st.lease,
		fc.quota.resources, fc.quota.limits)
}

// claimStateArgs are a fast write's stored claim as SQL arguments (all
// NULL: none).
type claimStateArgs struct {
	op, root *string
	request  []byte
	lease    *int32
}

// stateArgs returns fc's stored claim as SQL arguments.
func (fc *fastClaim) stateArgs() claimStateArgs {
	w := fc.state
	if w == nil {
		return claimStateArgs{}
	}
	a := claimStateArgs{op: &w.Op, request: w.RequestArg(), lease: w.LeaseArg()}
	if r, ok := core.CanonicalUUID(w.RootUUID); ok {
		a.root = &r
	}
	return a
}

// readFastWrite reads the answer of one write statement, fc[0]'s: what
// it wrote, or nil if it refused.
func readFastWrite(br pgx.BatchResults, fc []fastClaim) (*core.OwnWrite, error) {
	var consumerID *int64
	var bumped int64
	w := &core.OwnWrite{}
	a := &writeAnswer{dest: []any{&consumerID, &bumped, &w.Providers, &w.Generations, &w.UpdatedAt,
		&w.AllocProviders, &w.AllocClasses, &w.Amounts}}
	a.size(fc)
	if err := br.QueryRow().Scan(a); err != nil {
		return nil, err
	}
	if consumerID == nil {
		return nil, nil
	}
	return w, nil
}

// consumerUUIDs lists the uuids of consumers, in order.
func consumerUUIDs(consumers []ConsumerAllocations) []string {
	uuids := make([]string, len(consumers))
	for i, w := range consumers {
		uuids[i] = w.ConsumerUUID
	}
	return uuids
}

// Array arguments. pgx encodes a []string as a uuid[] only in the text
// format, after its binary plan fails (each time anew, with an error
// that prints the whole slice), and most other slices through
// reflection, boxing each element. An argArray is an array it encodes in
// the binary format, element by element through the element's own value
// method: the elements are pointers to the claims' own values (of the
// arg types below), or values pgx boxes without allocating (bools, small
// int32s), or []byte (json, or bytea where the array says so); nil is
// NULL. That takes the parameter's type, which pgx knows only from a
// statement it described; when it does not (default_query_exec_mode
// exec or simple_protocol), it sends the array's Value, its text.

// argArray is a one-dimensional array argument (pgtype.ArrayGetter).
type argArray struct {
	dims  [1]pgtype.ArrayDimension
	elems []any
	kind  any  // an element of the array's kind, for pgx to plan with
	bytea bool // its []byte elements are bytea (otherwise json or jsonb)
}

func (a *argArray) Dimensions() []pgtype.ArrayDimension {
	a.dims[0] = pgtype.ArrayDimension{Length: int32(len(a.elems)), LowerBound: 1}
	return a.dims[:]
}

func (a *argArray) Index(i int) any { return a.elems[i] }

func (a *argArray) IndexType() any { return a.kind }

// Value is a in PostgreSQL's text format of arrays (driver.Valuer), for
// pgx to send when it does not know the parameter's type: pgx plans an
// argument through its driver.Valuer only when no codec takes it. For a
// parameter of a known array type the array codec does (the binary
// format above); for one of no type (OID 0), none does. A nil a is NULL.
func (a *argArray) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	buf := append(make([]byte, 0, 2+40*len(a.elems)), '{')
	for i, e := range a.elems {
		if i > 0 {
			buf = append(buf, ',')
		}
		switch e := e.(type) {
		case nil:
			buf = append(buf, "NULL"...)
		case *textArg:
			buf = appendArrayQuoted(buf, string(*e))
		case *uuidArg:
			if _, err := e.UUIDValue(); err != nil {
				return nil, err
			}
			buf = append(buf, e.in...) // canonical: nothing to quote
		case *int8Arg:
			buf = strconv.AppendInt(buf, int64(*e), 10)
		case *int4Arg:
			buf = strconv.AppendInt(buf, int64(*e), 10)
		case int32:
			buf = strconv.AppendInt(buf, int64(e), 10)
		case bool:
			c := byte('f')
			if e {
				c = 't'
			}
			buf = append(buf, c)
		case []byte:
			switch {
			case e == nil:
				buf = append(buf, "NULL"...)
			case a.bytea:
				buf = hex.AppendEncode(append(buf, `"\\x`...), e)
				buf = append(buf, '"')
			default:
				buf = appendArrayQuoted(buf, e)
			}
		default:
			return nil, fmt.Errorf("an array argument's element of type %T", e)
		}
	}
	return string(append(buf, '}')), nil
}

// appendArrayQuoted appends s to buf as a quoted element of an array's
// text: in double quotes, each double quote and backslash escaped with a
// backslash.
func appendArrayQuoted[S string | []byte](buf []byte, s S) []byte {
	buf = append(buf, '"')
	for i := range len(s) {
		if c := s[i]; c == '"' || c == '\\' {
			buf = append(buf, '\\')
		}
		buf = append(buf, s[i])
	}
	return append(buf, '"')
}

// The element kinds: *textArg for text, *int8Arg for bigint, *int4Arg
// for int, *uuidArg for uuid.
type (
	textArg string
	int8Arg int64
	int4Arg int32
	uuidArg struct {
		v  pgtype.UUID
		in string // the text it was parsed from
	}
)

func (t *textArg) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*t), Valid: true}, nil
}

func (n *int8Arg) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*n), Valid: true}, nil
}

func (n *int4Arg) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*n), Valid: true}, nil
}

// UUIDValue is u, or an error if its text was not a uuid in the
// canonical form (every uuid a claim writes was canonicalised before).
func (u *uuidArg) UUIDValue() (pgtype.UUID, error) {
	if !u.v.Valid {
		return u.v, fmt.Errorf("not a canonical uuid: %q", u.in)
	}
	return u.v, nil
}

// parse sets u from s, a uuid in the canonical form (lowercase hex,
// dashed); u is not Valid if s is not one.
func (u *uuidArg) parse(s string) {
	u.in = s
	u.v.Bytes, u.v.Valid = uuid.Bytes(s)
}

// argArrays hands out array arguments whose elements, and parsed uuids,
// come from backing slices sized in advance: a statement's arguments in
// a few allocations, or none when they come from argArraysPool.
type argArrays struct {
	arrays []argArray
	elems  []any
	uuids  []uuidArg
	// args are the statement's arguments (batchArgs); allArrays,
	// allElems and allUUIDs the whole backing slices, for release.
	args      []any
	allArrays []argArray
	allElems  []any
	allUUIDs  []uuidArg
}

// argArraysPool holds the argArrays of batches whose pipelines ended,
// cleared, for the next batch's arguments.
var argArraysPool sync.Pool

// pooledArgArrays is newArgArrays's room, in the backing slices of an
// earlier batch's argArrays when argArraysPool has one; the caller
// releases it once its statement's pipeline ended.
func pooledArgArrays(arrays, elems, uuids int) *argArrays {
	b, _ := argArraysPool.Get().(*argArrays)
	if b == nil {
		b = &argArrays{}
	}
	if len(b.allArrays) < arrays {
		b.allArrays = make([]argArray, arrays)
	}
	if len(b.allElems) < elems {
		b.allElems = make([]any, elems)
	}
	if len(b.allUUIDs) < uuids {
		b.allUUIDs = make([]uuidArg, uuids)
	}
	b.arrays, b.elems, b.uuids, b.args = b.allArrays[:arrays], b.allElems[:elems], b.allUUIDs[:uuids], b.args[:0]
	return b
}

// release clears b of what it points at (the claims' values) and puts it
// in argArraysPool; nothing may use its arrays or arguments after.
func (b *argArrays) release() {
	clear(b.allArrays)
	clear(b.allElems)
	clear(b.allUUIDs)
	clear(b.args)
	b.arrays, b.elems, b.uuids, b.args = nil, nil, nil, b.args[:0]
	argArraysPool.Put(b)
}

// newArgArrays returns room for arrays arrays of elems elements in all,
// uuids of them uuids.
func newArgArrays(arrays, elems, uuids int) *argArrays {
	return &argArrays{arrays: make([]argArray, arrays), elems: make([]any, elems), uuids: make([]uuidArg, uuids)}
}

// next returns the next array, of n elements of kind, for the caller to
// fill.
func (b *argArrays) next(n int, kind any) *argArray {
	a := &b.arrays[0]
	b.arrays = b.arrays[1:]
	a.elems, a.kind = b.elems[:n:n], kind
	b.elems = b.elems[n:]
	return a
}

// uuid returns s parsed, as an element.
func (b *argArrays) uuid(s string) any {
	u := &b.uuids[0]
	b.uuids = b.uuids[1:]
	u.parse(s)
	return u
}

// uuidArray returns ss as a uuid[] argument (nil: NULL).
func uuidArray(ss []string) *argArray {
	if ss == nil {
		return nil
	}
	b := newArgArrays(1, len(ss), len(ss))
	a := b.next(len(ss), (*uuidArg)(nil))
	for i := range ss {
		a.elems[i] = b.uuid(ss[i])
	}
	return a
}

// writeAnswer scans a row of a write statement's answer
// (pgx.RowScanner) into dest, pointers of the kinds below. It decodes
// the binary format of integers, bools and one-dimensional integer and
// timestamptz arrays itself, with no scan plan per column (pgx plans
// every column of every row set afresh), and the arrays of its rows into
// slices of one backing array per kind; any other column, or an array
// with a NULL or an infinite or out-of-range time, goes to pgx's own
// scan, as rows.Scan would.
type writeAnswer struct {
	dest  []any
	ints  []int64
	times []time.Time
}

func (a *writeAnswer) ScanRow(rows pgx.Rows) error {
	fds, vals := rows.FieldDescriptions(), rows.RawValues()
	if len(fds) != len(a.dest) {
		return fmt.Errorf("a write's answer has %d columns, not %d", len(fds), len(a.dest))
	}
	for i, fd := range fds {
		if fd.Format == pgtype.BinaryFormatCode && a.decode(fd.DataTypeOID, vals[i], a.dest[i]) {
			continue
		}
		if err := rows.Conn().TypeMap().Scan(fd.DataTypeOID, fd.Format, vals[i], a.dest[i]); err != nil {
			return pgx.ScanArgError{ColumnIndex: i, FieldName: fd.Name, Err: err}
		}
	}
	return nil
}

// size makes room in a's backing arrays for the answers of fcs's
// writes: per claim, its providers' ids and generations, its allocations'
// providers, classes and amounts, and its providers' times.
func (a *writeAnswer) size(fcs []fastClaim) {
	ints, times := 0, 0
	for i := range fcs {
		ints += 2*len(fcs[i].providers) + 3*len(fcs[i].amounts)
		times += len(fcs[i].providers)
	}
	a.ints, a.times = make([]int64, 0, ints), make([]time.Time, 0, times)
}

// decode sets dst from src, a column of type oid in the binary format,
// and reports whether it could.
func (a *writeAnswer) decode(oid uint32, src []byte, dst any) bool {
	switch d := dst.(type) {
	case *int64:
		v, ok := binaryInt(oid, src)
		*d = v
		return ok
	case **int64:
		if src == nil {
			*d = nil
			return true
		}
		v, ok := binaryInt(oid, src)
		if ok {
			*d = &v
		}
		return ok
	case **int32:
		if src == nil {
			*d = nil
			return true
		}
		v, ok := binaryInt(oid, src)
		if ok && v == int64(int32(v)) {
			n := int32(v)
			*d = &n
			return true
		}
		return false
	case *bool:
		if oid != pgtype.BoolOID || len(src) != 1 {
			return false
		}
		*d = src[0] == 1
		return true
	case *[]int64:
		if src == nil {
			*d = nil
			return true
		}
		return decodeArray(src, &a.ints, d, binaryInt)
	case *[]time.Time:
		if src == nil {
			*d = nil
			return true
		}
		return decodeArray(src, &a.times, d, binaryTime)
	}
	return false
}

// binaryInt is src, an int8, int4 or int2 of type oid in the binary
// format.
func binaryInt(oid uint32, src []byte) (int64, bool) {
	switch {
	case oid == pgtype.Int8OID && len(src) == 8:
		return int64(binary.BigEndian.Uint64(src)), true
	case oid == pgtype.Int4OID && len(src) == 4:
		return int64(int32(binary.BigEndian.Uint32(src))), true
	case oid == pgtype.Int2OID && len(src) == 2:
		return int64(int16(binary.BigEndian.Uint16(src))), true
	}
	return 0, false
}

// microsecondsToY2K is the Unix time of 2000-01-01, PostgreSQL's epoch,
// in microseconds.
const microsecondsToY2K = 946_684_800 * 1_000_000

// binaryTime is src, a timestamptz in the binary format, as pgx scans
// one (in the local time zone); not ok for the infinities and for years
// outside 1 to 9999, which pgx scans or refuses itself.
func binaryTime(oid uint32, src []byte) (time.Time, bool) {
	if oid != pgtype.TimestamptzOID || len(src) != 8 {
		return time.Time{}, false
	}
	us := int64(binary.BigEndian.Uint64(src))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return time.Time{}, false
	}
	t := time.Unix(microsecondsToY2K/1_000_000+us/1_000_000, (microsecondsToY2K%1_000_000*1_000)+(us%1_000_000*1_000))
	if y := t.Year(); y < 1 || y > 9999 {
		return time.Time{}, false // pgx checks its range
	}
	return t, true
}

// decodeArray sets *dst to src, a one-dimensional array without NULLs
// in the binary format, as a slice of *buf, decoding each element with
// elem; ok false (and *buf as before) for any other array.
func decodeArray[T any](src []byte, buf *[]T, dst *[]T, elem func(uint32, []byte) (T, bool)) bool {
	if len(src) < 12 {
		return false
	}
	ndim, oid := binary.BigEndian.Uint32(src), binary.BigEndian.Uint32(src[8:])
	if ndim == 0 && len(src) == 12 {
		*dst = []T{}
		return true
	}
	if ndim != 1 || len(src) < 20 {
		return false
	}
	n := int(int32(binary.BigEndian.Uint32(src[12:])))
	start := len(*buf)
	*buf = slices.Grow(*buf, n)
	for p := 20; ; {
		if p == len(src) && len(*buf) == start+n {
			*dst = (*buf)[start : start+n : start+n]
			return true
		}
		if p+4 > len(src) || len(*buf) == start+n {
			break
		}
		size := int(int32(binary.BigEndian.Uint32(src[p:])))
		p += 4
		if size < 0 || p+size > len(src) {
			break
		}
		v, ok := elem(oid, src[p:p+size])
		if !ok {
			break
		}
		*buf = append(*buf, v)
		p += size
	}
	*buf = (*buf)[:start]
	return false
}
