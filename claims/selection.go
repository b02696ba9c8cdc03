package claims

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/claims/shadow"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// Selection: a claim reads the ledger's snapshot once (resolveParams),
// then asks the engine for its candidates and the scheduler for their
// ranking (selectCandidates); nothing here writes.

// selection is the outcome of the selection pipeline.
type selection struct {
	roots int // root providers the request saw
	found int // candidates the engine found
	// cands are the candidates ranked with views: every one the engine
	// found or, ranked directly (scheduler.Policy.RankDirect), those the
	// ranking kept (partial: fewer than passed the filters).
	cands           []*scheduler.Candidate
	direct, partial bool
	// kept is the engine's answer ranked directly (direct), whose
	// records the views of cands are built from when read (keptViews).
	kept *engine.Candidates
	// lc is the engine's answer; a candidate c of cands was made from
	// lc.Request(c.Index).
	lc      *engine.Candidates
	steps   []Step
	ranking *scheduler.Ranking
	rankErr error // a *scheduler.RefusedError, or a failure
	policy  *scheduler.Policy
	// byDefault: policy was the default policy when the claim resolved
	// it (resolved.byDefault).
	byDefault bool
	// sampled is set when the candidates are a sample of a larger set.
	sampled bool
	// req is the request ranked; enriched the provider fields the cloud
	// view filled in for it (a shadow reads both).
	req      *scheduler.Request
	enriched scheduler.Needs
	// preemption is the claim's preemption search, for the shadows:
	// set when it found plans and shadows are active (preempt.go).
	preemption *shadow.Preemption
	// What req points to, and where steps start: in the selection's
	// own allocation.
	request scheduler.Request
	stepArr [3]Step
}

// resolved is what a claim's selections need from its Params beyond the
// selection fields, looked up once per claim: the snapshot every question
// is asked of, the providers to avoid (exclude_providers and, for a
// reschedule, the roots it failed on), the target root and the policy.
type resolved struct {
	snap    *engine.Snapshot
	exclude []string
	target  string
	policy  *scheduler.Policy
	// byDefault: policy is the default policy (no name, no override, or
	// the default's own name), as resolved; the shadows judge only such
	// claims.
	byDefault bool
}

// resolveParams checks p's reason (defaulting it), takes the snapshot
// and resolves p's names. Errors in the request (unknown names, policy)
// and outages are returned.
func (c *Claimer) resolveParams(ctx context.Context, p *Params) (*resolved, error) {
	if p.Reason == "" {
		p.Reason = ReasonNew
	}
	if !slices.Contains(Reasons, p.Reason) {
		return nil, invalid("Invalid reason %q: want one of %s", p.Reason, strings.Join(Reasons, ", "))
	}
	snap, err := c.snapshot(ctx, p)
	if err != nil {
		return nil, err
	}
	r := &resolved{snap: snap, exclude: make([]string, 0, len(p.Exclude))}
	for _, x := range p.Exclude {
		prov, err := resolve(snap, x, "exclude_providers")
		if err != nil {
			return nil, err
		}
		r.exclude = append(r.exclude, prov.UUID)
	}
	if p.Reason == ReasonReschedule {
		failed, err := c.store.Claims.ClaimFailures(ctx, p.ConsumerUUID)
		if err != nil {
			return nil, err
		}
		r.exclude = append(r.exclude, failed...)
	}
	if p.Target != "" {
		prov, err := resolve(snap, p.Target, "target")
		if err != nil {
			return nil, err
		}
		r.target = prov.RootUUID
	}
	if r.policy, r.byDefault, err = c.resolvePolicy(ctx, p); err != nil {
		return nil, err
	}
	return r, nil
}

// snapshot reads the ledger's snapshot for p: the one read a claim's
// selection makes of the ledger (see Claim). It is the ranking snapshot,
// which skips the catch-up with the other processes' writes that a
// Placement read makes (snapshot.Cache.RankingSnapshot): the claim's write
// re-checks capacity under the providers' locks, so ranking on a
// snapshot a few milliseconds old costs at worst a retry on the next
// candidate, and the claim saves a round trip to PostgreSQL.
func (c *Claimer) snapshot(ctx context.Context, p *Params) (*engine.Snapshot, error) {
	classes, traits := engine.ParamsNames(&p.Candidates)
	return c.store.Snapshots.RankingSnapshot(ctx, classes, traits)
}

// resolve finds the provider of snap a uuid or name designates; unknown
// is ErrInvalid (a bad request, not a missing resource).
func resolve(snap *engine.Snapshot, ref, field string) (engine.Provider, error) {
	f := engine.ProviderFilter{Name: ref}
	if uuid.Valid(ref) {
		f = engine.ProviderFilter{UUID: ref}
	}
	provs, err := snap.ProvidersMatching(&f)
	if err != nil {
		return engine.Provider{}, err
	}
	if len(provs) == 0 && f.UUID != "" {
		// A provider may be named like a uuid.
		if provs, err = snap.ProvidersMatching(&engine.ProviderFilter{Name: ref}); err != nil {
			return engine.Provider{}, err
		}
	}
	if len(provs) == 0 {
		return engine.Provider{}, invalid("No resource provider with uuid or name %q in %s.", ref, field)
	}
	return provs[0], nil
}

// resolvePolicy picks the policy p ranks with, and says whether it is
// the default policy.
func (c *Claimer) resolvePolicy(ctx context.Context, p *Params) (pol *scheduler.Policy, isDefault bool, err error) {
	switch {
	case p.PolicyOverride != nil:
		return p.PolicyOverride, false, nil
	case c.policies != nil:
		pol, isDefault, err := c.policies.Policy(ctx, p.Policy)
		var le *fault.Error
		if errors.As(err, &le) && errors.Is(le, fault.ErrNotFound) {
			// A name in the body, not the resource of the URL: 400.
			return nil, false, &fault.Error{Kind: fault.ErrInvalid, Code: le.Code, Msg: le.Msg}
		}
		return pol, isDefault, err
	case p.Policy != "":
		return nil, false, invalid("Unknown scheduling policy %q: this server has no named policies.", p.Policy)
	}
	return c.policy, true, nil
}

// selectCandidates runs the pipeline up to the ranking: get candidates
// from r's snapshot, apply r's exclusions and target, enrich, rank. With
// sample > 0 it ranks at most sample candidates drawn at random across
// roots (engine CandidatesParams.Sample). Outages and policy failures are
// returned; a scriptlet refusal is in rankErr.
func (c *Claimer) selectCandidates(ctx context.Context, p *Params, r *resolved, sample int) (*selection, error) {
	policy, exclude, target := r.policy, r.exclude, r.target

	// Randomize (berthd --randomize-candidates) stays as the request
	// says: shuffled candidates break ties between equal scores at random,
	// so concurrent claims spread over equally good providers instead of
	// queueing on the first one's row lock.
	cp := p.Candidates
	cp.Limit, cp.Max = 0, c.cfg.MaxCandidates
	cp.VersionsOnly = true // schedulerCandidates builds its views from the records
	// A sample's requests are built for the candidates a direct ranking
	// keeps (rankDirect), or all of them for the full path.
	cp.DeferRequests = sample > 0
	cp.AvoidEvacuated = true
	if sample > 0 {
		cp.Sample = true
		if cp.Max <= 0 || sample < cp.Max {
			cp.Max = sample
		}
	}
	start := time.Now()
	lc, err := r.snap.Candidates(ctx, &cp)
	if err != nil {
		return nil, err
	}
	candidatesSpan(ctx, start, lc.Len())
	s := &selection{roots: lc.Roots, found: lc.Len(), lc: lc,
		policy: policy, byDefault: r.byDefault, sampled: sample > 0 && lc.Truncated}
	req := &s.request
	*req = scheduler.Request{
		ConsumerUUID: p.ConsumerUUID,
		ProjectID:    p.ProjectID,
		UserID:       p.UserID,
		ConsumerType: p.ConsumerType,
		Resources:    map[string]int64{},
		Name:         p.Name,
		Reason:       p.Reason,
		Properties:   p.Properties,
		Instance:     p.Instance,
		Target:       target,
		Avoid:        exclude,
		Keys:         p.Keys,
		Data:         c.cloudData(),
	}
	addGroups(req, cp.Groups)
	s.req = req
	// A claim's sample, in a flat cloud, under a policy that reads only
	// what candidates take (the default policy's kind), is ranked on the
	// snapshot's records, and views are built only for the candidates the
	// claim may write or answer with; shadows read every candidate's view.
	if sample > 0 && lc.Flat && policy.Direct(req) && (c.shadows == nil || !c.shadows.Active()) {
		if s.rankDirect(ctx, lc, attemptsOf(c.cfg, p)+p.Alternates+max(c.cfg.SubsetSize, 1)) {
			return s, nil
		}
	}
	lc.BuildAllRequests()
	s.cands = schedulerCandidates(lc)
	fit := make(map[string]struct{}, len(s.cands))
	for _, cand := range s.cands {
		fit[cand.Root()] = struct{}{}
	}
	s.firstStep(len(fit), 0)
	if c.cloud != nil && len(s.cands) > 0 {
		needs, provs := policy.NeedsFor(req), s.cands[0].Providers
		if err := c.cloud.Enrich(ctx, needs, provs); err != nil {
			return nil, err
		}
		s.enriched = needs
	}
	s.ranking, s.rankErr = policy.Rank(ctx, req, s.cands)
	var refused *scheduler.RefusedError
	if s.rankErr != nil && !errors.As(s.rankErr, &refused) {
		return nil, s.rankErr
	}
	if s.ranking != nil {
		for _, rj := range s.ranking.Rejections {
			s.steps = append(s.steps, Step{Unit: rj.Unit, Kind: "filter", Removed: rj.Removed,
				Remaining: rj.Remaining, Reasons: rj.Reasons})
		}
	}
	return s, nil
}

// firstStep is the candidates step of s, of the candidates found
// anchored on roots roots: the roots without one removed; the steps
// have room for more after it.
func (s *selection) firstStep(roots, more int) {
	first := Step{Unit: StepCandidates, Kind: "filter", Removed: max(0, s.roots-roots),
		Remaining: s.found, Reasons: map[string]int{}}
	if s.sampled {
		// Roots outside the sample were not looked at: whether they fit
		// is unknown, so they are counted as such, not as lacking capacity.
		first.Reasons[ReasonOutsideSample] = first.Removed
	}
	if s.steps == nil {
		s.steps = s.stepArr[:0]
	}
	if cap(s.steps) < 1+more {
		s.steps = make([]Step, 0, 1+more)
	}
	s.steps = append(s.steps[:0], first)
}

// rankDirect ranks lc, the candidates of s's sample in a flat cloud, for
// a policy Direct for s.req: on the snapshot's records, the first keep
// kept with their roots (keptRoots; their views are built only for a
// dry run's answer, keptViews), and, unless the sample is a random one
// (s.sampled), those tied with them. It reports false, leaving s as it
// was, when no candidate passed (the full path then answers with every
// candidate's view).
func (s *selection) rankDirect(ctx context.Context, lc *engine.Candidates, keep int) bool {
	// The kept candidates, best first, are those of the ranking.
	var kept []*scheduler.Candidate
	ranking, err := s.policy.RankDirect(ctx, lc, keep, s.sampled, func(cands []*scheduler.Candidate) {
		keptRoots(cands)
		kept = cands
	})
	if err != nil || len(ranking.Ranked) == 0 {
		return false
	}
	s.ranking, s.direct, s.kept, s.cands = ranking, true, lc, kept
	s.partial = len(ranking.Ranked) < ranking.Rejections[len(ranking.Rejections)-1].Remaining
	s.firstStep(flatRoots(lc), len(ranking.Rejections))
	for _, rj := range ranking.Rejections {
		s.steps = append(s.steps, Step{Unit: rj.Unit, Kind: "filter", Removed: rj.Removed,
			Remaining: rj.Remaining, Reasons: rj.Reasons})
	}
	return true
}

// attemptsOf is how many writes a claim of p tries.
func attemptsOf(cfg Config, p *Params) int {
	if p.MaxAttempts > 0 {
		return min(p.MaxAttempts, MaxMaxAttempts)
	}
	return cfg.MaxAttempts
}

// explainCapacity fills the capacity step's reasons (steps[0]), which
// cost a second pass over r's snapshot: only for claims that placed
// nothing and dry runs. A failure to explain is logged, not returned.
func (c *Claimer) explainCapacity(ctx context.Context, p *Params, r *resolved, steps []Step) {
	cp := p.Candidates
	cp.Limit, cp.Max, cp.Randomize = 0, c.cfg.MaxCandidates, false
	cp.AvoidEvacuated = true
	sf, err := r.snap.Shortfall(ctx, &cp)
	if err != nil {
		c.log.WarnContext(ctx, "claims: explaining the capacity step", "error", err)
		return
	}
	steps[0].Reasons = sf.Reasons
}

// addGroups adds what groups take to req: their amounts per class, and
// the traits they require (those required alone, not as one of several)
// or forbid, each once.
func addGroups(req *scheduler.Request, groups []engine.RequestGroup) {
	for _, g := range groups {
		for _, r := range g.Resources {
			req.Resources[r.Class] += r.Amount
		}
		for _, any := range g.RequiredTraits {
			if len(any) == 1 && !slices.Contains(req.Required, any[0]) {
				req.Required = append(req.Required, any[0])
			}
		}
		for _, t := range g.ForbiddenTraits {
			if !slices.Contains(req.Forbidden, t) {
				req.Forbidden = append(req.Forbidden, t)
			}
		}
	}
}
