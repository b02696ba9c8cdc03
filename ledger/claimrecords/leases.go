package claimrecords

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
)

// The reads and writes of stored claims outside a claim's own transaction
// (records.go says what a stored claim is): reading one, renewing or
// confirming its lease, listing the leases that ran out for the reaper,
// and the lock that keeps the reaper to one process at a time.

const claimStateColumns = `
	cs.consumer_uuid::text, cs.op, cs.request, cs.root_uuid::text, cs.state, cs.lease_seconds,
	cs.lease_expires_at, cs.lease_expires_at <= now(), m.migration_uuid::text, cs.created_at, cs.updated_at`

const claimStateFrom = `
	FROM claim_state cs LEFT JOIN claim_moves m ON m.consumer_uuid = cs.consumer_uuid`

// scanClaimState reads one row of claimStateColumns.
func scanClaimState(row pgx.Row) (*ClaimState, error) {
	var st ClaimState
	var root, migration *string
	var lease *int32
	var expired *bool
	err := row.Scan(&st.ConsumerUUID, &st.Op, &st.Request, &root, &st.State, &lease, &st.LeaseExpiresAt, &expired,
		&migration, &st.CreatedAt, &st.UpdatedAt)
	if err != nil {
		return nil, err
	}
	if root != nil {
		st.RootUUID = *root
	}
	if lease != nil {
		st.LeaseSeconds = int64(*lease)
	}
	st.Expired = expired != nil && *expired
	if migration != nil {
		st.MigrationUUID = *migration
	}
	return &st, nil
}

// ClaimStateGet returns consumerUUID's stored claim, nil if it has none
// (no such consumer, or allocations only the Placement API wrote).
func (s *Records) ClaimStateGet(ctx context.Context, consumerUUID string) (*ClaimState, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	st, err := scanClaimState(s.core.DB.QueryRow(ctx, `SELECT`+claimStateColumns+claimStateFrom+` WHERE cs.consumer_uuid = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return st, err
}

// ClaimLeaseSet renews or ends the lease of consumerUUID's stored claim
// (PATCH /claims/{consumer_uuid}), in one transaction under the row's
// lock, and returns the claim as it is after. leaseSeconds > 0 renews the
// lease for that long from now (a provisional claim stays provisional; a
// moving one's move gets that lease); 0 confirms: a provisional claim
// becomes permanent, a moving one's move loses its lease (confirm or
// revert still end it), a permanent one stays as it is. Refusals, nothing
// changed: no stored claim (fault.ErrNotFound, CodeNoClaim); a lease
// that has run out (fault.ErrConflict, CodeLeaseExpired: the reaper is
// releasing it); a lease on a permanent claim (fault.ErrConflict,
// CodeLeaseOnPermanent). A member of a gang (gangs.go) is renewed or
// confirmed with every other member of its gang, or none is.
func (s *Records) ClaimLeaseSet(ctx context.Context, consumerUUID string, leaseSeconds int64) (*ClaimState, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return nil, noClaim(consumerUUID)
	}
	var out *ClaimState
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		// A gang's members are renewed or confirmed together (gangs.go),
		// their rows locked in uuid order.
		members, err := gangMembersTx(ctx, t, id)
		if err != nil {
			return err
		}
		for _, m := range members {
			if err := leaseSetTx(ctx, t, m, leaseSeconds); err != nil {
				return err
			}
		}
		out, err = scanClaimState(t.QueryRow(ctx, `SELECT`+claimStateColumns+claimStateFrom+` WHERE cs.consumer_uuid = $1`, id))
		return err
	})
	return out, err
}

// leaseSetTx is ClaimLeaseSet's change of consumer id's stored claim, in
// t, under the row's lock.
func leaseSetTx(ctx context.Context, t *core.Txn, id string, leaseSeconds int64) error {
	var state string
	var expired bool
	err := t.QueryRow(ctx, `
		SELECT state, COALESCE(lease_expires_at <= now(), false) FROM claim_state
		WHERE consumer_uuid = $1 FOR UPDATE`, id).Scan(&state, &expired)
	if errors.Is(err, pgx.ErrNoRows) {
		return noClaim(id)
	}
	if err != nil {
		return err
	}
	switch {
	case expired && state == ClaimMoving:
		return fault.Conflict(fault.CodeLeaseExpired, "The lease of consumer %s's move has run out; the move is being reverted.", id)
	case expired:
		return fault.Conflict(fault.CodeLeaseExpired, "The lease of consumer %s has run out; its allocations are being released.", id)
	case state == ClaimPermanent && leaseSeconds > 0:
		return leaseOnPermanent(id)
	}
	if leaseSeconds > 0 {
		_, err = t.Exec(ctx, `
			UPDATE claim_state SET op = 'renew', lease_seconds = $2::int,
			       lease_expires_at = now() + $2::int * interval '1 second', updated_at = now()
			WHERE consumer_uuid = $1`, id, leaseSeconds)
	} else if state != ClaimPermanent {
		_, err = t.Exec(ctx, `
			UPDATE claim_state SET op = 'confirm', state = CASE WHEN state = 'moving' THEN 'moving' ELSE 'permanent' END,
			       lease_seconds = NULL, lease_expires_at = NULL, updated_at = now()
			WHERE consumer_uuid = $1`, id)
	}
	return err
}

// noClaim is the refusal of a consumer without a stored claim.
func noClaim(consumer string) error {
	return &fault.Error{Kind: fault.ErrNotFound, Code: fault.CodeNoClaim, Msg: "No claim for consumer '" + consumer +
		"': no claim placed it (or its allocations were written through the Placement API)."}
}

// ClaimLeasesExpired lists up to limit stored claims whose lease has run
// out, the longest expired first. It locks nothing: each is released or
// reverted by a ClaimWrite of its own, whose IfLeaseExpired re-checks
// the lease under the row's lock.
func (s *Records) ClaimLeasesExpired(ctx context.Context, limit int) ([]*ClaimState, error) {
	rows, err := s.core.DB.Query(ctx, `SELECT`+claimStateColumns+claimStateFrom+`
		WHERE cs.lease_expires_at <= now() ORDER BY cs.lease_expires_at LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*ClaimState
	for rows.Next() {
		st, err := scanClaimState(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// AdvisoryLock names a PostgreSQL advisory lock that Exclusive takes.
type AdvisoryLock int64

// LockClaimLeases is the lock of the claim lease reaper: one berthd at a
// time releases expired leases.
const LockClaimLeases AdvisoryLock = 0x62657274686c6561 // "berthlea"

// Exclusive runs fn while this process holds lock, a session-level
// advisory lock on a connection of its own, and reports whether it ran:
// when another session holds the lock, fn does not run and ran is false.
// The lock goes when fn returns, or when the connection does (a berthd
// killed while it holds the lock holds it no longer once PostgreSQL sees
// the connection close). So fn runs in at most one process at a time for
// as long as its connection lives; what fn writes must stay safe if that
// connection is cut while it runs, and the lease reaper's writes re-check
// under row locks (resources.ClaimWriteParams.IfLeaseExpired).
func (s *Records) Exclusive(ctx context.Context, lock AdvisoryLock, fn func(ctx context.Context) error) (ran bool, err error) {
	conn, err := s.core.Pool.Acquire(ctx)
	if err != nil {
		return false, core.DBError(err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(lock)).Scan(&got); err != nil {
		return false, core.DBError(err)
	}
	if !got {
		return false, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, int64(lock)); err != nil {
			// Not unlocked: close the connection rather than hand the
			// lock back to the pool with it.
			_ = conn.Conn().Close(uctx)
		}
	}()
	return true, fn(ctx)
}
