package claims

import (
	"errors"

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
	if c.shadows == nil || s == nil || len(s.cands) == 0 || !c.shadows.Active() {
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
	c.shadows.Submit(j)
}
