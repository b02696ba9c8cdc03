package ledger

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Idempotent claims (migrations/0004_claim_requests.up.sql).
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

// allocationsReplace is AllocationsReplace recording req (nil: nothing)
// in the same transaction as the allocations, on the fast path as on the
// general one.
func (s *Store) allocationsReplace(ctx context.Context, consumers []ConsumerAllocations, req *ClaimRequest) error {
	if fc, ok := fastClaimOf(consumers); ok {
		// A new consumer: try the claim fast path (allocation_fast.go),
		// one round trip. If it refuses, the general path gives the
		// answer, with its exact error.
		fc.request = req
		if done, err := s.claimFast(ctx, fc); done || err != nil {
			return err
		}
	}
	return s.withTx(ctx, func(t *txn) error {
		if err := s.replaceAllocationsGeneral(ctx, t, consumers); err != nil {
			return err
		}
		return writeClaimRequest(ctx, t, req)
	})
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

// Synchronous replication and cancelled commits.
//
// With synchronous replication, COMMIT writes the commit record, then
// waits for the synchronous standby. If that wait is cancelled (a cancel
// request, pg_cancel_backend, a shutdown; not statement_timeout, which
// PostgreSQL disables before committing), PostgreSQL keeps
// the transaction committed locally and answers COMMIT with success and
// only a WARNING ("canceling wait for synchronous replication ...
// already committed locally"): the write may be lost if this primary is.
// Berth must not answer 200 for it. Every connection's notices go
// through onNotice, which marks the connection; the code that commits
// (txBeginner.runTx under withTx, sendClaimPipeline) asks replicated afterwards and turns a marked
// commit into fault.ErrUnavailable (503 with Retry-After): the client retries,
// and the retry converges once the standby confirms (ClaimRequestConfirmed).
//
// A deadline (the request's context) does not cancel a COMMIT on the
// server: pgx closes the connection instead, and the backend goes on
// waiting for the standby; the caller sees a broken connection, an
// unknown outcome, settled the same way.

// unsyncedCommits marks connections that received the warning.
type unsyncedCommits struct{ m sync.Map } // *pgconn.PgConn -> struct{}

// onNotice is every connection's notice handler.
func (u *unsyncedCommits) onNotice(pc *pgconn.PgConn, n *pgconn.Notice) {
	if n.Severity == "WARNING" && strings.Contains(n.Message, "wait for synchronous replication") {
		u.m.Store(pc, struct{}{})
	}
}

// errNotReplicated is a commit the synchronous standby did not confirm.
var errNotReplicated = &fault.Error{Kind: fault.ErrUnavailable, Code: fault.CodeDatabaseUnavailable,
	Msg: "The write committed on the primary, but its synchronous standby did not confirm it; retry the request later."}

// replicated reports, for a commit that just succeeded on pc, nil, or
// errNotReplicated if PostgreSQL warned that it cancelled the wait for
// the synchronous standby. It clears pc's mark.
func (u *unsyncedCommits) replicated(pc *pgconn.PgConn) error {
	if _, marked := u.m.LoadAndDelete(pc); marked {
		return errNotReplicated
	}
	return nil
}

// forget drops pc's mark: before a transaction starts on it (a commit
// outside withTx and sendClaimPipeline, such as a change notification's, may
// have left one) and when its connection closes.
func (u *unsyncedCommits) forget(pc *pgconn.PgConn) { u.m.Delete(pc) }

// RolledBack reports whether err, the failure of a write, proves that
// nothing of it was committed: PostgreSQL itself answered with an error
// (a read-only primary, a server shutting down, a statement refused), so
// its transaction rolled back. Any other failure of a write that reached
// the server (a connection that broke, a deadline that cut it, a commit
// whose synchronous-replication wait was cancelled) leaves the outcome
// to be learnt.
func RolledBack(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}
