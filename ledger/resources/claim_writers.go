package resources

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// Group commit of fast-path claims.
//
// Each fast-path claim alone is one implicit transaction: one round trip,
// one commit, one WAL flush, one backend wake-up. On a small machine most
// of PostgreSQL's CPU per claim goes to that fixed cost, not to the rows
// written. So claims that arrive while the writers are
// busy are written together: a few writer goroutines each take the claims
// queued, up to claimBatchMax, and send them as one pipeline, one implicit
// transaction:
//
//  1. fastPlanSQL, once;
//  2. fastLockXidSQL (fastLockSQL answering the transaction's id) over
//     every provider of every claim of the batch, once, in id order (as
//     every writer of allocations locks), so batches cannot deadlock on
//     provider rows;
//  3. batchWriteSQL, once: it writes the claims of the batch in queue
//     order up to the first that it cannot write.
//
// batchWriteSQL re-checks each claim as fastWriteSQL does a lone one,
// counting against its capacity what the claims before it in the batch
// take (a running sum per provider and class, in queue order), as if
// each had run in a transaction of its own, one after the other. It
// cannot count a claim that was refused, so it stops at the first claim
// that does not fit (no room, an unknown class or provider, a consumer
// that exists or that an earlier claim of the batch creates, a project,
// user or type that does not exist yet: fastWriteSQL's refusals): that
// claim and every one after it are sent again, in a second implicit
// transaction, as one fastWriteSQL each (sendWrites, whose lock
// statement, usageLockSQL, locks all their usage counters at once, after
// their providers), where each statement sees the rows of the earlier
// ones. A claim whose statement refuses there writes nothing and does
// not stop the others; its caller runs the general path, as after a lone
// fast write that refused. So every claim is checked against exactly the
// claims written before it; a batch where all fit costs one statement,
// and PostgreSQL less CPU per claim than a statement per claim
// (BenchmarkClaimBatchStatement, docs/performance.md).
//
// A batch is atomic as a whole only in failure: if any statement raises
// an error (a value PostgreSQL rejects, a lost connection, a deadlock on
// a consumer that another write creates at the same moment), the whole
// implicit transaction rolls back and every claim of it (the batch, or
// the claims sent again after the first refusal) is sent again alone,
// where it meets its own error or succeeds. So a batch never changes
// what a claim may do or the error it gets, only what the claims cost.
//
// A lone claim at an idle writer goes out at once: batches form only
// from claims that would otherwise wait, and no claim waits for a timer.

// claimBatchMax bounds the claims of one batch: a batch holds the row
// locks of all its providers until it commits, so a very large batch
// would hold other writers back for longer, and a small bound lets
// clients queue faster than batches drain (docs/performance.md).
const claimBatchMax = 64

// errAlone tells a caller that its claim was part of a batch that failed
// as a whole and that it must send its claim again, alone.
var errAlone = errors.New("ledger: claim batch failed; send alone")

// startClaimBatcher starts n claim writers on s, which stop when ctx ends.
func (s *Allocations) startClaimBatcher(ctx context.Context, n int) *core.GroupWriter[fastClaim, *core.OwnWrite] {
	return core.StartGroupWriter(s.core, ctx, n, claimBatchMax, s.writeBatch)
}

// writeBatch sends batch as one implicit transaction and answers each
// claim. A batch of one answers with its error as sendFast does; a
// larger batch that fails answers errAlone to every claim.
func (s *Allocations) writeBatch(ctx context.Context, batch []*core.GroupItem[fastClaim, *core.OwnWrite]) {
	if len(batch) == 1 {
		// The caller's context, as a lone claim always had: a caller
		// that gives up cancels its statement.
		r := batch[0]
		r.Answer(s.sendFastAndNotify(r.Ctx, r.Req))
		return
	}
	fcs := make([]fastClaim, len(batch))
	for i, r := range batch {
		fcs[i] = r.Req
	}
	ws, first, err := s.sendBatchWrite(ctx, fcs)
	if err != nil {
		for _, r := range batch {
			r.Answer(nil, errAlone)
		}
		return
	}
	s.notifyWrites(ws[:first])
	if first < len(batch) {
		// The rest, one statement each, in a transaction of their own.
		rest, err := s.sendWrites(ctx, fcs[first:])
		if err != nil {
			for _, r := range batch[first:] {
				r.Answer(nil, errAlone)
			}
			batch = batch[:first]
		} else {
			copy(ws[first:], rest)
			s.notifyWrites(rest)
		}
	}
	for i, r := range batch {
		r.Answer(ws[i], nil)
	}
}

// notifyWrites tells the snapshot and the other processes about the
// writes of one committed transaction (nil: refused). The snapshot
// applies them at once, in commit order (two claims of the batch on one
// provider bump its generation twice), before any caller learns of its
// write (read-your-writes).
func (s *Allocations) notifyWrites(ws []*core.OwnWrite) {
	touched := 0
	for _, w := range ws {
		if w != nil {
			touched += len(w.Providers)
		}
	}
	t := &core.Txn{Touched: make([]int64, 0, touched), Writes: make([]*core.OwnWrite, 0, len(ws))}
	for _, w := range ws {
		if w != nil {
			t.Touched = append(t.Touched, w.Providers...)
			t.Writes = append(t.Writes, w)
		}
	}
	s.core.Notify(t)
}

// queueClaim hands fc to the writers and waits for its answer
// (core.GroupWriter.Send).
func (s *Allocations) queueClaim(ctx context.Context, fc fastClaim) (*core.OwnWrite, error) {
	return s.claims.Send(ctx, fc)
}

// batchWriteSQL writes claims 1 to n (the ordinality of the per-claim
// arrays $5 to $20; the allocations $1 to $4 and the given limits $21 to
// $23 name their claim) in queue order, up to the first it cannot write,
// "first": a claim with an allocation that does not fit (chk: the
// inventory's bounds, and its capacity against the committed allocations
// plus this claim's and every earlier claim's of the batch on that
// provider and class), that would take its project past a limit (over:
// its project's usage counters, locked here (lk) when a claim of the
// batch is limited, plus what it and every earlier claim of the batch
// add; quota_check.go), or whose consumer
// exists or is an earlier claim's, or whose project, user or type does
// not exist yet. Claims before it are written as fastWriteSQL writes
// one: the consumer, its sticky keys, its allocations (ids in request
// order), the providers' generations (once per claim), the projects'
// usage counters (once per project and resource, in the global order),
// the claim's request, its stored claim.
//
// One row per written claim in queue order (claim 1-based; a
// generation is the provider's after that claim, for the snapshot to
// apply the claims one by one), or one row with a NULL claim if none was
// written; every row carries "first" (2147483647: none refused) and
// whether a limit is stored at all. It is built of parts (batchReadSQL,
// batchLimitsSQL, batchCutSQL, batchWriteTailSQL), so that
// batchNoLimitSQL is the same statement without the limit check.
var batchWriteSQL = batchReadSQL + batchLimitsSQL + fmt.Sprintf(batchCutSQL, "over") + batchWriteTailSQL

// batchReadSQL is the batch statement's first part, after claimWriteMark:
// the claims, their allocations checked against the inventories (chk),
// their owners, what they add to their projects' usage (adds), and
// whether a limit is stored.
const batchReadSQL = claimWriteMark + `
WITH req AS (
	SELECT * FROM unnest($1::int[], $2::uuid[], $3::text[], $4::bigint[])
	       WITH ORDINALITY AS r(claim, provider_uuid, class, amount, ord)
), cl AS (
	SELECT * FROM unnest($5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::boolean[],
	                     $12::text[], $13::bytea[], $14::json[], $15::json[],
	                     $16::text[], $17::jsonb[], $18::uuid[], $19::int[], $20::boolean[])
	       WITH ORDINALITY AS c(consumer, project, usr, ctype, name, properties, copy_sticky, op, fingerprint, request, result,
	                            state_op, state_request, state_root, lease, stored_limits, claim)
), rp AS MATERIALIZED (
	-- The batch's providers and classes, each looked up once, however
	-- many of its allocations name it.
	SELECT uuid, id FROM resource_providers WHERE uuid = ANY($2::uuid[])
), rc AS MATERIALIZED (
	SELECT name, id FROM resource_classes WHERE name = ANY($3::text[])
), chk AS (
	SELECT req.claim, req.ord, rp.id AS provider_id, rc.id AS class_id, req.amount,
	       i.resource_provider_id IS NOT NULL
	       AND req.amount >= i.min_unit AND req.amount <= i.max_unit AND req.amount % i.step_size = 0
	       AND (COALESCE((SELECT sum(a.used) FROM allocations a
	                      WHERE a.resource_provider_id = rp.id AND a.resource_class_id = rc.id), 0)::bigint
	            + sum(req.amount) OVER (PARTITION BY rp.id, rc.id ORDER BY req.claim))::double precision
	           <= (i.total - i.reserved)::double precision * i.allocation_ratio
	       AS fits
	FROM req
	LEFT JOIN rp ON rp.uuid = req.provider_uuid
	LEFT JOIN rc ON rc.name = req.class
	LEFT JOIN inventories i ON i.resource_provider_id = rp.id AND i.resource_class_id = rc.id
), owner AS (
	-- Each claim's project, user and type, which must exist (NULL: not
	-- written).
	SELECT cl.claim, cl.ctype, p.id AS project_id, u.id AS user_id, t.id AS type_id FROM cl
	LEFT JOIN projects p ON p.external_id = cl.project
	LEFT JOIN users u ON u.external_id = cl.usr
	LEFT JOIN consumer_types t ON t.name = cl.ctype
), stored AS (
	-- Whether a limit is stored at all, in the statement's snapshot (as
	-- limits_of reads): once per batch; answered to the writer.
	SELECT EXISTS (SELECT FROM project_limits) OR EXISTS (SELECT FROM registered_limits) AS found
), adds AS (
	-- What each claim adds to its project's usage: its amounts by class and
	-- one consumer (a migration consumer adds nothing).
	SELECT x.claim, cl.project, x.resource, x.amount FROM (
		SELECT claim, class AS resource, sum(amount)::bigint AS amount FROM req GROUP BY claim, class
		UNION ALL
		SELECT claim, 'consumers', 1 FROM cl
	) x JOIN cl ON cl.claim = x.claim WHERE cl.ctype <> 'MIGRATION'
)`

// batchLimitsSQL is batchWriteSQL's limit check: the claims over a limit
// (over), which its cut stops at.
const batchLimitsSQL = `, lim AS (
	-- Each claim's limits (quota.go): those given ($21 to $23: claim,
	-- resource, limit), or the stored ones of the claims whose limits are
	-- stored ($20), looked up only when a limit is stored at all.
	SELECT * FROM unnest($21::int[], $22::text[], $23::bigint[]) AS g(claim, resource, resource_limit)
	UNION ALL
	SELECT cl.claim, l.resource, l.resource_limit FROM cl CROSS JOIN LATERAL limits_of(cl.project) l
	WHERE cl.stored_limits AND (SELECT found FROM stored)
), limited AS (
	-- Whether a claim of the batch adds to a limited counter.
	SELECT EXISTS (SELECT 1 FROM adds JOIN lim ON lim.claim = adds.claim AND lim.resource = adds.resource) AS active
), lk AS (
	-- When one is, the usage counters of every (project, resource) the
	-- batch's claims add to, locked in the global order and read at their
	-- newest state, as fastWriteSQL's lk locks a lone claim's.
	SELECT u.project_id, u.resource, u.used FROM project_usages u
	WHERE (u.project_id, u.resource) IN (SELECT p.id, adds.resource FROM adds JOIN projects p ON p.external_id = adds.project)
	  AND (SELECT active FROM limited)
	ORDER BY u.project_id, u.resource COLLATE "C"
	FOR UPDATE
), over AS (
	-- When a claim of the batch is limited: the claims that would take a
	-- limited counter of their project past its limit, counting what the
	-- claims before them in the batch add, and those that add to a
	-- counter that does not exist yet (a new project, a resource the
	-- project never held: as in fastWriteSQL's qok).
	SELECT x.claim FROM (
		SELECT adds.*, sum(adds.amount) OVER (PARTITION BY adds.project, adds.resource ORDER BY adds.claim) AS upto
		FROM adds
	) x
	LEFT JOIN lim ON lim.claim = x.claim AND lim.resource = x.resource
	LEFT JOIN projects p ON p.external_id = x.project
	LEFT JOIN lk ON lk.project_id = p.id AND lk.resource = x.resource
	WHERE (SELECT active FROM limited) AND (lk.resource IS NULL OR lk.used + x.upto > lim.resource_limit)
)`

// batchCutSQL is batchWriteSQL's cut, from the first claim it cannot
// write on; %s is the claims a limit stops (batchLimitsSQL's over, or
// batchNoLimitSQL's).
const batchCutSQL = `, cut AS (
	SELECT COALESCE(min(claim), 2147483647) AS first FROM (
		SELECT claim FROM chk GROUP BY claim HAVING NOT bool_and(COALESCE(fits, false))
		UNION ALL
		SELECT claim FROM %s
		UNION ALL
		-- The batch's consumers that exist, found by the index for the
		-- batch's uuids: a correlated EXISTS here was planned, on the
		-- statistics of an empty table, as a hash of every consumer.
		SELECT cl.claim FROM cl WHERE cl.consumer IN (SELECT uuid FROM consumers WHERE uuid = ANY($5::uuid[]))
		   OR EXISTS (SELECT 1 FROM cl c2 WHERE c2.consumer = cl.consumer AND c2.claim < cl.claim)
		UNION ALL
		-- A project, user or type that does not exist yet: the general path
		-- creates names (fastWriteSQL).
		SELECT claim FROM owner WHERE project_id IS NULL OR user_id IS NULL OR (ctype <> '' AND type_id IS NULL)
	) bad
)`

// batchWriteTailSQL is batchWriteSQL's writes, after its cut, and its
// answer.
const batchWriteTailSQL = `, ok AS (
	SELECT cl.* FROM cl, cut WHERE cl.claim < cut.first
), c AS (
	INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, name, properties)
	SELECT ok.consumer, o.project_id, o.user_id, o.type_id, 1, ok.name, ok.properties
	FROM ok JOIN owner o ON o.claim = ok.claim
	ORDER BY ok.claim -- ids in queue order: the generations below rely on it
	ON CONFLICT (uuid) DO NOTHING
	RETURNING id, uuid, project_id
), cc AS (
	SELECT c.id, c.project_id, ok.* FROM c JOIN ok ON ok.consumer = c.uuid
), k AS (
	INSERT INTO consumer_placement_keys (consumer_id, name, value)
	SELECT DISTINCT ON (cc.id, pk.name) cc.id, pk.name, pk.value
	FROM cc JOIN chk ON chk.claim = cc.claim CROSS JOIN LATERAL (
		SELECT name, value FROM provider_placement_keys
		WHERE resource_provider_id = chk.provider_id AND sticky OFFSET 0) pk
	WHERE cc.copy_sticky
	ORDER BY cc.id, pk.name, chk.provider_id
	RETURNING 1
), a AS (
	INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
	SELECT cc.id, chk.provider_id, chk.class_id, chk.amount FROM cc JOIN chk ON chk.claim = cc.claim
	ORDER BY chk.ord -- ids in request order: GET /allocations lists them so
	RETURNING id, consumer_id, resource_provider_id, resource_class_id, used
), cp AS (
	SELECT DISTINCT consumer_id, resource_provider_id FROM a
), g AS (
	UPDATE resource_providers rp
	SET generation = rp.generation + (SELECT count(*) FROM cp WHERE cp.resource_provider_id = rp.id),
	    updated_at = now()
	WHERE rp.id = ANY (ARRAY(SELECT resource_provider_id FROM cp))
	RETURNING rp.id, rp.generation, rp.updated_at
), cnt AS (
	-- The projects' usage counters: what the claims written add.
	INSERT INTO project_usages AS u (project_id, resource, used)
	SELECT cc.project_id, adds.resource, sum(adds.amount)::bigint FROM cc JOIN adds ON adds.claim = cc.claim
	GROUP BY cc.project_id, adds.resource ORDER BY cc.project_id, adds.resource COLLATE "C"
	ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used
	RETURNING 1
), q AS (
	INSERT INTO claim_requests (consumer_uuid, op, fingerprint, request, result, generation)
	SELECT cc.consumer, cc.op, cc.fingerprint, cc.request, cc.result, 1 FROM cc WHERE cc.op IS NOT NULL
	ON CONFLICT (consumer_uuid, op) DO UPDATE
	SET fingerprint = EXCLUDED.fingerprint, request = EXCLUDED.request, result = EXCLUDED.result,
	    generation = EXCLUDED.generation, created_at = now()
	RETURNING 1
), s AS (
	-- The stored claims, as fastWriteSQL's s stores one.
	INSERT INTO claim_state (consumer_uuid, op, request, root_uuid, state, lease_seconds, lease_expires_at)
	SELECT cc.consumer, cc.state_op, cc.state_request, cc.state_root,
	       CASE WHEN cc.lease IS NULL THEN 'permanent' ELSE 'provisional' END,
	       cc.lease, now() + cc.lease * interval '1 second'
	FROM cc WHERE cc.state_op IS NOT NULL
	RETURNING 1
), lc AS (
	-- The change log's row (migrations/0008, 0017 and 0019): the
	-- providers the claims changed, which are those whose generations g
	-- bumped. The triggers of allocations' insert and resource_providers'
	-- update, which would log the same providers, do not run for a
	-- statement that begins with claimWriteMark.
	INSERT INTO ledger_changes (xid, providers)
	SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END FROM g HAVING count(*) > 0
	RETURNING 1
), cg AS (
	SELECT cp.consumer_id, g.id, g.updated_at,
	       g.generation - (SELECT count(*) FROM cp later
	                       WHERE later.resource_provider_id = g.id AND later.consumer_id > cp.consumer_id) AS generation
	FROM cp JOIN g ON g.id = cp.resource_provider_id
)
SELECT cut.first, (SELECT found FROM stored), w.claim, w.ids, w.gens, w.ats, w.rps, w.rcs, w.used
FROM cut LEFT JOIN (
	SELECT cc.claim, p.ids, p.gens, p.ats, al.rps, al.rcs, al.used
	FROM cc
	CROSS JOIN LATERAL (SELECT array_agg(cg.id ORDER BY cg.id) AS ids, array_agg(cg.generation ORDER BY cg.id) AS gens,
	                           array_agg(cg.updated_at ORDER BY cg.id) AS ats
	                    FROM cg WHERE cg.consumer_id = cc.id) p
	CROSS JOIN LATERAL (SELECT array_agg(a.resource_provider_id ORDER BY a.id) AS rps,
	                           array_agg(a.resource_class_id ORDER BY a.id) AS rcs, array_agg(a.used ORDER BY a.id) AS used
	                    FROM a WHERE a.consumer_id = cc.id) al
) w ON true
ORDER BY w.claim`

// batchNoLimitSQL is the batch statement for claims that no limit can
// apply to: none of them has limits given, and those whose limits are
// stored are sent so only when the writer's last batch found no limit
// stored (Allocations.noStoredLimits). It has no lim, limited, lk or
// over: no limit's lookup, lock or check, no plan nodes for them. Its
// guard keeps the check's guarantee all the same: a claim with stored
// limits is cut (and sent again with fastWriteSQL, which checks its
// limits) when a limit is stored in the statement's snapshot, the
// snapshot batchWriteSQL reads limits in; so a limit committed by any
// process before the statement starts stops it, as with batchWriteSQL.
var batchNoLimitSQL = batchReadSQL + fmt.Sprintf(batchCutSQL,
	"cl WHERE cl.stored_limits AND (SELECT found FROM stored)") + batchWriteTailSQL

// sendBatchWrite sends fcs as one batchWriteSQL after the plan and lock
// statements, as one implicit transaction, and returns what it wrote per
// claim (nil: not written) and the index of the first claim it refused
// (len(fcs): none). Claims from first on were not written; claims
// before it that were not written refused. Any error rolls back every
// claim.
func (s *Allocations) sendBatchWrite(ctx context.Context, fcs []fastClaim) (ws []*core.OwnWrite, first int, err error) {
	n := len(fcs)
	ws, first = make([]*core.OwnWrite, n), n
	sql, args, arrays := s.batchArgs(fcs)
	defer arrays.release()
	err = s.sendClaimPipeline(ctx, fcs, ws, nil, func(b *pgx.Batch) {
		b.Queue(sql, args...)
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		owns := make([]core.OwnWrite, n)
		var cut int64
		var anyStored bool
		var c *int32
		a := &writeAnswer{dest: make([]any, 9)}
		a.size(fcs)
		for k := 0; rows.Next(); k++ {
			var w *core.OwnWrite
			if k < n { // at most one row per claim
				w = &owns[k]
			} else {
				w = new(core.OwnWrite)
			}
			a.dest = append(a.dest[:0], &cut, &anyStored, &c, &w.Providers, &w.Generations, &w.UpdatedAt,
				&w.AllocProviders, &w.AllocClasses, &w.Amounts)
			if err := rows.Scan(a); err != nil {
				return err
			}
			s.noStoredLimits.Store(!anyStored)
			if cut != math.MaxInt32 {
				first = int(cut) - 1
			}
			if c != nil {
				ws[*c-1] = w
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return ws, first, nil
}

// batchArgs returns the batch statement for fcs (batchWriteSQL, or
// batchNoLimitSQL when no limit may apply) and its arguments, arrays
// whose elements point at fcs's own values, from b, which the caller
// releases once the statement's pipeline ended.
func (s *Allocations) batchArgs(fcs []fastClaim) (sql string, args []any, b *argArrays) {
	n, allocs, limited := len(fcs), 0, 0
	for i := range fcs {
		allocs += len(fcs[i].amounts)
		limited += len(fcs[i].quota.resources)
	}
	b = pooledArgArrays(23, 4*allocs+16*n+3*limited, allocs+2*n)
	claim, rps, classes, amounts := b.next(allocs, int32(0)), b.next(allocs, (*uuidArg)(nil)),
		b.next(allocs, (*textArg)(nil)), b.next(allocs, (*int8Arg)(nil))
	var cl [16]*argArray // the per-claim arrays, $5 to $20 (cl in batchReadSQL)
	for k, kind := range [16]any{(*uuidArg)(nil), (*textArg)(nil), (*textArg)(nil), (*textArg)(nil), (*textArg)(nil),
		[]byte(nil), false, (*textArg)(nil), []byte(nil), []byte(nil), []byte(nil),
		(*textArg)(nil), []byte(nil), (*uuidArg)(nil), (*int4Arg)(nil), false} {
		cl[k] = b.next(n, kind)
	}
	cl[8].bytea = true // $13, the fingerprints; the other []byte arrays are json or jsonb
	limClaim, limResources, limits := b.next(limited, int32(0)), b.next(limited, (*textArg)(nil)), b.next(limited, (*int8Arg)(nil))
	j, l := 0, 0
	for i := range fcs {
		fc := &fcs[i]
		for k := range fc.quota.resources {
			limClaim.elems[l], limResources.elems[l], limits.elems[l] = int32(i+1),
				(*textArg)(&fc.quota.resources[k]), (*int8Arg)(&fc.quota.limits[k])
			l++
		}
		for k := range fc.amounts {
			claim.elems[j], rps.elems[j] = int32(i+1), b.uuid(fc.allocProviders[k])
			classes.elems[j], amounts.elems[j] = (*textArg)(&fc.allocClasses[k]), (*int8Arg)(&fc.amounts[k])
			j++
		}
		e := [16]any{b.uuid(fc.consumer), (*textArg)(&fc.project), (*textArg)(&fc.user), (*textArg)(&fc.consumerType),
			nil, fc.properties, fc.copySticky, nil, nil, nil, nil, nil, nil, nil, nil, fc.quota.stored()}
		if fc.name != nil {
			e[4] = (*textArg)(fc.name)
		}
		if r := fc.request; r != nil {
			e[7], e[8], e[9], e[10] = (*textArg)(&r.Op), r.Fingerprint, r.Request, r.Result
		}
		if w := fc.state; w != nil {
			e[11], e[12] = (*textArg)(&w.Op), []byte(w.RequestArg())
			if root, ok := core.CanonicalUUID(w.RootUUID); ok {
				e[13] = b.uuid(root)
			}
			if lease := w.LeaseArg(); lease != nil {
				e[14] = (*int4Arg)(lease)
			}
		}
		for k := range e {
			cl[k].elems[i] = e[k]
		}
	}
	args = append(b.args, claim, rps, classes, amounts)
	for _, a := range cl {
		args = append(args, a)
	}
	sql = batchNoLimitSQL
	if s.limitMayApply(fcs) {
		sql, args = batchWriteSQL, append(args, limClaim, limResources, limits)
	}
	b.args = args
	return sql, args, b
}

// limitMayApply reports whether a limit may apply to a claim of fcs, so
// that their batch must be sent with its limit check (batchWriteSQL):
// one of them has limits given, or has its limits stored while the last
// batch statement found a limit stored (or none ran yet). Otherwise
// batchNoLimitSQL writes them, and cuts the batch at its first claim
// with stored limits if a limit is stored after all.
func (s *Allocations) limitMayApply(fcs []fastClaim) bool {
	for _, fc := range fcs {
		if len(fc.quota.resources) > 0 || fc.quota.stored() && !s.noStoredLimits.Load() {
			return true
		}
	}
	return false
}
