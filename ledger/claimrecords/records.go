package claimrecords

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"

	"github.com/jackc/pgx/v5"
)

// What the claims package remembers between calls, written in the claim
// transactions (ledger/resources/claim_write.go) and read by later ones: the requests and
// answers of claims, for their retries; the move in progress per consumer,
// so confirm and revert can find the migration consumer
// (migrations/0003_claims.up.sql); the providers each consumer failed on,
// so a reschedule avoids all of them. All are keyed by uuid and outlive
// the consumer row.

// Requests recorded for retries (migrations/0004_claim_requests.up.sql).
//
// A claim, reschedule or move writes, in the same transaction as its
// allocations, one claim_requests row: a fingerprint of the request and
// the answer given. A client that did not learn the outcome (the answer
// was lost, or the database failed over during COMMIT) retries; the
// claims package then finds the row and answers the retry with the
// original result instead of a conflict or a second allocation. The row
// exists exactly when the allocations were committed, on every node that
// has the commit, so the answer survives a failover and a restart of
// berthd.
//
// Whether a commit whose connection broke took effect is read with
// ClaimRequestConfirmed, which makes sure that what it read is on the
// synchronous standby (see there).

// Records are what claims remember, read and changed outside a claim's
// transaction. It is safe for concurrent use.
type Records struct {
	core *core.Core
	// failureTTL is how long a failure is remembered (<= 0: for ever);
	// requestTTL how long a claim's request and answer are kept (<= 0:
	// for ever).
	failureTTL, requestTTL time.Duration
}

// New returns the Records of co. Failures older than failureTTL and
// requests older than requestTTL are purged in the background on bg
// (co.Wait waits for it); <= 0 keeps them for ever.
func New(bg context.Context, co *core.Core, failureTTL, requestTTL time.Duration) *Records {
	s := &Records{core: co}
	if failureTTL > 0 {
		s.failureTTL = failureTTL
		co.Go(func() { s.purgeClaimFailures(bg) })
	}
	if requestTTL > 0 {
		s.requestTTL = requestTTL
		co.Go(func() { s.purgeClaimRequests(bg) })
	}
	return s
}

// ClaimRequest is what a claim transaction records for its retries.
type ClaimRequest struct {
	ConsumerUUID string
	// Op is the operation: "claim", "reschedule" or "move".
	Op string
	// Fingerprint identifies the request (a hash of Request).
	Fingerprint []byte
	// Request is the request's fields as a JSON object; Result the
	// answer given, as JSON. Both are the claims package's to define.
	Request, Result []byte
	// Generation is the consumer's generation after the write.
	Generation int64
	CreatedAt  time.Time
}

const claimRequestUpsertSQL = `
INSERT INTO claim_requests (consumer_uuid, op, fingerprint, request, result, generation)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (consumer_uuid, op) DO UPDATE
SET fingerprint = EXCLUDED.fingerprint, request = EXCLUDED.request, result = EXCLUDED.result,
    generation = EXCLUDED.generation, created_at = now()`

const claimRequestGetSQL = `
SELECT fingerprint, request, result, generation, created_at FROM claim_requests
WHERE consumer_uuid = $1 AND op = $2 AND ($3::interval IS NULL OR created_at > now() - $3::interval)`

// WriteRequest records r in t (nil: nothing to record).
func WriteRequest(ctx context.Context, t *core.Txn, r *ClaimRequest) error {
	if r == nil {
		return nil
	}
	id, ok := core.CanonicalUUID(r.ConsumerUUID)
	if !ok {
		return fault.Invalid("", "Malformed consumer uuid: %s", r.ConsumerUUID)
	}
	// JSON as json.RawMessage: pgx sends a []byte as a bytea when it does
	// not know the parameter's type (default_query_exec_mode exec,
	// simple_protocol).
	_, err := t.Exec(ctx, claimRequestUpsertSQL, id, r.Op, r.Fingerprint, json.RawMessage(r.Request), json.RawMessage(r.Result), r.Generation)
	return err
}

// ClaimRequestGet returns what was recorded for consumerUUID's last op
// within the TTL, nil if nothing. It reads from the primary as any read
// does: a row it returns may, in the moment after a failover or while a
// commit waits for its standby, not be durable yet. Before answering
// with a recorded result, confirm it with ClaimRequestConfirmed.
func (s *Records) ClaimRequestGet(ctx context.Context, consumerUUID, op string) (*ClaimRequest, error) {
	return claimRequestGet(ctx, s.core.DB, consumerUUID, op, s.requestInterval())
}

// ClaimRequestConfirmed is ClaimRequestGet made durable: the row, if
// there is one, is read by an UPDATE that rewrites it unchanged, so the
// transaction writes WAL and, with synchronous replication, its COMMIT
// returns only when the synchronous standby has all the WAL up to it,
// the original write's included. (A transaction that writes no WAL does
// not wait for the standby, even with a transaction id.) A row it
// returns is therefore one the cluster keeps across a failover. Its
// absence needs no such proof: the caller then answers "unknown" (503),
// not "not written". It is how the outcome of a commit whose connection
// broke is learnt. A commit whose wait for the standby was cancelled is
// fault.ErrUnavailable (see replicated): the answer is then not known.
func (s *Records) ClaimRequestConfirmed(ctx context.Context, consumerUUID, op string) (*ClaimRequest, error) {
	var r *ClaimRequest
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		var err error
		r, err = claimRequestScan(ctx, t, claimRequestConfirmSQL, consumerUUID, op, s.requestInterval())
		return err
	})
	return r, err
}

const claimRequestConfirmSQL = `
UPDATE claim_requests SET created_at = created_at
WHERE consumer_uuid = $1 AND op = $2 AND ($3::interval IS NULL OR created_at > now() - $3::interval)
RETURNING fingerprint, request, result, generation, created_at`

func claimRequestGet(ctx context.Context, q core.Querier, consumerUUID, op string, ttl any) (*ClaimRequest, error) {
	return claimRequestScan(ctx, q, claimRequestGetSQL, consumerUUID, op, ttl)
}

// claimRequestScan runs sql (claimRequestGetSQL or claimRequestConfirmSQL)
// and reads its row, nil if none.
func claimRequestScan(ctx context.Context, q core.Querier, sql, consumerUUID, op string, ttl any) (*ClaimRequest, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	r := &ClaimRequest{ConsumerUUID: id, Op: op}
	err := q.QueryRow(ctx, sql, id, op, ttl).
		Scan(&r.Fingerprint, &r.Request, &r.Result, &r.Generation, &r.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// requestInterval is the request TTL as an SQL interval argument, nil
// (NULL) when kept for ever.
func (s *Records) requestInterval() any {
	if s.requestTTL <= 0 {
		return nil
	}
	return s.requestTTL
}

// purgeClaimRequests deletes recorded requests older than the TTL, as
// purgeClaimFailures does for failures, until ctx ends.
func (s *Records) purgeClaimRequests(ctx context.Context) {
	every := min(max(s.requestTTL/4, time.Minute), time.Hour)
	for {
		if _, err := s.core.DB.Exec(ctx, `DELETE FROM claim_requests WHERE created_at < now() - $1::interval`,
			s.requestTTL); err != nil && ctx.Err() == nil {
			s.core.Log.Warn("ledger: purging expired claim requests", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// MoveRecord is a move in progress: the instance ConsumerUUID has its
// destination allocations, the consumer MigrationUUID holds the source.
type MoveRecord struct {
	ConsumerUUID  string
	MigrationUUID string
	// Reason is "relocation", "rebalance" or "evacuation".
	Reason string
	// SourceRoot is the root provider the instance moved away from.
	SourceRoot string
	CreatedAt  time.Time
}

// ClaimMoveGet returns the move in progress for consumerUUID, nil if
// there is none.
func (s *Records) ClaimMoveGet(ctx context.Context, consumerUUID string) (*MoveRecord, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	var m MoveRecord
	var src *string
	err := s.core.DB.QueryRow(ctx, `
		SELECT consumer_uuid::text, migration_uuid::text, reason, source_root::text, created_at
		FROM claim_moves WHERE consumer_uuid = $1`, id).
		Scan(&m.ConsumerUUID, &m.MigrationUUID, &m.Reason, &src, &m.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if src != nil {
		m.SourceRoot = *src
	}
	return &m, nil
}

// ClaimMovesFrom lists the moves in progress away from the root
// provider sourceRoot, by migration uuid (none: an empty list).
func (s *Records) ClaimMovesFrom(ctx context.Context, sourceRoot string) ([]MoveRecord, error) {
	id, ok := core.CanonicalUUID(sourceRoot)
	if !ok {
		return nil, nil
	}
	rows, err := s.core.DB.Query(ctx, `
		SELECT consumer_uuid::text, migration_uuid::text, reason, source_root::text, created_at
		FROM claim_moves WHERE source_root = $1 ORDER BY migration_uuid`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (MoveRecord, error) {
		var m MoveRecord
		err := row.Scan(&m.ConsumerUUID, &m.MigrationUUID, &m.Reason, &m.SourceRoot, &m.CreatedAt)
		return m, err
	})
}

// ForgetMove drops, in t, consumer's move record (none: nothing to do), after
// ending the move in its stored claim as end says (empty: not at all).
func ForgetMove(ctx context.Context, t *core.Txn, consumer, end string) error {
	id, ok := core.CanonicalUUID(consumer)
	if !ok {
		return nil
	}
	switch end {
	case MoveConfirmed:
		if _, err := t.Exec(ctx, claimStateConfirmSQL, id); err != nil {
			return err
		}
	case MoveReverted:
		if _, err := t.Exec(ctx, claimStateRevertSQL, id); err != nil {
			return err
		}
	}
	_, err := t.Exec(ctx, `DELETE FROM claim_moves WHERE consumer_uuid = $1`, id)
	return err
}

// WriteMove records, in t, the move in progress m (nil: nothing).
func WriteMove(ctx context.Context, t *core.Txn, m *MoveRecord) error {
	if m == nil {
		return nil
	}
	c, ok1 := core.CanonicalUUID(m.ConsumerUUID)
	mig, ok2 := core.CanonicalUUID(m.MigrationUUID)
	if !ok1 || !ok2 {
		return fault.Invalid("", "Malformed consumer or migration uuid: %s, %s", m.ConsumerUUID, m.MigrationUUID)
	}
	var src *string
	if r, ok := core.CanonicalUUID(m.SourceRoot); ok {
		src = &r
	}
	_, err := t.Exec(ctx, `
		INSERT INTO claim_moves (consumer_uuid, migration_uuid, reason, source_root)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (consumer_uuid) DO UPDATE
		SET migration_uuid = EXCLUDED.migration_uuid, reason = EXCLUDED.reason,
		    source_root = EXCLUDED.source_root, created_at = now()`,
		c, mig, m.Reason, src)
	return err
}

// ClaimFailureAdd remembers that consumerUUID failed on the root provider
// providerUUID (idempotent).
func (s *Records) ClaimFailureAdd(ctx context.Context, consumerUUID, providerUUID string) error {
	c, ok1 := core.CanonicalUUID(consumerUUID)
	p, ok2 := core.CanonicalUUID(providerUUID)
	if !ok1 || !ok2 {
		return fault.Invalid("", "Malformed consumer or provider uuid: %s, %s", consumerUUID, providerUUID)
	}
	_, err := s.core.DB.Exec(ctx, `
		INSERT INTO claim_failures (consumer_uuid, provider_uuid) VALUES ($1, $2)
		ON CONFLICT (consumer_uuid, provider_uuid) DO UPDATE SET failed_at = now()`, c, p)
	return err
}

// ClaimFailures lists the root providers consumerUUID failed on within
// the failure TTL (Config.ClaimFailureTTL), oldest first.
func (s *Records) ClaimFailures(ctx context.Context, consumerUUID string) ([]string, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	rows, err := s.core.DB.Query(ctx, `
		SELECT provider_uuid::text FROM claim_failures
		WHERE consumer_uuid = $1 AND ($2::interval IS NULL OR failed_at > now() - $2::interval)
		ORDER BY failed_at, provider_uuid`, id, s.failureInterval())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// failureInterval is the failure TTL as an SQL interval argument, nil
// (NULL) when failures are remembered for ever.
func (s *Records) failureInterval() any {
	if s.failureTTL <= 0 {
		return nil
	}
	return s.failureTTL
}

// purgeClaimFailures deletes remembered failures older than the failure
// TTL, at start and then every quarter of the TTL (but not more often
// than once a minute, and at least hourly), until ctx ends.
// ClaimFailures ignores them in between, so the purge only keeps the
// table small.
func (s *Records) purgeClaimFailures(ctx context.Context) {
	every := min(max(s.failureTTL/4, time.Minute), time.Hour)
	for {
		if _, err := s.core.DB.Exec(ctx, `DELETE FROM claim_failures WHERE failed_at < now() - $1::interval`,
			s.failureTTL); err != nil && ctx.Err() == nil {
			s.core.Log.Warn("ledger: purging expired claim failures", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// Stored claims (migrations/0007_claim_state.up.sql), table claim_state:
// the claim each consumer holds, for as long as it holds it. One row per
// consumer that a claim, a reschedule or a move placed, written in the
// same transaction as its allocations (the one-round-trip statements of
// ledger/resources/claim_write.go and ledger/resources/claim_writers.go included) and deleted with the
// consumer (a foreign key with ON DELETE CASCADE: DELETE
// /allocations/{c}, a write that empties the consumer, a lease that runs
// out). A consumer whose allocations only the Placement API wrote has no
// row. The columns:
//
//	consumer_uuid          uuid, the primary key; references consumers (uuid)
//	op                     the last operation that wrote the row: claim,
//	                       reschedule, move, confirm, revert, renew
//	request                jsonb: the request that placed the consumer, as
//	                       the API received it (merged with the stored one
//	                       for a reschedule or move); the claims package's
//	                       and httpapi's to define, never read here
//	root_uuid              uuid: the root provider it landed on
//	state                  provisional | permanent | moving (ClaimProvisional...)
//	lease_seconds          integer: the lease's length as last asked for; NULL: none
//	lease_expires_at       timestamptz, by PostgreSQL's clock: when a
//	                       provisional claim is released, or a moving claim's
//	                       move reverted; NULL for a permanent claim and a
//	                       move without a lease
//	prior_request, prior_lease_seconds, prior_lease_expires_at
//	                       while moving: what the claim had before the move,
//	                       restored by a revert (prior_lease_expires_at NULL:
//	                       it was permanent)
//	created_at, updated_at timestamptz
//
// A claim is expired when lease_expires_at <= now(): the lease reaper
// (package claims) then releases a provisional claim's allocations, or
// reverts a moving claim's move, each in one transaction of its own that
// re-checks the lease under the row's lock (resources.ClaimWriteParams.IfLeaseExpired),
// so a claim confirmed or renewed meanwhile is left alone. Until the
// reaper's next pass an expired claim still holds its allocations.
//
// The transitions, and who makes them (in the same transaction as the
// allocations they go with, if any):
//
//   - a claim (ClaimStateWrite, LeaseSet): provisional with a lease,
//     permanent without; a lease on a consumer that existed needs its claim
//     to be provisional (fault.CodeLeaseOnPermanent otherwise);
//   - a reschedule without a lease (LeaseKeep): the state stays, a
//     provisional claim's lease restarts for its length; with a lease, as
//     a claim;
//   - a move (LeaseMove): moving, the move's lease (if any) in
//     lease_expires_at, the claim's own in prior_*;
//   - confirm of a move: permanent; revert (by a client, or the reaper
//     when the move's lease runs out): the prior state, request and root;
//   - PATCH /claims/{c} (ClaimLeaseSet): renew the lease, or confirm
//     (permanent);
//   - any Placement-API write of the consumer's allocations (PUT or POST
//     /allocations, POST /reshaper): the lease is dropped, the claim made
//     permanent (a moving claim stays moving, with no lease and a
//     permanent prior state) by SettleStates, in that write's
//     transaction;
//   - the end of the consumer: the row goes with it.

// The states of a stored claim (claim_state.state).
const (
	ClaimProvisional = "provisional"
	ClaimPermanent   = "permanent"
	ClaimMoving      = "moving"
)

// ClaimState is a stored claim (a claim_state row), with the migration
// consumer of its move in progress, if any.
type ClaimState struct {
	ConsumerUUID string
	Op           string
	// Request is the stored request, a JSON object.
	Request  []byte
	RootUUID string
	State    string
	// LeaseSeconds is the lease's length as last asked for, 0 if none.
	LeaseSeconds int64
	// LeaseExpiresAt is when the lease runs out; nil without a lease.
	LeaseExpiresAt *time.Time
	// Expired: the lease has run out (by PostgreSQL's clock), and the
	// reaper has yet to act on it.
	Expired bool
	// MigrationUUID is the migration consumer of the move in progress
	// (claim_moves), empty if none.
	MigrationUUID        string
	CreatedAt, UpdatedAt time.Time
}

// LeaseMode says how a claim transaction's lease combines with the
// claim's state before it (ClaimStateWrite.Mode).
type LeaseMode int

const (
	// LeaseSet: the claim is provisional with ClaimStateWrite's lease, or
	// permanent without one. A lease on a consumer that existed before
	// the write needs that consumer's stored claim to be provisional; else
	// the write is refused (fault.ErrConflict, CodeLeaseOnPermanent).
	LeaseSet LeaseMode = iota
	// LeaseKeep (a reschedule without a lease): the state stays; a
	// provisional claim's lease starts again for its length.
	LeaseKeep
	// LeaseMove: the claim is moving; its lease, if any, bounds the move
	// (its expiry reverts the move), and the claim's state before is kept
	// for a revert.
	LeaseMove
)

// ClaimStateWrite is what a claim transaction stores of its claim.
type ClaimStateWrite struct {
	// Op is the operation: "claim", "reschedule" or "move".
	Op string
	// Request is the request to store, a JSON object; nil stores {}.
	Request []byte
	// RootUUID is the root provider the claim landed on.
	RootUUID string
	// LeaseSeconds is the lease asked for, in seconds; 0: none.
	LeaseSeconds int64
	Mode         LeaseMode
}

// LeaseArg is LeaseSeconds as an SQL argument: NULL for none.
func (w *ClaimStateWrite) LeaseArg() *int32 {
	if w.LeaseSeconds <= 0 {
		return nil
	}
	n := int32(min(w.LeaseSeconds, math.MaxInt32))
	return &n
}

// RequestArg is Request as an SQL argument: JSON, not []byte, which pgx
// sends as a bytea when it does not know the parameter's type.
func (w *ClaimStateWrite) RequestArg() json.RawMessage {
	if w.Request == nil {
		return json.RawMessage("{}")
	}
	return w.Request
}

// claimStateSetSQL stores a claim of mode LeaseSet (and, alike, one of a
// new consumer in the fast paths): provisional with a lease ($5 seconds),
// permanent without; any prior state of a move is dropped.
const claimStateSetSQL = `
INSERT INTO claim_state (consumer_uuid, op, request, root_uuid, state, lease_seconds, lease_expires_at)
VALUES ($1, $2, $3, $4, CASE WHEN $5::int IS NULL THEN 'permanent' ELSE 'provisional' END, $5::int,
        now() + $5::int * interval '1 second')
ON CONFLICT (consumer_uuid) DO UPDATE
SET op = EXCLUDED.op, request = EXCLUDED.request, root_uuid = EXCLUDED.root_uuid, state = EXCLUDED.state,
    lease_seconds = EXCLUDED.lease_seconds, lease_expires_at = EXCLUDED.lease_expires_at,
    prior_request = NULL, prior_lease_seconds = NULL, prior_lease_expires_at = NULL, updated_at = now()`

// claimStateLeaseAgainSQL stores a claim with a lease over a consumer
// that existed: only if its stored claim is provisional (no row changed:
// refused).
const claimStateLeaseAgainSQL = `
UPDATE claim_state
SET op = $2, request = $3, root_uuid = $4, state = 'provisional', lease_seconds = $5::int,
    lease_expires_at = now() + $5::int * interval '1 second',
    prior_request = NULL, prior_lease_seconds = NULL, prior_lease_expires_at = NULL, updated_at = now()
WHERE consumer_uuid = $1 AND state = 'provisional'`

// claimStateKeepSQL stores a claim of mode LeaseKeep: a new row is
// permanent; an existing one keeps its state, a provisional one's lease
// starting again.
const claimStateKeepSQL = `
INSERT INTO claim_state (consumer_uuid, op, request, root_uuid, state)
VALUES ($1, $2, $3, $4, 'permanent')
ON CONFLICT (consumer_uuid) DO UPDATE
SET op = EXCLUDED.op, request = EXCLUDED.request, root_uuid = EXCLUDED.root_uuid, updated_at = now(),
    lease_expires_at = CASE WHEN claim_state.state = 'provisional'
                            THEN now() + claim_state.lease_seconds * interval '1 second'
                            ELSE claim_state.lease_expires_at END`

// claimStateMoveSQL stores a claim of mode LeaseMove: moving, the move's
// lease ($5 seconds, NULL: none), and what the claim was before (kept
// from the first move if it was moving already).
const claimStateMoveSQL = `
INSERT INTO claim_state (consumer_uuid, op, request, root_uuid, state, lease_seconds, lease_expires_at)
VALUES ($1, $2, $3, $4, 'moving', $5::int, now() + $5::int * interval '1 second')
ON CONFLICT (consumer_uuid) DO UPDATE
SET op = EXCLUDED.op, request = EXCLUDED.request, root_uuid = EXCLUDED.root_uuid, state = 'moving',
    lease_seconds = EXCLUDED.lease_seconds, lease_expires_at = EXCLUDED.lease_expires_at, updated_at = now(),
    prior_request = CASE WHEN claim_state.state = 'moving' THEN claim_state.prior_request ELSE claim_state.request END,
    prior_lease_seconds = CASE claim_state.state WHEN 'moving' THEN claim_state.prior_lease_seconds
                          WHEN 'provisional' THEN claim_state.lease_seconds END,
    prior_lease_expires_at = CASE claim_state.state WHEN 'moving' THEN claim_state.prior_lease_expires_at
                             WHEN 'provisional' THEN claim_state.lease_expires_at END`

// WriteState stores w as consumer's claim in t. existed says that
// the consumer existed before the transaction (its generation was
// checked).
func WriteState(ctx context.Context, t *core.Txn, consumer string, existed bool, w *ClaimStateWrite) error {
	if w == nil {
		return nil
	}
	id, ok := core.CanonicalUUID(consumer)
	if !ok {
		return fault.Invalid("", "Malformed consumer uuid: %s", consumer)
	}
	var root *string
	if r, ok := core.CanonicalUUID(w.RootUUID); ok {
		root = &r
	}
	lease := w.LeaseArg()
	sql := claimStateSetSQL
	switch {
	case w.Mode == LeaseKeep && lease == nil:
		sql = claimStateKeepSQL
	case w.Mode == LeaseMove:
		sql = claimStateMoveSQL
	case lease != nil && existed:
		tag, err := t.Exec(ctx, claimStateLeaseAgainSQL, id, w.Op, w.RequestArg(), root, lease)
		if err == nil && tag.RowsAffected() == 0 {
			return leaseOnPermanent(id)
		}
		return err
	}
	if sql == claimStateKeepSQL {
		_, err := t.Exec(ctx, sql, id, w.Op, w.RequestArg(), root)
		return err
	}
	_, err := t.Exec(ctx, sql, id, w.Op, w.RequestArg(), root, lease)
	return err
}

// leaseOnPermanent refuses a lease over allocations that are not
// provisional.
func leaseOnPermanent(consumer string) error {
	return fault.Conflict(fault.CodeLeaseOnPermanent, "Consumer %s holds allocations that are not provisional (written "+
		"without a lease, confirmed, moving, or written through the Placement API): a lease would make them "+
		"releasable. Claim without lease_seconds, or delete its allocations first.", consumer)
}

// The end of a move in the stored claim (resources.ClaimWriteParams.MoveEnd).
const (
	MoveConfirmed = "confirm"
	MoveReverted  = "revert"
)

// claimStateConfirmSQL ends a move by confirming it: permanent.
const claimStateConfirmSQL = `
UPDATE claim_state
SET op = 'confirm', state = 'permanent', lease_seconds = NULL, lease_expires_at = NULL,
    prior_request = NULL, prior_lease_seconds = NULL, prior_lease_expires_at = NULL, updated_at = now()
WHERE consumer_uuid = $1`

// claimStateRevertSQL ends a move by reverting it: the claim as it was
// before the move (its request, its lease or none), on the move's source
// root (read before the move record goes).
const claimStateRevertSQL = `
UPDATE claim_state
SET op = 'revert',
    state = CASE WHEN prior_lease_expires_at IS NULL THEN 'permanent' ELSE 'provisional' END,
    lease_seconds = CASE WHEN prior_lease_expires_at IS NULL THEN NULL ELSE prior_lease_seconds END,
    lease_expires_at = prior_lease_expires_at,
    request = COALESCE(prior_request, request),
    root_uuid = COALESCE((SELECT source_root FROM claim_moves WHERE consumer_uuid = $1), root_uuid),
    prior_request = NULL, prior_lease_seconds = NULL, prior_lease_expires_at = NULL, updated_at = now()
WHERE consumer_uuid = $1 AND state = 'moving'`

// settleClaimStatesSQL makes the stored claims of consumers ($1) that a
// Placement-API write changed permanent: the lease is dropped (a moving
// claim stays moving, without a lease, and would revert to permanent).
// Rows without a lease are not touched (nor locked).
const settleClaimStatesSQL = `
UPDATE claim_state
SET state = CASE WHEN state = 'provisional' THEN 'permanent' ELSE state END,
    lease_seconds = NULL, lease_expires_at = NULL, prior_lease_seconds = NULL, prior_lease_expires_at = NULL,
    updated_at = now()
WHERE consumer_uuid = ANY($1::uuid[]) AND (lease_expires_at IS NOT NULL OR prior_lease_expires_at IS NOT NULL)`

// SettleStates makes the stored claims of the consumers that a
// Placement-API write changed permanent, in its transaction t.
func SettleStates(ctx context.Context, t *core.Txn, consumers []string) error {
	uuids := make([]string, 0, len(consumers))
	for _, c := range consumers {
		if id, ok := core.CanonicalUUID(c); ok {
			uuids = append(uuids, id)
		}
	}
	_, err := t.Exec(ctx, settleClaimStatesSQL, uuids)
	return err
}

// CheckLeaseExpired locks consumer's stored claim and refuses
// (fault.ErrConflict, CodeLeaseNotExpired) unless its lease has run out:
// the lease reaper's guard (resources.ClaimWriteParams.IfLeaseExpired). The
// caller has locked the consumer's row first, as every writer of its
// allocations does, so a Placement-API write and the reaper queue on
// that lock instead of deadlocking on this one.
func CheckLeaseExpired(ctx context.Context, t *core.Txn, consumer string) error {
	id, ok := core.CanonicalUUID(consumer)
	if !ok {
		return fault.Invalid("", "Malformed consumer uuid: %s", consumer)
	}
	var one int
	err := t.QueryRow(ctx, `
		SELECT 1 FROM claim_state WHERE consumer_uuid = $1 AND lease_expires_at <= now() FOR UPDATE`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Conflict(fault.CodeLeaseNotExpired, "The lease of consumer %s has not run out: it was renewed or confirmed.", id)
	}
	return err
}
