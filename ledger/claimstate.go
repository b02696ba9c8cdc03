package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file holds what the claims package remembers between calls
// (migrations/0003_claims.up.sql): the providers each consumer failed on,
// so a reschedule avoids all of them, and the move in progress per
// consumer, so confirm and revert can find the migration consumer. Both
// are keyed by uuid and outlive the consumer row.

// ClaimWriteParams is one claim transaction: allocation writes as for
// AllocationsReplace, plus the claims bookkeeping that must commit or
// roll back with them.
type ClaimWriteParams struct {
	Consumers []ConsumerAllocations
	// Move, when not nil, records a move in progress for its consumer,
	// replacing any earlier record.
	Move *MoveRecord
	// ForgetMove, when not empty, drops the move record of that consumer.
	ForgetMove string
	// Request, when not nil, is recorded for retries (idempotency.go).
	Request *ClaimRequest
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

// ClaimWrite runs p in one transaction: the allocation writes, checked
// and rejected exactly as by AllocationsReplace (and, without move
// bookkeeping, by AllocationsReplace itself, fast path included), then
// the move record changes. Either all of it commits or nothing does.
// Like every transaction of the Store, it may run more than once on a
// serialization failure.
func (s *Store) ClaimWrite(ctx context.Context, p ClaimWriteParams) error {
	if p.Move == nil && p.ForgetMove == "" {
		// Allocations alone: AllocationsReplace, with its fast path for a
		// new consumer.
		return s.allocationsReplace(ctx, p.Consumers, p.Request)
	}
	return s.withTx(ctx, func(t *txn) error {
		if len(p.Consumers) > 0 {
			if err := s.replaceAllocationsGeneral(ctx, t, p.Consumers); err != nil {
				return err
			}
		}
		if p.ForgetMove != "" {
			if id, ok := canonicalUUID(p.ForgetMove); ok {
				if _, err := t.Exec(ctx, `DELETE FROM claim_moves WHERE consumer_uuid = $1`, id); err != nil {
					return err
				}
			}
		}
		if m := p.Move; m != nil {
			c, ok1 := canonicalUUID(m.ConsumerUUID)
			mig, ok2 := canonicalUUID(m.MigrationUUID)
			if !ok1 || !ok2 {
				return invalid("", "Malformed consumer or migration uuid: %s, %s", m.ConsumerUUID, m.MigrationUUID)
			}
			var src *string
			if r, ok := canonicalUUID(m.SourceRoot); ok {
				src = &r
			}
			if _, err := t.Exec(ctx, `
				INSERT INTO claim_moves (consumer_uuid, migration_uuid, reason, source_root)
				VALUES ($1, $2, $3, $4)
				ON CONFLICT (consumer_uuid) DO UPDATE
				SET migration_uuid = EXCLUDED.migration_uuid, reason = EXCLUDED.reason,
				    source_root = EXCLUDED.source_root, created_at = now()`,
				c, mig, m.Reason, src); err != nil {
				return err
			}
		}
		return writeClaimRequest(ctx, t, p.Request)
	})
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
