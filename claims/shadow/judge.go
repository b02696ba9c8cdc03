package shadow

import (
	"context"
	"errors"
	"time"

	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// What a shadow did beside one claim.
type outcome int

const (
	agreed outcome = iota
	disagreed
	wouldRefuse
	failedSteps
	failedMemory
	failedDeadline
	failedError
)

// NothingPassed is the refusal of a ranking that no candidate survived
// (the claim's or a shadow's).
const NothingPassed = "no candidate passed the policy's filters"

// verdict is one shadow's run on one claim: its outcome, how long it
// took, its choice (a disagreement) or its refusal.
type verdict struct {
	outcome  outcome
	took     time.Duration
	root     string
	rootName string
	refusal  string
	// victims is how many consumers the shadow would preempt to place
	// the claim (0: none).
	victims int
}

// disagreement is v's disagreement with j's claim, to keep.
func (v verdict) disagreement(j *Job) scheduling.ShadowDisagreement {
	claimRootName := providerName(j.Candidates, j.Root)
	if j.Preemption != nil && j.Preemption.Root == j.Root && j.Root != "" {
		claimRootName = j.Preemption.RootName
	}
	return scheduling.ShadowDisagreement{At: time.Now().UTC(), ConsumerUUID: j.Request.ConsumerUUID, Name: j.Request.Name,
		ProjectID: j.Request.ProjectID, ClaimRoot: j.Root, ClaimRootName: claimRootName,
		ClaimRefusal: j.Refusal, ShadowRoot: v.root, ShadowRootName: v.rootName}
}

// judge ranks j's candidates with sh's policy, within o.Deadline, and
// compares its first choice with the claim's.
//
// When the claim had a preemption search (j.Preemption) and the shadow
// places nothing on the claim's candidates, the shadow goes through the
// claim's plans as the claim does, best first, at most maxShadowPlans:
// the first plan on which it ranks a candidate is what it would preempt
// (agreed when that is the root the claim preempted on); a scriptlet's
// refusal stops it there, as it stops the claim.
func judge(o Options, sh Shadow, j *Job) verdict {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), o.Deadline)
	defer cancel()
	v := rank(ctx, o, sh, j)
	if v.outcome == wouldRefuse && v.refusal == NothingPassed && j.Preemption != nil {
		v = judgePreemption(ctx, o, sh, j)
	}
	v.took = time.Since(start)
	return v
}

// maxShadowPlans bounds the preemption plans a shadow ranks for one
// claim (each is a candidate search and a ranking).
const maxShadowPlans = 8

// rank is sh's verdict on j's candidates (none: nothing passed).
func rank(ctx context.Context, o Options, sh Shadow, j *Job) verdict {
	if len(j.Candidates) == 0 {
		return verdict{outcome: wouldRefuse, refusal: NothingPassed}
	}
	cands, err := enriched(ctx, o.Cloud, sh.Policy.NeedsFor(j.Request), j)
	var ranking *scheduler.Ranking
	if err == nil {
		ranking, err = sh.Policy.Rank(ctx, j.Request, cands)
	}
	var v verdict
	switch {
	case err != nil:
		v.outcome, v.refusal = failure(ctx, err)
	case len(ranking.Ranked) == 0:
		v.outcome, v.refusal = wouldRefuse, NothingPassed
	default:
		v.root = ranking.Ranked[0].Cand.Root()
		v.rootName = providerName(cands, v.root)
		v.outcome = disagreed
		if v.root == j.Root {
			v.outcome = agreed
		}
	}
	return v
}

// judgePreemption is sh's verdict on j's preemption plans.
func judgePreemption(ctx context.Context, o Options, sh Shadow, j *Job) verdict {
	for i, pl := range j.Preemption.Plans {
		if i == maxShadowPlans {
			break
		}
		req, cands, err := pl.candidates(ctx)
		if err != nil {
			out, refusal := failure(ctx, err)
			return verdict{outcome: out, refusal: refusal}
		}
		v := rank(ctx, o, sh, &Job{Request: req, Candidates: cands, Root: j.Preemption.Root})
		if v.outcome == wouldRefuse && v.refusal == NothingPassed {
			continue
		}
		if v.outcome == agreed || v.outcome == disagreed {
			v.victims = pl.Victims
		}
		return v
	}
	return verdict{outcome: wouldRefuse, refusal: NothingPassed}
}

// failure sorts the error of a shadow's ranking: a scriptlet's refusal is
// what the shadow would refuse the claim with; a limit, runtime error or
// unit failure is a failure of its kind.
func failure(ctx context.Context, err error) (outcome, string) {
	var lim *scriptlet.LimitError
	var se *scriptlet.RunError
	var refused *scheduler.RefusedError
	switch {
	case errors.As(err, &lim):
		switch lim.Limit {
		case scriptlet.LimitSteps:
			return failedSteps, ""
		case scriptlet.LimitMemory:
			return failedMemory, ""
		}
		return failedDeadline, ""
	case errors.As(err, &se):
		return failedError, ""
	case errors.As(err, &refused):
		return wouldRefuse, refused.Reason
	case ctx.Err() != nil:
		return failedDeadline, ""
	}
	return failedError, ""
}

// enriched returns j's candidates with the provider fields needs asks for:
// j's own when the claim's policy had them filled (or there is no cloud
// view), otherwise copies of them and of their providers, enriched (the
// claim's are never written). A claim's candidates share one provider map
// (claims' convert), so one copy serves them all.
func enriched(ctx context.Context, cloud Enricher, needs scheduler.Needs, j *Job) ([]*scheduler.Candidate, error) {
	if cloud == nil || len(j.Candidates) == 0 || covers(j.Enriched, needs) {
		return j.Candidates, nil
	}
	shared := j.Candidates[0].Providers
	provs := make(map[string]*scheduler.ProviderView, len(shared))
	for id, p := range shared {
		cp := *p
		provs[id] = &cp
	}
	if err := cloud.Enrich(ctx, needs, provs); err != nil {
		return nil, err
	}
	copies := make([]scheduler.Candidate, len(j.Candidates))
	out := make([]*scheduler.Candidate, len(j.Candidates))
	for i, c := range j.Candidates {
		copies[i] = *c
		copies[i].Providers = provs
		out[i] = &copies[i]
	}
	return out, nil
}

// covers reports whether have holds every provider field want asks for
// (the other needs are calls a unit makes of the cloud view itself).
func covers(have, want scheduler.Needs) bool {
	return (have.State || !want.State) && (have.Keys || !want.Keys) && (have.Consumers || !want.Consumers) &&
		(have.Preemptible || !want.Preemptible)
}

// providerName is the name of provider uuid among cands' providers, "" if
// it is not there.
func providerName(cands []*scheduler.Candidate, uuid string) string {
	if uuid == "" || len(cands) == 0 {
		return ""
	}
	if p := cands[0].Providers[uuid]; p != nil {
		return p.Name
	}
	return ""
}
