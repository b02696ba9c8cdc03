package claims

import (
	"context"
	"errors"
	"slices"

	"github.com/berthd/berth/claims/shadow"
	"github.com/berthd/berth/scheduler"
)

// submitShadows hands a decided claim to the active shadows (claims/shadow):
// the selection that decided it (its request, candidates and policy) and
// its first choice, or why it placed nothing. A claim that failed for
// another reason than placing nothing (an outage, a bad request), or had
// no candidate at all, is not shadowed: there was no decision to compare.
// It costs the claim a send on the runner's queue.
func (c *Claimer) submitShadows(s *selection, err error) {
	if c.shadows == nil || s == nil || len(s.cands) == 0 && s.preemption == nil || !c.shadows.Active() {
		return
	}
	if s.direct {
		// Ranked directly while no shadow was active: the shadows would
		// see only the candidates it kept.
		return
	}
	var np *NotPlacedError
	if err != nil && !errors.As(err, &np) {
		return
	}
	j := shadow.Job{Default: s.byDefault, Request: s.req, Candidates: s.cands, Enriched: s.enriched}
	var refused *scheduler.RefusedError
	switch {
	case errors.As(s.rankErr, &refused):
		j.Refusal = refused.Reason
	case s.ranking == nil || len(s.ranking.Ranked) == 0:
		j.Refusal = shadow.NothingPassed
	default:
		j.Root = s.ranking.Ranked[0].Cand.Root()
	}
	if s.preemption != nil {
		j.Preemption = s.preemption
		if s.preemption.Root != "" {
			j.Root, j.Refusal = s.preemption.Root, ""
		}
	}
	c.shadows.Submit(j)
}

// shadowPreemption is a claim's preemption plans as the shadows see them
// (shadow.Preemption), nil when no shadow runs, for a dry run (not
// shadowed) or without plans. Each plan's candidates are computed only
// when a shadow's worker asks, on the claim's snapshot with the plan's
// victims released, in the plan's root only (as the claim's fit checks
// search); the claim pays for the slice of plans.
func (c *Claimer) shadowPreemption(p *Params, r *resolved, s *selection, plans []plan) *shadow.Preemption {
	if c.shadows == nil || p.DryRun || len(plans) == 0 || !c.shadows.Active() {
		return nil
	}
	sp := &shadow.Preemption{Plans: make([]*shadow.PreemptPlan, len(plans))}
	for i, pl := range plans {
		cp, snap, req, maxCands := p.Candidates, r.snap, s.req, c.cfg.MaxCandidates
		sp.Plans[i] = &shadow.PreemptPlan{Root: pl.root, Victims: len(pl.victims),
			Candidates: func(ctx context.Context) (*scheduler.Request, []*scheduler.Candidate, error) {
				cp.Limit, cp.Max, cp.Sample = 0, maxCands, false
				cp.VersionsOnly, cp.AvoidEvacuated = true, true
				cp.Groups = slices.Clone(cp.Groups)
				for g := range cp.Groups {
					if cp.Groups[g].InTree == "" {
						cp.Groups[g].InTree = pl.root
					}
				}
				lc, err := snap.WithReleased(pl.allocations()).Candidates(ctx, &cp)
				if err != nil {
					return nil, nil, err
				}
				rq := *req
				rq.Target = pl.root
				return &rq, schedulerCandidates(lc), nil
			}}
	}
	return sp
}
