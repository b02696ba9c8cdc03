package resources

import (
	"context"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/quotas"
)

// A gang's write: every member's allocations, stored claims and gang
// record in one transaction, on the general path of AllocationsReplace
// (allocation.go), which locks the members' consumer rows in uuid order,
// then the providers' rows in id order, re-checks each provider's
// capacity under its lock, then locks and checks the project's usage
// counters (ledger's doc.go: the lock order). So the gang is written
// whole or not at all, and a refusal (capacity gone: fault.ErrConflict;
// a provider gone: fault.ErrUnknownProvider; over the project's limits:
// fault.ErrForbidden with CodeOverQuota) writes nothing.

// GangWriteParams is one gang's write.
type GangWriteParams struct {
	// ID is the gang's id (a uuid), Domain the aggregate it is placed in
	// ("" for none).
	ID     string
	Domain string
	// Members are the members' allocations, each a new consumer
	// (CheckGeneration with a nil Generation) or, for an existing one,
	// at its generation.
	Members []ConsumerAllocations
	// States, when not nil, are the members' stored claims, one per
	// member (claimrecords.WriteState).
	States []*claimrecords.ClaimStateWrite
	// Quota, when not nil, are the limits the whole gang is checked
	// against at once (quota_check.go).
	Quota *quotas.Quota
	// Requests, when not nil, are what the gang's retries are answered
	// from (claimrecords.WriteRequest), written with the allocations so
	// that they exist exactly when the gang was written; nil entries are
	// skipped.
	Requests []*claimrecords.ClaimRequest
}

// GangWrite writes p in one transaction (see the top of this file). Like
// every transaction of the ledger, it may run more than once on a
// serialization failure.
func (s *Allocations) GangWrite(ctx context.Context, p GangWriteParams) error {
	if len(p.Members) == 0 || (p.States != nil && len(p.States) != len(p.Members)) {
		return fault.Invalid("", "A gang's write needs its members, and a stored claim for each or none.")
	}
	uuids := consumerUUIDs(p.Members)
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		if err := s.replaceAllocationsGeneral(ctx, t, p.Members, p.Quota); err != nil {
			return err
		}
		for i, w := range p.States {
			m := &p.Members[i]
			if err := claimrecords.WriteState(ctx, t, m.ConsumerUUID, m.Generation != nil, w); err != nil {
				return err
			}
		}
		for _, r := range p.Requests {
			if err := claimrecords.WriteRequest(ctx, t, r); err != nil {
				return err
			}
		}
		return claimrecords.WriteGang(ctx, t, p.ID, p.Domain, uuids)
	})
}

// GangRelease is the lease reaper's release of a gang whose leases ran
// out: members are the members still present, each at the generation the
// reaper read, with no allocations. In one transaction it locks their
// consumer rows (uuid order), checks under those locks that every
// member's lease has run out (claimrecords.CheckLeaseExpired; otherwise
// fault.ErrConflict with CodeLeaseNotExpired, nothing written) and
// releases them all.
func (s *Allocations) GangRelease(ctx context.Context, members []ConsumerAllocations) error {
	if len(members) == 0 {
		return nil
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		if err := lockLeaseExpired(ctx, t, members[0].ConsumerUUID, members); err != nil {
			return err
		}
		for _, m := range members[1:] {
			if err := claimrecords.CheckLeaseExpired(ctx, t, m.ConsumerUUID); err != nil {
				return err
			}
		}
		return s.replaceAllocationsGeneral(ctx, t, members, nil)
	})
}
