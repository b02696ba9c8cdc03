package ledger

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
)

// The claim fast path: the write of a new consumer's allocations (a
// claim, or PUT /allocations/{uuid} with "consumer_generation": null) as
// two statements sent in one round trip, instead of the general path's
// dozen statements each waiting for the one before.
//
//  1. fastLockSQL creates the project, user and consumer type if they
//     are new, and locks the rows of the providers written to (FOR
//     UPDATE, in id order, as lockProviders does).
//  2. fastWriteSQL runs with a snapshot taken after those locks were
//     granted, so it sees every allocation committed on those providers
//     (every writer of allocations holds the provider's lock until it
//     commits). It re-checks every allocation against the inventory
//     (class present, min_unit, max_unit, step_size, capacity) and, only
//     if all fit, creates the consumer (generation 1), inserts the
//     allocations, bumps the providers' generations and queues the change
//     notification for other processes. It answers whether it wrote.
//
// When the write statement refuses (no room, a provider or class that
// does not exist, a consumer that exists after all), nothing of the
// consumer or its allocations was written, and the caller goes on with
// the general path in the same transaction: it finds the same state under
// the same locks and either writes or refuses with Placement's exact
// error. So the fast path changes the cost of a claim, never its outcome.
const fastLockSQL = `
WITH p AS (
	INSERT INTO projects (external_id) SELECT $1::text
	WHERE NOT EXISTS (SELECT 1 FROM projects WHERE external_id = $1::text)
	ON CONFLICT DO NOTHING
), u AS (
	INSERT INTO users (external_id) SELECT $2::text
	WHERE NOT EXISTS (SELECT 1 FROM users WHERE external_id = $2::text)
	ON CONFLICT DO NOTHING
), t AS (
	INSERT INTO consumer_types (name) SELECT $3::text
	WHERE $3::text <> '' AND NOT EXISTS (SELECT 1 FROM consumer_types WHERE name = $3::text)
	ON CONFLICT DO NOTHING
)
SELECT id FROM resource_providers WHERE uuid = ANY($4::uuid[]) ORDER BY id FOR UPDATE`

const fastWriteSQL = `
WITH req AS (
	SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS r(provider_uuid, class, amount)
), chk AS (
	SELECT rp.id AS provider_id, rc.id AS class_id, req.amount,
	       i.resource_provider_id IS NOT NULL
	       AND req.amount >= i.min_unit AND req.amount <= i.max_unit AND req.amount % i.step_size = 0
	       AND (COALESCE((SELECT sum(a.used) FROM allocations a
	                      WHERE a.resource_provider_id = rp.id AND a.resource_class_id = rc.id), 0)::bigint
	            + req.amount)::double precision <= (i.total - i.reserved)::double precision * i.allocation_ratio
	       AS fits
	FROM req
	LEFT JOIN resource_providers rp ON rp.uuid = req.provider_uuid
	LEFT JOIN resource_classes rc ON rc.name = req.class
	LEFT JOIN inventories i ON i.resource_provider_id = rp.id AND i.resource_class_id = rc.id
), ok AS (
	SELECT bool_and(COALESCE(fits, false)) AS ok FROM chk
), c AS (
	INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation)
	SELECT $4::uuid, (SELECT id FROM projects WHERE external_id = $5::text),
	       (SELECT id FROM users WHERE external_id = $6::text),
	       (SELECT id FROM consumer_types WHERE name = $7::text), 1
	FROM ok WHERE ok.ok
	ON CONFLICT (uuid) DO NOTHING
	RETURNING id
), a AS (
	INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
	SELECT c.id, chk.provider_id, chk.class_id, chk.amount FROM c, chk
	RETURNING resource_provider_id
), g AS (
	UPDATE resource_providers SET generation = generation + 1, updated_at = now()
	WHERE id IN (SELECT resource_provider_id FROM a)
	RETURNING id
), n AS (
	SELECT pg_notify($8::text, $9::text || ids) FROM (SELECT string_agg(id::text, ',' ORDER BY id) AS ids FROM g) x
	WHERE ids IS NOT NULL
)
SELECT (SELECT id FROM c), (SELECT count(*) FROM n)`

// fastClaim is a write the fast path can take: one new consumer with
// allocations of positive amounts, each (provider, class) once.
type fastClaim struct {
	consumer, project, user, consumerType string
	providers                             []string // distinct, canonical
	allocProviders, allocClasses          []string
	amounts                               []int64
}

// fastClaimOf returns the fast-path form of ws, or ok false when the
// general path must handle it.
func fastClaimOf(ws []ConsumerAllocations) (fc fastClaim, ok bool) {
	if len(ws) != 1 {
		return fc, false
	}
	w := &ws[0]
	// Name, Properties and sticky keys are written by the general path.
	if !w.CheckGeneration || w.Generation != nil || len(w.Allocations) == 0 ||
		w.Name != "" || w.Properties != nil || w.CopyStickyKeys {
		return fc, false
	}
	if fc.consumer, ok = canonicalUUID(w.ConsumerUUID); !ok {
		return fc, false
	}
	fc.project, fc.user, fc.consumerType = w.ProjectID, w.UserID, w.ConsumerType
	if fc.project == "" {
		fc.project = IncompleteConsumerID
	}
	if fc.user == "" {
		fc.user = IncompleteConsumerID
	}
	type key struct{ provider, class string }
	var seen []key
	for _, pr := range w.Allocations {
		rp, ok := canonicalUUID(pr.ProviderUUID)
		if !ok || len(pr.Resources) == 0 {
			return fc, false
		}
		if !slices.Contains(fc.providers, rp) {
			fc.providers = append(fc.providers, rp)
		}
		for _, r := range pr.Resources {
			k := key{rp, r.Class}
			if r.Amount <= 0 || slices.Contains(seen, k) {
				return fc, false
			}
			seen = append(seen, k)
			fc.allocProviders = append(fc.allocProviders, rp)
			fc.allocClasses = append(fc.allocClasses, r.Class)
			fc.amounts = append(fc.amounts, r.Amount)
		}
	}
	return fc, true
}

// writeFast tries the fast path in t. done reports that the allocations
// were written and the change notification queued; when done is false
// and err is nil, nothing but the project, user and consumer type rows
// was written, the providers' row locks are held, and the caller goes on
// with the general path.
func (s *Store) writeFast(ctx context.Context, t *txn, fc fastClaim) (done bool, err error) {
	b := &pgx.Batch{}
	b.Queue(fastLockSQL, fc.project, fc.user, fc.consumerType, fc.providers)
	b.Queue(fastWriteSQL, fc.allocProviders, fc.allocClasses, fc.amounts,
		fc.consumer, fc.project, fc.user, fc.consumerType, notifyChannel, s.sender+":")
	br := t.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return false, err
	}
	locked, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return false, err
	}
	var consumerID *int64
	var notified int64
	if err := br.QueryRow().Scan(&consumerID, &notified); err != nil {
		return false, err
	}
	if err := br.Close(); err != nil {
		return false, err
	}
	if consumerID == nil {
		return false, nil
	}
	t.touch(locked...)
	t.notified = notified > 0
	return true, nil
}
