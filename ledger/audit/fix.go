package audit

import (
	"context"
	"errors"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"
)

// The audit's fixes (POST /audit/fix): one transaction per finding. The
// transaction locks the finding's consumers, checks the generation the
// client saw, finds the finding again with its kind's page query (so it
// is a finding by the very rule that listed it) and applies the fix the
// finding names, or refuses and changes nothing. Only consumer kinds
// with a safe fix have one (auditKind.fix): stale_migration (confirm the
// move), empty_consumer (delete the row), expired_lease (release the
// claim), and preempted_consumer and preemptible_empty when the consumer
// holds nothing (delete the row, and the stored claim with it).

// AuditFixParams names the finding to fix as a page listed it.
type AuditFixParams struct {
	Kind         string
	ConsumerUUID string
	// ConsumerGeneration is the consumer's generation in the finding:
	// the fix is refused if the consumer changed since.
	ConsumerGeneration int64
	// Thresholds are those the finding was listed with.
	Thresholds AuditThresholds
}

// AuditFix applies the fix of one finding in one transaction and returns
// the finding as it was fixed. Refusals, nothing changed: an unknown kind
// (fault.ErrInvalid, CodeAuditUnknownKind), a report-only kind or a
// finding whose fix is report only (CodeAuditNotFixable: ErrInvalid for
// the kind, ErrConflict for the finding), a malformed uuid or negative
// threshold (ErrInvalid, CodeAuditInvalid), a consumer whose generation
// is not ConsumerGeneration (ErrConflict, CodeConcurrentUpdate), a
// finding that no longer holds (ErrConflict, CodeAuditFindingGone). It
// may run its transaction more than once (WithTx).
func (s *Auditor) AuditFix(ctx context.Context, p AuditFixParams) (AuditFinding, error) {
	k, err := auditKindNamed(p.Kind)
	if err != nil {
		return AuditFinding{}, err
	}
	if k.fix == nil {
		return AuditFinding{}, fault.Invalid(fault.CodeAuditNotFixable,
			"Findings of kind %s are reported only: the audit has no safe fix for them.", k.name)
	}
	id, ok := core.CanonicalUUID(p.ConsumerUUID)
	if !ok {
		return AuditFinding{}, fault.Invalid(fault.CodeAuditInvalid, "Malformed consumer uuid %q.", p.ConsumerUUID)
	}
	if err := p.Thresholds.check(); err != nil {
		return AuditFinding{}, err
	}
	var out AuditFinding
	err = s.core.WithTx(ctx, func(t *core.Txn) error {
		var err error
		out, err = k.fix(ctx, t, id, p)
		return err
	})
	return out, err
}

// recheckConsumer locks the consumers lock (id among them, in uuid order
// as every writer locks them), checks id's generation and finds id's
// finding of kind k again with its page query. It answers the finding
// and id's locked row.
func recheckConsumer(ctx context.Context, t *core.Txn, k auditKind, id string, p AuditFixParams, lock []string) (AuditFinding, *resources.ConsumerRow, error) {
	gone := fault.Conflict(fault.CodeAuditFindingGone,
		"Consumer %s is no longer a %s finding: it changed since it was listed. Nothing was changed.", id, k.name)
	rows, err := resources.LockConsumers(ctx, t, lock)
	if err != nil {
		return AuditFinding{}, nil, err
	}
	row := rows[id]
	if row == nil {
		return AuditFinding{}, nil, gone
	}
	if row.Generation != p.ConsumerGeneration {
		return AuditFinding{}, nil, resources.ConsumerGenerationConflict(&row.Generation, &p.ConsumerGeneration)
	}
	a := auditArgs{from: row.ID, through: row.ID, limit: 1, th: p.Thresholds}
	if err := t.QueryRow(ctx, `SELECT now()`).Scan(&a.now); err != nil {
		return AuditFinding{}, nil, err
	}
	found, err := k.page(ctx, t, a)
	if err != nil {
		return AuditFinding{}, nil, err
	}
	if len(found) == 0 {
		return AuditFinding{}, nil, gone
	}
	if f := found[0]; f.Fix.Action == AuditFixReportOnly {
		return AuditFinding{}, nil, fault.Conflict(fault.CodeAuditNotFixable, "The %s finding of consumer %s is reported only: %s",
			k.name, id, f.Fix.Detail)
	}
	return found[0], row, nil
}

// fixStaleMigration confirms the move whose source the migration
// consumer id holds: it deletes the migration consumer (its allocations
// go with it; provider generations do not change, as with DELETE
// /allocations) and the move record. It locks the migration and the
// move's instance, so neither a confirm, a revert nor a write of the
// instance runs meanwhile.
func fixStaleMigration(ctx context.Context, t *core.Txn, id string, p AuditFixParams) (AuditFinding, error) {
	lock := []string{id}
	var inst string
	err := t.QueryRow(ctx, `SELECT consumer_uuid::text FROM claim_moves WHERE migration_uuid = $1
		ORDER BY consumer_uuid LIMIT 1`, id).Scan(&inst)
	switch {
	case err == nil:
		lock = append(lock, inst)
	case !errors.Is(err, pgx.ErrNoRows):
		return AuditFinding{}, err
	}
	f, row, err := recheckConsumer(ctx, t, auditKind{name: AuditStaleMigration, page: staleMigrations}, id, p, lock)
	if err != nil {
		return AuditFinding{}, err
	}
	if f.Move == nil || f.Move.ConsumerUUID != inst {
		// The move changed between its read and the locks.
		return AuditFinding{}, fault.Conflict(fault.CodeAuditFindingGone,
			"The move of migration consumer %s changed since it was listed. Nothing was changed.", id)
	}
	if err := resources.DeleteConsumer(ctx, t, row.ID); err != nil {
		return AuditFinding{}, err
	}
	if _, err := t.Exec(ctx, `DELETE FROM claim_moves WHERE consumer_uuid = $1 AND migration_uuid = $2`, inst, id); err != nil {
		return AuditFinding{}, err
	}
	return f, nil
}

// fixEmptyConsumer deletes the consumer id, which holds nothing.
func fixEmptyConsumer(ctx context.Context, t *core.Txn, id string, p AuditFixParams) (AuditFinding, error) {
	f, row, err := recheckConsumer(ctx, t, auditKind{name: AuditEmptyConsumer, page: emptyConsumers}, id, p, []string{id})
	if err != nil {
		return AuditFinding{}, err
	}
	return f, resources.DeleteConsumer(ctx, t, row.ID)
}

// fixPreemptedConsumer deletes the consumer id, preempted and written
// again without allocations.
func fixPreemptedConsumer(ctx context.Context, t *core.Txn, id string, p AuditFixParams) (AuditFinding, error) {
	f, row, err := recheckConsumer(ctx, t, auditKind{name: AuditPreemptedConsumer, page: preemptedConsumers}, id, p, []string{id})
	if err != nil {
		return AuditFinding{}, err
	}
	return f, resources.DeleteConsumer(ctx, t, row.ID)
}

// fixPreemptibleEmpty deletes the consumer id, which holds nothing, and
// with it its stored claim (the foreign key).
func fixPreemptibleEmpty(ctx context.Context, t *core.Txn, id string, p AuditFixParams) (AuditFinding, error) {
	f, row, err := recheckConsumer(ctx, t, auditKind{name: AuditPreemptibleEmpty, page: preemptibleEmpties}, id, p, []string{id})
	if err != nil {
		return AuditFinding{}, err
	}
	return f, resources.DeleteConsumer(ctx, t, row.ID)
}

// fixExpiredLease releases the provisional claim of consumer id, whose
// lease ran out: it deletes the consumer, and with it its allocations and
// its stored claim (the foreign key), as the reaper's release does. The
// recheck under the consumer's lock keeps a renewal or a confirmation
// that came first.
func fixExpiredLease(ctx context.Context, t *core.Txn, id string, p AuditFixParams) (AuditFinding, error) {
	f, row, err := recheckConsumer(ctx, t, auditKind{name: AuditExpiredLease, page: expiredLeases}, id, p, []string{id})
	if err != nil {
		return AuditFinding{}, err
	}
	return f, resources.DeleteConsumer(ctx, t, row.ID)
}
