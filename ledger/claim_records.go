package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// What the claims package remembers between calls, written in the claim
// transactions (claim_write.go) and read by later ones: the requests and
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

// DefaultClaimRequestTTL is Config.ClaimRequestTTL when 0: how long a
// claim's answer is kept for retries. A client retries within seconds or
// minutes of the unknown outcome; an hour leaves room for a long outage.
const DefaultClaimRequestTTL = time.Hour

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

// writeClaimRequest records r in t (nil: nothing to record).
func writeClaimRequest(ctx context.Context, t *txn, r *ClaimRequest) error {
	if r == nil {
		return nil
	}
	id, ok := canonicalUUID(r.ConsumerUUID)
	if !ok {
		return invalid("", "Malformed consumer uuid: %s", r.ConsumerUUID)
	}
	_, err := t.Exec(ctx, claimRequestUpsertSQL, id, r.Op, r.Fingerprint, r.Request, r.Result, r.Generation)
	return err
}

// ClaimRequestGet returns what was recorded for consumerUUID's last op
// within the TTL, nil if nothing. It reads from the primary as any read
// does: a row it returns may, in the moment after a failover or while a
// commit waits for its standby, not be durable yet. Before answering
// with a recorded result, confirm it with ClaimRequestConfirmed.
func (s *Store) ClaimRequestGet(ctx context.Context, consumerUUID, op string) (*ClaimRequest, error) {
	return claimRequestGet(ctx, s.db, consumerUUID, op, s.requestInterval())
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
func (s *Store) ClaimRequestConfirmed(ctx context.Context, consumerUUID, op string) (*ClaimRequest, error) {
	var r *ClaimRequest
	err := s.withTx(ctx, func(t *txn) error {
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

func claimRequestGet(ctx context.Context, q querier, consumerUUID, op string, ttl any) (*ClaimRequest, error) {
	return claimRequestScan(ctx, q, claimRequestGetSQL, consumerUUID, op, ttl)
}

// claimRequestScan runs sql (claimRequestGetSQL or claimRequestConfirmSQL)
// and reads its row, nil if none.
func claimRequestScan(ctx context.Context, q querier, sql, consumerUUID, op string, ttl any) (*ClaimRequest, error) {
	id, ok := canonicalUUID(consumerUUID)
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
func (s *Store) requestInterval() any {
	if s.requestTTL <= 0 {
		return nil
	}
	return s.requestTTL
}

// purgeClaimRequests deletes recorded requests older than the TTL, as
// purgeClaimFailures does for failures, until ctx ends.
func (s *Store) purgeClaimRequests(ctx context.Context) {
	every := min(max(s.requestTTL/4, time.Minute), time.Hour)
	for {
		if _, err := s.db.Exec(ctx, `DELETE FROM claim_requests WHERE created_at < now() - $1::interval`,
			s.requestTTL); err != nil && ctx.Err() == nil {
			s.log.Warn("ledger: purging expired claim requests", "error", err)
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
	// Reason is "relocation" or "evacuation".
	Reason string
	// SourceRoot is the root provider the instance moved away from.
	SourceRoot string
	CreatedAt  time.Time
}

// ClaimMoveGet returns the move in progress for consumerUUID, nil if
// there is none.
func (s *Store) ClaimMoveGet(ctx context.Context, consumerUUID string) (*MoveRecord, error) {
	id, ok := canonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	var m MoveRecord
	var src *string
	err := s.db.QueryRow(ctx, `
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

// ClaimFailureAdd remembers that consumerUUID failed on the root provider
// providerUUID (idempotent).
func (s *Store) ClaimFailureAdd(ctx context.Context, consumerUUID, providerUUID string) error {
	c, ok1 := canonicalUUID(consumerUUID)
	p, ok2 := canonicalUUID(providerUUID)
	if !ok1 || !ok2 {
		return invalid("", "Malformed consumer or provider uuid: %s, %s", consumerUUID, providerUUID)
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO claim_failures (consumer_uuid, provider_uuid) VALUES ($1, $2)
		ON CONFLICT (consumer_uuid, provider_uuid) DO UPDATE SET failed_at = now()`, c, p)
	return err
}

// ClaimFailures lists the root providers consumerUUID failed on within
// the failure TTL (Config.ClaimFailureTTL), oldest first.
func (s *Store) ClaimFailures(ctx context.Context, consumerUUID string) ([]string, error) {
	id, ok := canonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, `
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
func (s *Store) failureInterval() any {
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
func (s *Store) purgeClaimFailures(ctx context.Context) {
	every := min(max(s.failureTTL/4, time.Minute), time.Hour)
	for {
		if _, err := s.db.Exec(ctx, `DELETE FROM claim_failures WHERE failed_at < now() - $1::interval`,
			s.failureTTL); err != nil && ctx.Err() == nil {
			s.log.Warn("ledger: purging expired claim failures", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
