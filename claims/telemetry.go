package claims

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/scheduler"
)

// This file is the claims' tracing and metrics: a span per claim
// (claims.claim) with the outcome and the number of write attempts, a
// child span for candidate generation (claims.candidates) and one per
// write attempt (claims.write), and the berth.claims counter by outcome.
// Claim calls it in a handful of lines so that the claim logic reads on
// its own.

// claimTrace follows one claim.
type claimTrace struct {
	ctx      context.Context
	span     trace.Span
	dryRun   bool
	attempts int
}

// startClaim starts the span of a claim for consumer.
func startClaim(ctx context.Context, consumer string, dryRun bool) (context.Context, *claimTrace) {
	ctx, span := instrument.Start(ctx, instrument.ScopeClaims, "claims.claim",
		instrument.AttrConsumer.String(consumer), attribute.Bool("berth.claim.dry_run", dryRun))
	return ctx, &claimTrace{ctx: ctx, span: span, dryRun: dryRun}
}

// write records one write attempt on root, begun at start, that ended
// with err: a child span with the attempt's number.
func (tr *claimTrace) write(start time.Time, root string, err error) {
	tr.attempts++
	outcome := instrument.OutcomeClaimed
	if err != nil {
		outcome = "conflict_retry"
		if !retryable(err) {
			outcome = instrument.OutcomeError
		}
	}
	instrument.Stage(tr.ctx, instrument.ScopeClaims, "claims.write", start,
		instrument.AttrAttempt.Int(tr.attempts), instrument.AttrRoot.String(root), instrument.AttrOutcome.String(outcome))
}

// end ends the claim's span with its outcome and counts the claim.
func (tr *claimTrace) end(err error) {
	outcome := claimOutcome(err)
	retries := tr.attempts // every attempt but a successful last one lost a race
	if err == nil && retries > 0 {
		retries--
	}
	if tr.span.IsRecording() {
		tr.span.SetAttributes(instrument.AttrOutcome.String(outcome), instrument.AttrAttempts.Int(tr.attempts))
	}
	instrument.ClaimDone(tr.ctx, outcome, tr.dryRun, retries)
	if outcome == instrument.OutcomeError {
		instrument.End(tr.span, err)
		return
	}
	instrument.End(tr.span, nil) // an expected refusal is not a failed span
}

// claimOutcome classifies a claim's error for the berth.claims metric.
func claimOutcome(err error) string {
	if err == nil {
		return instrument.OutcomeClaimed
	}
	return failureOutcome(err)
}

// failureOutcome is claimOutcome of an error (apart, so that a claim
// that succeeds does not allocate the targets of errors.As).
func failureOutcome(err error) string {
	var np *NotPlacedError
	var refused *scheduler.RefusedError
	var le *fault.Error
	switch {
	case errors.As(err, &np) && np.Reason == Refused, errors.As(err, &refused):
		return instrument.OutcomeScriptletRefused
	case errors.As(err, &np) && np.Reason == ConflictsExhausted:
		return instrument.OutcomeClaimConflict
	case errors.As(err, &np):
		return instrument.OutcomeNoValidHost
	case errors.As(err, &le) && errors.Is(le, fault.ErrConflict) && le.Code == fault.CodeConcurrentUpdate:
		return instrument.OutcomeConflict
	}
	return instrument.OutcomeError
}

// candidatesSpan records candidate generation, begun at start, that found
// n candidates, and counts them in the berth.candidates histogram.
func candidatesSpan(ctx context.Context, start time.Time, n int) {
	instrument.Stage(ctx, instrument.ScopeClaims, "claims.candidates", start, instrument.AttrCandidates.Int(n))
	instrument.Candidates(ctx, "claim", n)
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
