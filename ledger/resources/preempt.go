package resources

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
)

// Preemption (docs/preemption.md): a claim that fits nowhere may displace
// consumers whose stored claim is preemptible and of strictly lower
// priority. PreemptibleBelow lists them for the claim to choose from,
// outside any transaction; the claim's write (ClaimWrite with
// ClaimWriteParams.Preempt) re-checks, under their locks, that the ones
// it chose are still as they were read, and removes their allocations in
// the claim's transaction. A claim's priority and whether it is
// preemptible are fields of its stored request ("priority", default 0;
// "preemptible", default false): migrations/0015_preemptions.up.sql.

// Preemptible is a consumer a claim of higher priority may displace.
type Preemptible struct {
	ConsumerUUID string
	// Generation is the consumer's generation when read: the write
	// displaces it only if it is still that (nothing written since).
	Generation        int64
	Priority          int64
	ProjectID, UserID string
	// CreatedAt is when its stored claim was created.
	CreatedAt time.Time
	// Request is its stored claim's request.
	Request []byte
	// Roots are the root providers of what it holds, in uuid order.
	Roots []string
	// Allocations are what it holds, providers and classes in name order.
	Allocations []engine.Allocation
}

// priorityExpr is a stored claim's priority (cs: claim_state).
const priorityExpr = `COALESCE((cs.request->>'priority')::numeric::bigint, 0)`

// preemptibleSQL lists the preemptible consumers below priority $1, one
// row per allocation; a consumer whose claim is moving is left out (its
// move owns it until confirmed or reverted).
const preemptibleSQL = `
SELECT c.uuid::text, c.generation, ` + priorityExpr + `, p.external_id, u.external_id, cs.created_at, cs.request,
       rp.uuid::text, root.uuid::text, rc.name, a.used
FROM claim_state cs
JOIN consumers c ON c.uuid = cs.consumer_uuid
JOIN projects p ON p.id = c.project_id
JOIN users u ON u.id = c.user_id
JOIN allocations a ON a.consumer_id = c.id
JOIN resource_providers rp ON rp.id = a.resource_provider_id
JOIN resource_providers root ON root.id = rp.root_provider_id
JOIN resource_classes rc ON rc.id = a.resource_class_id
WHERE cs.request @> '{"preemptible": true}' AND cs.state <> 'moving' AND ` + priorityExpr + ` < $1
ORDER BY c.uuid, rp.uuid, rc.name`

// PreemptibleBelow lists the consumers a claim of priority may displace:
// those whose stored claim is preemptible, of priority lower than
// priority, not moving, and that hold allocations; in uuid order. It
// locks nothing: the write re-checks (ClaimWriteParams.Preempt).
func (s *Allocations) PreemptibleBelow(ctx context.Context, priority int64) ([]Preemptible, error) {
	rows, err := s.core.DB.Query(ctx, preemptibleSQL, priority)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Preemptible
	var v Preemptible
	var provider, root, class string
	var used int64
	for rows.Next() {
		if err := rows.Scan(&v.ConsumerUUID, &v.Generation, &v.Priority, &v.ProjectID, &v.UserID, &v.CreatedAt,
			&v.Request, &provider, &root, &class, &used); err != nil {
			return nil, core.DBError(err)
		}
		if n := len(out); n == 0 || out[n-1].ConsumerUUID != v.ConsumerUUID {
			out = append(out, Preemptible{ConsumerUUID: v.ConsumerUUID, Generation: v.Generation, Priority: v.Priority,
				ProjectID: v.ProjectID, UserID: v.UserID, CreatedAt: v.CreatedAt, Request: v.Request})
		}
		last := &out[len(out)-1]
		if !slices.Contains(last.Roots, root) {
			last.Roots = append(last.Roots, root)
		}
		if n := len(last.Allocations); n == 0 || last.Allocations[n-1].ProviderUUID != provider {
			last.Allocations = append(last.Allocations, engine.Allocation{ProviderUUID: provider})
		}
		a := &last.Allocations[len(last.Allocations)-1]
		a.Resources = append(a.Resources, engine.ResourceAmount{Class: class, Amount: used})
	}
	return out, core.DBError(rows.Err())
}

// Preemption is what a claim's write displaces (ClaimWriteParams.Preempt).
type Preemption struct {
	// Priority is the claim's: every victim's must be lower.
	Priority int64
	// Root is the root provider the claim lands on.
	Root string
	// Victims are the consumers displaced, as PreemptibleBelow read them.
	Victims []Preemptible
}

// preemptCheckSQL reads, under the consumers' locks, what the write
// re-checks of its victims.
const preemptCheckSQL = `
SELECT c.uuid::text, c.generation, COALESCE(cs.request @> '{"preemptible": true}', false), ` + priorityExpr + `,
       COALESCE(cs.state, '')
FROM consumers c LEFT JOIN claim_state cs ON cs.consumer_uuid = c.uuid
WHERE c.uuid = ANY($1::uuid[])`

// lockVictims prepares a claim's write of consumers that displaces pr's
// victims, in t: it takes the names' locks and then the consumers' (the
// claim's and the victims', in uuid order: ledger's doc.go), re-checks
// that every victim is still as pr read it (same generation, so the same
// allocations; still preemptible, of lower priority, not moving), and
// returns consumers with one write per victim that removes all it holds
// (and, with it, the consumer and its stored claim). A victim that
// changed is fault.ErrConflict with CodePreemptionConflict, nothing
// written.
func lockVictims(ctx context.Context, t *core.Txn, consumers []ConsumerAllocations, pr *Preemption) ([]ConsumerAllocations, error) {
	ws := make([]ConsumerAllocations, 0, len(consumers)+len(pr.Victims))
	ws = append(ws, consumers...)
	for _, v := range pr.Victims {
		ws = append(ws, ConsumerAllocations{ConsumerUUID: v.ConsumerUUID, ProjectID: v.ProjectID, UserID: v.UserID})
	}
	var projects, users, types, uuids []string
	for _, w := range ws {
		id, ok := core.CanonicalUUID(w.ConsumerUUID)
		if !ok {
			return nil, fault.Invalid("", "Malformed consumer_uuid: %s", w.ConsumerUUID)
		}
		projects, users, uuids = append(projects, orIncomplete(w.ProjectID)), append(users, orIncomplete(w.UserID)), append(uuids, id)
		if w.ConsumerType != "" {
			types = append(types, w.ConsumerType)
		}
	}
	// The names first, as prepareConsumers takes them, then the consumers.
	if _, err := externalIDs(ctx, t, "projects", projects); err != nil {
		return nil, err
	}
	if _, err := externalIDs(ctx, t, "users", users); err != nil {
		return nil, err
	}
	if _, err := consumerTypeIDs(ctx, t, types); err != nil {
		return nil, err
	}
	if _, err := LockConsumers(ctx, t, uuids); err != nil {
		return nil, err
	}
	if err := checkVictims(ctx, t, pr); err != nil {
		return nil, err
	}
	return ws, nil
}

// orIncomplete is id, or IncompleteConsumerID for none.
func orIncomplete(id string) string {
	if id == "" {
		return IncompleteConsumerID
	}
	return id
}

// checkVictims re-reads pr's victims under their locks (lockVictims).
func checkVictims(ctx context.Context, t *core.Txn, pr *Preemption) error {
	uuids := make([]string, len(pr.Victims))
	for i, v := range pr.Victims {
		uuids[i] = v.ConsumerUUID
	}
	type now struct {
		generation  int64
		preemptible bool
		priority    int64
		state       string
	}
	found := make(map[string]now, len(uuids))
	rows, err := t.Query(ctx, preemptCheckSQL, uuids)
	if err != nil {
		return err
	}
	var id string
	var n now
	if _, err := pgx.ForEachRow(rows, []any{&id, &n.generation, &n.preemptible, &n.priority, &n.state}, func() error {
		found[id] = n
		return nil
	}); err != nil {
		return err
	}
	for _, v := range pr.Victims {
		id, _ := core.CanonicalUUID(v.ConsumerUUID)
		n, ok := found[id]
		switch {
		case !ok:
			return preemptionConflict(id, "is gone")
		case n.generation != v.Generation:
			return preemptionConflict(id, "changed")
		case !n.preemptible:
			return preemptionConflict(id, "is no longer preemptible")
		case n.priority >= pr.Priority:
			return preemptionConflict(id, "no longer has a lower priority")
		case n.state == claimrecords.ClaimMoving:
			return preemptionConflict(id, "is moving")
		}
	}
	return nil
}

func preemptionConflict(consumer, what string) error {
	return fault.Conflict(fault.CodePreemptionConflict,
		"Consumer %s, chosen to be preempted, %s since it was chosen.", consumer, what)
}

// preemptionRecords are the records of pr's displacements by consumer.
func preemptionRecords(consumer string, pr *Preemption) []claimrecords.Preemption {
	out := make([]claimrecords.Preemption, len(pr.Victims))
	for i, v := range pr.Victims {
		out[i] = claimrecords.Preemption{ConsumerUUID: v.ConsumerUUID, PreemptedBy: consumer, RootUUID: pr.Root,
			Priority: v.Priority, PreemptorPriority: pr.Priority, ProjectID: v.ProjectID, UserID: v.UserID,
			Allocations: v.Allocations, Request: v.Request}
	}
	return out
}

// victimUUIDs lists pr's victims.
func (pr *Preemption) victimUUIDs() []string {
	out := make([]string, len(pr.Victims))
	for i, v := range pr.Victims {
		out[i] = v.ConsumerUUID
	}
	return out
}
