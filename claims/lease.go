package claims

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// Stored claims and their leases.
//
// Every claim, reschedule and move stores, in its own transaction, the
// claim it made (claimrecords.ClaimState, table claim_state): its request, the
// root it landed on and its lease. A claim with a lease is provisional:
// it counts against capacity like any allocation, and when the lease
// runs out its allocations are released (a moving claim's move is
// reverted) unless it was confirmed first: by Lease (PATCH
// /claims/{consumer_uuid} with "lease_seconds": null), or by any
// Placement-API write of the consumer's allocations (a compute agent's
// PUT /allocations), which the ledger settles in that write's
// transaction.
//
// The reaper (ReapLeases, run every --claim-lease-interval by
// RunLeaseReaper) releases what ran out: in one berthd at a time (a
// PostgreSQL advisory lock, held on a connection of its own for the
// pass: claimrecords.Records.Exclusive), each claim in one transaction of its own
// that re-checks, under the consumer's and the claim's row locks, that
// the lease has indeed run out and that the consumer's generation is
// still the one read (resources.ClaimWriteParams.IfLeaseExpired). So a claim
// confirmed, renewed or rewritten while the reaper looked at it is left
// alone, and a reaper killed half way (kill -9) leaves every claim either
// released or as it was; the next pass, in whichever berthd takes the
// lock, carries on. Everything is in PostgreSQL: nothing is lost across
// restarts. Each release is logged (one line naming the consumer),
// counted (berth_claim_leases_expired_total, by action) and traced
// (claims.leases.reap, claims.lease.expire).

// reapBatch bounds how many expired leases one read of a pass lists.
const reapBatch = 100

// Lease actions, as logged and counted.
const (
	leaseReleased = instrument.LeaseReleased
	leaseReverted = instrument.LeaseReverted
)

// checkLease refuses a lease outside 1 second to Config.LeaseMax (nil:
// no lease, nothing to check).
func (c *Claimer) checkLease(seconds *int64) error {
	if seconds == nil {
		return nil
	}
	max := int64(c.cfg.LeaseMax / time.Second)
	if *seconds < 1 || *seconds > max {
		return fault.Invalid(fault.CodeInvalidLease,
			"Invalid lease_seconds %d: want an integer from 1 to %d (the configured maximum, --claim-lease-max).", *seconds, max)
	}
	return nil
}

// Stored is a consumer's stored claim and what it holds now, and, for a
// member of a gang, its gang (nil otherwise); or, for a consumer a claim
// displaced and that no claim placed again, Claim nil and Preempted the
// record of its displacement (preempt.go).
type Stored struct {
	Claim *claimrecords.ClaimState
	Holding
	Gang      *claimrecords.GangRecord
	Preempted *claimrecords.Preemption
}

// Stored returns consumerUUID's stored claim (GET /claims/{consumer_uuid})
// and what the consumer holds now; a consumer a claim preempted, and
// that none placed since, has its displacement's record instead. A
// consumer that no claim placed (none,
// or one whose allocations were written through the Placement API) is
// fault.ErrNotFound with CodeNoClaim.
//
// The stored claim, the allocations and the gang are three reads: the
// stored claim is read again after the others, and the answer is given
// only if it is the same row, unchanged (a delete or a preemption that
// came between would have deleted it; a write of the claim, changed it),
// else all is read again, up to storedReads times; the last read is
// answered as it is.
func (c *Claimer) Stored(ctx context.Context, consumerUUID string) (*Stored, error) {
	for attempt := 1; ; attempt++ {
		st, err := c.store.Claims.ClaimStateGet(ctx, consumerUUID)
		if err != nil {
			return nil, err
		}
		if st == nil {
			if pr, err := preemptedStored(ctx, c.store.Claims, consumerUUID); pr != nil || err != nil {
				return pr, err
			}
			return nil, &fault.Error{Kind: fault.ErrNotFound, Code: fault.CodeNoClaim, Msg: fmt.Sprintf(
				"No claim for consumer '%s': no claim placed it (or its allocations were written through the Placement API).",
				consumerUUID)}
		}
		out, err := c.storedWith(ctx, st)
		if err != nil || attempt == storedReads {
			return out, err
		}
		again, err := c.store.Claims.ClaimStateGet(ctx, consumerUUID)
		if err != nil {
			return nil, err
		}
		if again != nil && again.CreatedAt.Equal(st.CreatedAt) && again.UpdatedAt.Equal(st.UpdatedAt) {
			return out, nil
		}
	}
}

// storedReads bounds Stored's reads of a claim that changes under it.
const storedReads = 5

// storedWith is st with what its consumer holds now.
func (c *Claimer) storedWith(ctx context.Context, st *claimrecords.ClaimState) (*Stored, error) {
	h, err := c.holdingOf(ctx, st.ConsumerUUID)
	if err != nil {
		return nil, err
	}
	g, err := c.store.Claims.GangOf(ctx, st.ConsumerUUID)
	if err != nil {
		return nil, err
	}
	return &Stored{Claim: st, Holding: *h, Gang: g}, nil
}

// Lease renews consumerUUID's lease for seconds from now, or with nil
// confirms the claim (PATCH /claims/{consumer_uuid}); see
// claimrecords.Records.ClaimLeaseSet for what each does to each state and for
// the refusals. A lease outside 1 s to Config.LeaseMax is
// fault.ErrInvalid (CodeInvalidLease). Nothing changes on a refusal.
func (c *Claimer) Lease(ctx context.Context, consumerUUID string, seconds *int64) (*Stored, error) {
	if err := c.checkLease(seconds); err != nil {
		return nil, err
	}
	var n int64
	if seconds != nil {
		n = *seconds
	}
	st, err := c.store.Claims.ClaimLeaseSet(ctx, consumerUUID, n)
	if err != nil {
		return nil, err
	}
	return c.storedWith(ctx, st)
}

// RunLeaseReaper runs ReapLeases every interval until ctx ends. A pass
// that fails is logged and tried again at the next interval; one that
// ends without error (having reaped, or found another berthd reaping) is
// the time of LeaseReaperPassed, so a reaper stuck in a pass or failing
// every pass shows as a time that stops moving.
func (c *Claimer) RunLeaseReaper(ctx context.Context, interval time.Duration) {
	for {
		if _, err := c.ReapLeases(ctx); err != nil && ctx.Err() == nil {
			c.log.WarnContext(ctx, "claims: lease reaper pass failed", "error", err)
		} else if err == nil {
			c.reaped.Store(time.Now().UnixNano())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// LeaseReaperPassed is when RunLeaseReaper's last pass ended without
// error here; zero before the first.
func (c *Claimer) LeaseReaperPassed() time.Time {
	if n := c.reaped.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// ReapLeases is one pass of the lease reaper: unless another process is
// reaping (then it returns at once), it releases every provisional claim
// whose lease has run out and reverts every move whose lease has, each in
// a transaction of its own, and returns how many it released or
// reverted. A claim that changed meanwhile is left alone (see the top of
// this file); so is one whose release fails, until the next pass.
func (c *Claimer) ReapLeases(ctx context.Context) (int, error) {
	done := 0
	_, err := c.store.Claims.Exclusive(ctx, claimrecords.LockClaimLeases, func(ctx context.Context) error {
		var tr *reapTrace
		defer func() { tr.end(done) }()
		for {
			expired, err := c.store.Claims.ClaimLeasesExpired(ctx, reapBatch)
			if err != nil || len(expired) == 0 {
				return err
			}
			if tr == nil {
				ctx, tr = startReap(ctx)
			}
			n := 0
			for _, st := range expired {
				ok, err := c.expire(ctx, st)
				if err != nil {
					c.log.WarnContext(ctx, "claims: releasing an expired lease failed; next pass retries",
						"consumer", st.ConsumerUUID, "state", st.State, "error", err)
					continue
				}
				if ok {
					n++
				}
			}
			done += n
			if n == 0 || len(expired) < reapBatch {
				// Nothing more, or nothing that this pass can release.
				return nil
			}
		}
	})
	return done, err
}

// expire releases st's allocations (a provisional claim) or reverts its
// move (a moving one), and reports whether it did; false, nil when the
// claim changed meanwhile and stays.
func (c *Claimer) expire(ctx context.Context, st *claimrecords.ClaimState) (bool, error) {
	start := time.Now()
	action, err := c.expireClaim(ctx, st)
	if errors.Is(err, errLeaseStays) {
		c.log.DebugContext(ctx, "claims: an expired lease changed meanwhile; left alone", "consumer", st.ConsumerUUID)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	leaseExpired(ctx, start, st.ConsumerUUID, action)
	return true, nil
}

// errLeaseStays: the claim was confirmed, renewed or rewritten after the
// reaper listed it.
var errLeaseStays = errors.New("claims: lease no longer expired")

// expireClaim does expire's write and logs it; it returns the action.
func (c *Claimer) expireClaim(ctx context.Context, st *claimrecords.ClaimState) (string, error) {
	h, err := c.hold(ctx, st.ConsumerUUID)
	if errors.Is(err, fault.ErrNotFound) {
		return "", errLeaseStays // gone already, and its stored claim with it
	}
	if err != nil {
		return "", err
	}
	if st.State == claimrecords.ClaimMoving {
		return c.expireMove(ctx, st)
	}
	gang, err := c.store.Claims.GangOf(ctx, st.ConsumerUUID)
	if err != nil {
		return "", err
	}
	if gang != nil && len(gang.Members) > 1 {
		return NewGangs(c).expire(ctx, st, gang) // the gang's members together
	}
	gen := h.consumer.Generation
	err = c.store.Allocations.ClaimWrite(ctx, resources.ClaimWriteParams{IfLeaseExpired: st.ConsumerUUID,
		Consumers: []resources.ConsumerAllocations{{ConsumerUUID: st.ConsumerUUID, ProjectID: h.consumer.ProjectID,
			UserID: h.consumer.UserID, CheckGeneration: true, Generation: &gen}}})
	if err := leaseStays(err); err != nil {
		return "", err
	}
	c.log.InfoContext(ctx, "claims: lease expired; allocations released", "consumer", st.ConsumerUUID,
		"lease_expires_at", expiry(st), "root", st.RootUUID, "allocations", allocationsLine(h.allocs))
	return leaseReleased, nil
}

// expireMove reverts st's move, whose lease ran out: the source back to
// the instance. A move whose migration consumer holds nothing any more
// cannot be reverted; it is ended as confirmed (the instance keeps its
// destination), with a warning.
func (c *Claimer) expireMove(ctx context.Context, st *claimrecords.ClaimState) (string, error) {
	m, err := c.moveOf(ctx, st.ConsumerUUID, "")
	if errors.Is(err, fault.ErrNotFound) {
		err = c.store.Allocations.ClaimWrite(ctx, resources.ClaimWriteParams{IfLeaseExpired: st.ConsumerUUID,
			ForgetMove: st.ConsumerUUID, MoveEnd: claimrecords.MoveConfirmed})
		if err := leaseStays(err); err != nil {
			return "", err
		}
		c.log.WarnContext(ctx, "claims: lease of a move expired, but its source allocations are gone; move ended as confirmed",
			"consumer", st.ConsumerUUID, "migration", st.MigrationUUID)
		return leaseReverted, nil
	}
	if err != nil {
		return "", err
	}
	if _, err := c.revert(ctx, st.ConsumerUUID, m, true); leaseStays(err) != nil {
		return "", leaseStays(err)
	}
	c.log.InfoContext(ctx, "claims: lease of a move expired; move reverted", "consumer", st.ConsumerUUID,
		"migration", m.consumer.UUID, "lease_expires_at", expiry(st), "allocations", allocationsLine(m.allocs))
	return leaseReverted, nil
}

// leaseStays maps the refusals of a reaper's write that mean "the claim
// changed meanwhile" (its lease was renewed or confirmed, or its
// consumer written) to errLeaseStays.
func leaseStays(err error) error {
	if fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseNotExpired) || generationConflict(err) {
		return errLeaseStays
	}
	return err
}

// expiry is when st's lease ran out, for a log line (zero: none).
func expiry(st *claimrecords.ClaimState) time.Time {
	if st.LeaseExpiresAt == nil {
		return time.Time{}
	}
	return st.LeaseExpiresAt.UTC()
}

// allocationsLine is allocs for a log line: "provider:CLASS=n,...".
func allocationsLine(allocs []engine.Allocation) string {
	var parts []string
	for _, pr := range allocs {
		for _, r := range pr.Resources {
			parts = append(parts, fmt.Sprintf("%s:%s=%d", pr.ProviderUUID, r.Class, r.Amount))
		}
	}
	return strings.Join(parts, ",")
}

// StoredRequest returns the request stored with consumerUUID's claim (a
// JSON object, as Params.Request gave it), nil if no claim placed it.
func (c *Claimer) StoredRequest(ctx context.Context, consumerUUID string) ([]byte, error) {
	st, err := c.store.Claims.ClaimStateGet(ctx, consumerUUID)
	if err != nil || st == nil {
		return nil, err
	}
	return st.Request, nil
}

// reapTrace follows one pass of the lease reaper that found leases to
// end: a span (claims.leases.reap) with how many it ended.
type reapTrace struct {
	span trace.Span
}

// startReap starts the span of a reaper pass.
func startReap(ctx context.Context) (context.Context, *reapTrace) {
	ctx, span := instrument.Start(ctx, instrument.ScopeClaims, "claims.leases.reap")
	return ctx, &reapTrace{span: span}
}

// end ends the pass's span (none: nothing to end) with how many leases
// it ended.
func (tr *reapTrace) end(n int) {
	if tr == nil {
		return
	}
	tr.span.SetAttributes(attribute.Int("berth.claim.leases_expired", n))
	instrument.End(tr.span, nil)
}

// leaseExpired records the end of consumer's lease, begun at start, by
// action (released, reverted): a child span (claims.lease.expire) and the
// berth.claim.leases.expired counter.
func leaseExpired(ctx context.Context, start time.Time, consumer, action string) {
	instrument.Stage(ctx, instrument.ScopeClaims, "claims.lease.expire", start,
		instrument.AttrConsumer.String(consumer), attribute.String("berth.claim.lease_action", action))
	instrument.LeaseExpired(ctx, action)
}

// ObserveLeaseReaper registers, on the global meter provider, the gauge
// berth.claim.lease_reaper.last_pass: when c's lease reaper last ended a
// pass without error, in unix seconds (not observed before the first
// pass). The returned function unregisters it.
func ObserveLeaseReaper(c *Claimer) (unregister func() error, err error) {
	m := otel.Meter(instrument.ScopeClaims)
	last, err := m.Float64ObservableGauge("berth.claim.lease_reaper.last_pass", metric.WithUnit("s"),
		metric.WithDescription("When this berthd's claim lease reaper last ended a pass without error (having released what ran out, or found another berthd reaping), in unix seconds; it stops moving when the reaper is stuck or failing"))
	if err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if t := c.LeaseReaperPassed(); !t.IsZero() {
			o.ObserveFloat64(last, float64(t.UnixNano())/1e9)
		}
		return nil
	}, last)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
