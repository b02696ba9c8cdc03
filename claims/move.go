package claims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// holding is what a consumer holds now.
type holding struct {
	consumer *resources.Consumer
	allocs   []engine.Allocation
	// roots are the roots of the trees it holds on, sharing providers
	// left out (a new tree may need the same pool).
	roots []string
}

// hold reads what consumerUUID holds. A consumer without allocations is
// ErrNotFound. Its roots are left empty; withRoots fills them.
func (c *Claimer) hold(ctx context.Context, consumerUUID string) (*holding, error) {
	cur, err := c.store.Allocations.AllocationsByConsumer(ctx, consumerUUID)
	if err != nil {
		return nil, err
	}
	if cur.Consumer == nil || len(cur.Allocations) == 0 {
		return nil, &fault.Error{Kind: fault.ErrNotFound, Msg: fmt.Sprintf("No allocations for consumer '%s'", consumerUUID)}
	}
	return &holding{consumer: cur.Consumer, allocs: byProvider(cur.Allocations)}, nil
}

// withRoots is hold with the roots filled: one or two provider reads per
// provider held, so only Reschedule and Move pay for them.
func (c *Claimer) withRoots(ctx context.Context, consumerUUID string) (*holding, error) {
	h, err := c.hold(ctx, consumerUUID)
	if err != nil {
		return nil, err
	}
	for _, pr := range h.allocs {
		sharing, err := c.store.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{UUID: pr.ProviderUUID,
			Group: engine.RequestGroup{RequiredTraits: [][]string{{sharesViaAggregate}}}})
		if err != nil {
			return nil, err
		}
		if len(sharing) > 0 {
			continue
		}
		prov, err := c.store.Providers.ProviderGet(ctx, pr.ProviderUUID)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(h.roots, prov.RootUUID) {
			h.roots = append(h.roots, prov.RootUUID)
		}
	}
	return h, nil
}

// byProvider groups allocations ordered by provider into one
// ProviderResources per provider.
func byProvider(allocs []resources.AllocationRecord) []engine.Allocation {
	out := []engine.Allocation{}
	for _, a := range allocs {
		if n := len(out); n == 0 || out[n-1].ProviderUUID != a.ProviderUUID {
			out = append(out, engine.Allocation{ProviderUUID: a.ProviderUUID})
		}
		last := &out[len(out)-1]
		last.Resources = append(last.Resources, engine.ResourceAmount{Class: a.ResourceClass, Amount: a.Used})
	}
	return out
}

// adopt fills p's defaults from what the consumer holds: its generation,
// owner and type, and, when p asks for no resources, the same amounts
// in one unnumbered group.
func (h *holding) adopt(p *Params) {
	p.held = h.allocs
	if p.ConsumerGeneration == nil {
		gen := h.consumer.Generation
		p.ConsumerGeneration = &gen
	}
	if p.ProjectID == "" {
		p.ProjectID = h.consumer.ProjectID
	}
	if p.UserID == "" {
		p.UserID = h.consumer.UserID
	}
	if p.ConsumerType == "" && h.consumer.Type != resources.UnknownConsumerType {
		p.ConsumerType = h.consumer.Type
	}
	if len(p.Candidates.Groups) == 0 {
		g := engine.RequestGroup{}
		for _, pr := range h.allocs {
			for _, r := range pr.Resources {
				i := slices.IndexFunc(g.Resources, func(ra engine.ResourceAmount) bool { return ra.Class == r.Class })
				if i < 0 {
					g.Resources = append(g.Resources, engine.ResourceAmount{Class: r.Class, Amount: r.Amount})
				} else {
					g.Resources[i].Amount += r.Amount
				}
			}
		}
		p.Candidates.Groups = []engine.RequestGroup{g}
		p.Candidates.NestedAware = true
	}
}

// reschedule claims again for a consumer that failed to start on
// failedProvider (a root uuid or name; empty means the root it holds on
// now): it remembers the failure, then, in one transaction, replaces the
// consumer's allocations with the best candidate that is on none of the
// providers it ever failed on. A reschedule that places nothing leaves
// the consumer where it was (the failure stays remembered). p's empty
// fields default to the consumer's (see adopt); its reason is
// reschedule. A consumer without allocations is ErrNotFound.
func (c *Claimer) reschedule(ctx context.Context, p Params, failedProvider string) (*Result, error) {
	h, err := c.withRoots(ctx, p.ConsumerUUID)
	if err != nil {
		return nil, err
	}
	failed := ""
	if failedProvider != "" {
		snap, err := c.store.Snapshots.Snapshot(ctx, nil, nil)
		if err != nil {
			return nil, err
		}
		prov, err := resolve(snap, failedProvider, "failed_provider")
		if err != nil {
			return nil, err
		}
		failed = prov.RootUUID
	} else if len(h.roots) > 0 {
		failed = h.roots[0]
	}
	h.adopt(&p)
	p.Reason = ReasonReschedule
	p.op, p.leaseMode = OpReschedule, claimrecords.LeaseKeep
	if p.LeaseSeconds != nil {
		p.leaseMode = claimrecords.LeaseSet
	}
	if failed != "" && !p.DryRun {
		if err := c.store.Claims.ClaimFailureAdd(ctx, p.ConsumerUUID, failed); err != nil {
			return nil, err
		}
	}
	if failed != "" && p.DryRun {
		p.Exclude = append(slices.Clone(p.Exclude), failed)
	}
	return c.claim(ctx, p)
}

// move is a migration claim, as Nova does it: in one transaction the
// migration consumer migrationUUID (new, of type MIGRATION, owned like
// the instance) takes over the instance's current allocations on the
// source, and the instance gets the best destination that is not one of
// its current roots. The move is remembered for Confirm and Revert.
// Nothing changes if no destination fits. reason is relocation,
// rebalance or evacuation (an evacuation does not look at the source's state: the
// source is simply excluded).
func (c *Claimer) move(ctx context.Context, p Params, migrationUUID string) (*Result, error) {
	if p.Reason == "" {
		p.Reason = ReasonRelocation
	}
	if p.Reason != ReasonRelocation && p.Reason != ReasonEvacuation && p.Reason != ReasonRebalance {
		return nil, invalid("Invalid reason %q for a move: want relocation, rebalance or evacuation", p.Reason)
	}
	h, err := c.withRoots(ctx, p.ConsumerUUID)
	if err != nil {
		return nil, err
	}
	mig, ok := uuid.Canonical(migrationUUID)
	if !ok || mig == canonicalOr(p.ConsumerUUID) {
		return nil, invalid("Invalid migration_uuid %q: want a uuid other than the consumer's", migrationUUID)
	}
	h.adopt(&p)
	p.op, p.leaseMode = OpMove, claimrecords.LeaseMove
	p.Exclude = append(slices.Clone(p.Exclude), h.roots...)
	p.with = []resources.ConsumerAllocations{{
		ConsumerUUID:    mig,
		ProjectID:       p.ProjectID,
		UserID:          p.UserID,
		ConsumerType:    resources.MigrationConsumerType,
		CheckGeneration: true, // must be new
		Allocations:     h.allocs,
	}}
	src := ""
	if len(h.roots) > 0 {
		src = h.roots[0]
	}
	p.move = &claimrecords.MoveRecord{ConsumerUUID: p.ConsumerUUID, MigrationUUID: mig, Reason: p.Reason, SourceRoot: src}
	return c.claim(ctx, p)
}

// Holding is a consumer and what it holds after Confirm or Revert.
type Holding struct {
	ConsumerUUID       string
	ConsumerGeneration int64
	Allocations        []engine.Allocation
}

// moveOf finds the migration consumer of consumerUUID's move (the one
// given, or the one remembered) and reads what it holds.
func (c *Claimer) moveOf(ctx context.Context, consumerUUID, migrationUUID string) (*holding, error) {
	mig := ""
	if migrationUUID != "" {
		var ok bool
		if mig, ok = uuid.Canonical(migrationUUID); !ok {
			return nil, invalid("Invalid migration_uuid %q", migrationUUID)
		}
	} else {
		m, err := c.store.Claims.ClaimMoveGet(ctx, consumerUUID)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, &fault.Error{Kind: fault.ErrNotFound,
				Msg: fmt.Sprintf("No move in progress for consumer '%s'; give its migration_uuid.", consumerUUID)}
		}
		mig = m.MigrationUUID
	}
	return c.hold(ctx, mig)
}

// Confirm ends a move by dropping the migration consumer's (source)
// allocations, in one transaction with forgetting the move. The instance
// keeps its destination. A migration consumer that holds nothing is
// ErrNotFound.
func (c *Claimer) Confirm(ctx context.Context, consumerUUID, migrationUUID string) (*Holding, error) {
	m, err := c.moveOf(ctx, consumerUUID, migrationUUID)
	if errors.Is(err, fault.ErrNotFound) {
		return c.moveEnded(ctx, consumerUUID, migrationUUID, moveConfirmed, err)
	}
	if err != nil {
		return nil, err
	}
	mig := m.consumer.UUID
	gen := m.consumer.Generation
	if err := c.store.Allocations.ClaimWrite(ctx, resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{{ConsumerUUID: mig, ProjectID: m.consumer.ProjectID,
			UserID: m.consumer.UserID, CheckGeneration: true, Generation: &gen}},
		ForgetMove: consumerUUID,
		MoveEnd:    claimrecords.MoveConfirmed,
		Request:    moveEndRecord(consumerUUID, moveConfirmed, mig),
	}); err != nil {
		return nil, err
	}
	return c.holdingOf(ctx, consumerUUID)
}

// holdingOf reads what consumerUUID holds now, as Confirm answers it.
func (c *Claimer) holdingOf(ctx context.Context, consumerUUID string) (*Holding, error) {
	cur, err := c.store.Allocations.AllocationsByConsumer(ctx, consumerUUID)
	if err != nil {
		return nil, err
	}
	out := &Holding{ConsumerUUID: canonicalOr(consumerUUID), Allocations: byProvider(cur.Allocations)}
	if cur.Consumer != nil {
		out.ConsumerGeneration = cur.Consumer.Generation
	}
	return out, nil
}

// How a move ended, as recorded for retries (OpMoveEnd).
const (
	moveConfirmed = "confirm"
	moveReverted  = "revert"
)

// moveEndRecord is what a confirm or revert records, in its own
// transaction, so that its retry is answered as done (moveEnded).
func moveEndRecord(consumerUUID, action, migrationUUID string) *claimrecords.ClaimRequest {
	raw, err := json.Marshal(map[string]string{"action": action, "migration_uuid": canonicalOr(migrationUUID)})
	if err != nil {
		return nil
	}
	return &claimrecords.ClaimRequest{ConsumerUUID: canonicalOr(consumerUUID), Op: OpMoveEnd, Fingerprint: fingerprint(OpMoveEnd, raw),
		Request: raw, Result: []byte("{}")}
}

// moveEnded answers a confirm or revert that found no move in progress
// (notFound): if the consumer's last move ended the same way (and with
// the migration given, if one is), it is the retry of a request whose
// answer was lost, answered with what the consumer holds now; if it
// ended the other way, a conflict; otherwise notFound stands. The record
// is read with confirmation, as every replayed answer is.
func (c *Claimer) moveEnded(ctx context.Context, consumerUUID, migrationUUID, action string, notFound error) (*Holding, error) {
	rec, err := c.store.Claims.ClaimRequestConfirmed(ctx, consumerUUID, OpMoveEnd)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, notFound
	}
	var ended struct {
		Action        string `json:"action"`
		MigrationUUID string `json:"migration_uuid"`
	}
	if json.Unmarshal(rec.Request, &ended) != nil {
		return nil, notFound
	}
	if migrationUUID != "" && canonicalOr(migrationUUID) != ended.MigrationUUID {
		return nil, notFound
	}
	if ended.Action != action {
		return nil, &fault.Error{Kind: fault.ErrConflict, Code: fault.CodeMoveEnded, Msg: fmt.Sprintf(
			"The move of consumer '%s' (migration '%s') was already %sed; it cannot be %sed.",
			canonicalOr(consumerUUID), ended.MigrationUUID, ended.Action, action)}
	}
	return c.holdingOf(ctx, consumerUUID)
}

// Revert ends a move by giving the source back: in one transaction the
// instance's (destination) allocations are replaced by the migration
// consumer's, the migration consumer is emptied (and so deleted), and
// the move is forgotten; the stored claim is as it was before the move.
// Both consumers' generations are checked, so a concurrent change makes
// it a placement.concurrent_update conflict. A revert that gives the
// instance more than it holds (of a resize down) is checked against its
// project's limits.
func (c *Claimer) Revert(ctx context.Context, consumerUUID, migrationUUID string) (*Holding, error) {
	m, err := c.moveOf(ctx, consumerUUID, migrationUUID)
	if errors.Is(err, fault.ErrNotFound) {
		return c.moveEnded(ctx, consumerUUID, migrationUUID, moveReverted, err)
	}
	if err != nil {
		return nil, err
	}
	return c.revert(ctx, consumerUUID, m, false)
}

// revert writes the revert of consumerUUID's move, whose migration
// consumer holds m; ifExpired makes it the lease reaper's, written only
// if the move's lease has run out (resources.ClaimWriteParams.IfLeaseExpired).
func (c *Claimer) revert(ctx context.Context, consumerUUID string, m *holding, ifExpired bool) (*Holding, error) {
	mig := m.consumer.UUID
	inst, err := c.store.Allocations.AllocationsByConsumer(ctx, consumerUUID)
	if err != nil {
		return nil, err
	}
	w := resources.ConsumerAllocations{ConsumerUUID: consumerUUID, ProjectID: m.consumer.ProjectID,
		UserID: m.consumer.UserID, CheckGeneration: true, Allocations: m.allocs}
	gen := int64(1)
	if inst.Consumer != nil {
		g := inst.Consumer.Generation
		w.Generation, gen = &g, g+1
		w.ProjectID, w.UserID = inst.Consumer.ProjectID, inst.Consumer.UserID
		if inst.Consumer.Type != resources.UnknownConsumerType {
			w.ConsumerType = inst.Consumer.Type
		}
	}
	mgen := m.consumer.Generation
	cw := resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{w, {ConsumerUUID: mig, ProjectID: m.consumer.ProjectID,
			UserID: m.consumer.UserID, CheckGeneration: true, Generation: &mgen}},
		ForgetMove: consumerUUID,
		MoveEnd:    claimrecords.MoveReverted,
		Request:    moveEndRecord(consumerUUID, moveReverted, mig),
	}
	if ifExpired {
		// The lease reaper's revert undoes a move its client abandoned:
		// not checked against limits, so that it cannot be refused for
		// good (the instance gets back what it held before the move).
		cw.IfLeaseExpired = consumerUUID
	} else {
		// The instance gets its source back: checked against its
		// project's limits, as Nova checks a revert of a resize down.
		if cw.Quota, err = c.quotaOf(ctx, w.ProjectID); err != nil {
			return nil, err
		}
	}
	if err := c.store.Allocations.ClaimWrite(ctx, cw); err != nil {
		return nil, err
	}
	return &Holding{ConsumerUUID: canonicalOr(consumerUUID), ConsumerGeneration: gen, Allocations: m.allocs}, nil
}

// canonicalOr is s in uuid.Canonical's form, or s if it is no uuid. A
// uuid already so written (as clients mostly send them) is s itself
// (uuid.Canonical returns it as it is).
func canonicalOr(s string) string {
	if c, ok := uuid.Canonical(s); ok {
		return c
	}
	return s
}
