package claims

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/scheduler"
)

// A claim, from its entry to its answer: Claim checks the lease and keys
// the request for its retries (idempotent.go), claim resolves the policy
// and takes one snapshot (selection.go), ranks the candidates (through
// the scheduler), writes the best one through the ledger (write.go) and
// answers with what it wrote (answer.go). Its span and metrics are at the
// end of this file.

// Claim places p (see claim), safe to retry: a retry of a claim that was
// written gets the original result (see the comment at the top of this
// file).
func (c *Claimer) Claim(ctx context.Context, p Params) (*Result, error) {
	if err := c.checkLease(p.LeaseSeconds); err != nil {
		return nil, err
	}
	p.op, p.leaseMode = OpClaim, claimrecords.LeaseSet
	if p.DryRun {
		return c.claim(ctx, p)
	}
	o := newRetryKey(OpClaim, &p, "", "")
	p.retryKey = o
	res, err := c.claim(ctx, p)
	if err == nil || o == nil {
		return res, err
	}
	return c.settle(ctx, o, p.ConsumerUUID, err)
}

// claim places p: it ranks the candidates and writes the best one's
// allocations, moving on to the next ranked candidate on another root when
// the write finds the capacity gone or a provider deleted, at most
// MaxAttempts times. It returns a *NotPlacedError when nothing was
// placed for an expected reason; a consumer generation conflict is
// returned as the ledger's ErrConflict (placement.concurrent_update) at
// once, since another candidate cannot cure it, and so is a write over
// the project's limits (fault.ErrForbidden, berth.over_quota). Nothing is
// written unless the claim succeeds, and nothing at all for a dry run,
// whose answer says whether the limits would have let it through.
//
// It reads the ledger's snapshot once (resolveParams) and asks the engine
// every question of it: the excluded and target providers, the candidates
// (of the sample and, if nothing in the sample passes, of the full set)
// and why roots have none. The ledger is then asked only to write, and,
// for a sample whose every candidate lost to concurrent claims, for a
// fresh snapshot that has the writes that won.
//
// A claim that finds no candidate looks for consumers to preempt
// (preempt.go) before it answers a *NotPlacedError; one that fits does
// not.
//
// Once decided, a claim that is not a dry run is handed to the active
// shadows with the selection that decided it (shadow.go).
func (c *Claimer) claim(ctx context.Context, p Params) (_ *Result, err error) {
	ctx, tr := startClaim(ctx, p.ConsumerUUID, p.DryRun)
	defer func() {
		tr.end(err)
		c.refusals.record(&p, err)
	}()
	sample := c.cfg.ClaimCandidates
	if p.DryRun || p.Target != "" {
		sample = 0
	}
	r, err := c.resolveParams(ctx, &p)
	if err != nil {
		return nil, err
	}
	var s *selection
	if !p.DryRun {
		defer func() { c.submitShadows(s, err) }()
	}
	s, err = c.selectCandidates(ctx, &p, r, sample)
	if err != nil {
		return nil, err
	}
	if s.sampled && (s.rankErr != nil || len(s.ranking.Ranked) == 0) {
		// Nothing in the sample: the full set decides, and its steps
		// are the ones the answer counts.
		if s, err = c.selectCandidates(ctx, &p, r, 0); err != nil {
			return nil, err
		}
	}
	if np := c.notPlaced(ctx, &p, r, s); np != nil {
		return preempter{c}.run(ctx, &p, r, s, tr, np)
	}
	if p.DryRun {
		c.explainCapacity(ctx, &p, r, s.steps)
		res := c.result(&p, s, 0, 0, nil)
		if res.Quota, err = c.quotaReport(ctx, &p, res.Allocations); err != nil {
			return nil, err
		}
		return res, nil
	}
	q, err := c.quotaOf(ctx, p.ProjectID)
	if err != nil {
		return nil, err
	}

	w := writer{c: c, tr: tr, max: attemptsOf(c.cfg, &p), quota: q}
	if res, err := w.run(ctx, &p, s); res != nil || err != nil {
		return res, err
	}
	if s.sampled || s.partial {
		// Every candidate of the sample (or of those a direct ranking
		// kept) lost to concurrent claims, or the attempts ran out: the
		// full set, for its true steps and, with attempts left, for more
		// candidates (not on the roots that failed), from a snapshot that
		// has the writes that won.
		if r.snap, err = c.snapshot(ctx, &p); err != nil {
			return nil, err
		}
		if s, err = c.selectCandidates(ctx, &p, r, 0); err != nil {
			return nil, err
		}
		if np := c.notPlaced(ctx, &p, r, s); np != nil {
			return preempter{c}.run(ctx, &p, r, s, tr, np)
		}
		if res, err := w.run(ctx, &p, s); res != nil || err != nil {
			return res, err
		}
	}
	return nil, &NotPlacedError{Reason: ConflictsExhausted, Roots: s.roots, Steps: s.steps, Attempts: w.attempts}
}

// Explain ranks the candidates for p as Claim would, without writing.
func (c *Claimer) Explain(ctx context.Context, p Params) (*Explanation, error) {
	r, err := c.resolveParams(ctx, &p)
	if err != nil {
		return nil, err
	}
	s, err := c.selectCandidates(ctx, &p, r, 0)
	if err != nil {
		return nil, err
	}
	var refused *scheduler.RefusedError
	if errors.As(s.rankErr, &refused) {
		return &Explanation{Ranking: s.ranking, Refusal: refused.Reason}, nil
	}
	if s.rankErr != nil {
		return nil, s.rankErr
	}
	return &Explanation{Ranking: s.ranking}, nil
}

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
