package claims

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Defaults and bounds of Config and Params.
const (
	DefaultMaxAttempts = 10
	MaxMaxAttempts     = 50
	DefaultAlternates  = 2
	// DefaultClaimCandidates is Config.ClaimCandidates when unset.
	DefaultClaimCandidates = 100
)

// Reasons a consumer is placed (Params.Reason).
const (
	ReasonNew        = "new"
	ReasonEvacuation = "evacuation"
	ReasonRelocation = "relocation"
	ReasonReschedule = "reschedule"
)

// Reasons lists the valid Params.Reason values.
var Reasons = []string{ReasonNew, ReasonEvacuation, ReasonRelocation, ReasonReschedule}

// Config configures a Claimer.
type Config struct {
	// MaxAttempts is how many candidates a claim tries to write before it
	// gives up; a request may ask for fewer or, up to MaxMaxAttempts,
	// more. Default DefaultMaxAttempts.
	MaxAttempts int
	// MaxCandidates caps the candidates the ledger generates per claim;
	// 0 means ledger.DefaultMaxCandidates.
	MaxCandidates int
	// ClaimCandidates is the sample a claim ranks first: at most this many
	// candidates, drawn at random across root providers. Only when nothing
	// in the sample passes the filters, or every candidate of the sample
	// was tried and lost to concurrent claims, does the claim rank the
	// full set. Dry runs and claims with a target rank the full set. 0
	// means DefaultClaimCandidates; negative disables sampling.
	ClaimCandidates int
	// SubsetSize spreads concurrent claims: each write attempt picks at
	// random among the best SubsetSize untried candidates (on roots that
	// have not failed); 1 picks at random among the candidates whose score
	// ties the best one's. 0 takes them in rank order (ties in the
	// ledger's order), deterministic; berthd defaults to 1.
	SubsetSize int
}

// PolicySource resolves a scheduling policy by name; the empty name is
// the default policy. An unknown name is a *ledger.Error of kind
// ErrNotFound (or ErrInvalid).
type PolicySource interface {
	Policy(ctx context.Context, name string) (*scheduler.Policy, error)
}

// StaticPolicy is a PolicySource of one policy, whatever the name asked.
type StaticPolicy struct{ P *scheduler.Policy }

// Policy implements PolicySource.
func (s StaticPolicy) Policy(context.Context, string) (*scheduler.Policy, error) { return s.P, nil }

// Enricher fills the costly provider fields (state, placement keys,
// consumer counts) a policy needs, for the providers of one claim's
// candidates. It writes only those fields, and only those needs asks
// for: the Providers may otherwise be shared with other claims.
type Enricher interface {
	Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.Provider) error
}

// Enrichers runs several Enrichers in turn.
type Enrichers []Enricher

// Enrich implements Enricher.
func (es Enrichers) Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.Provider) error {
	for _, e := range es {
		if err := e.Enrich(ctx, needs, provs); err != nil {
			return err
		}
	}
	return nil
}

// Claimer claims resources for consumers. It is the only writer of claim
// transactions, and it writes through ledger.Store.ClaimWrite (one
// transaction per attempt, no lock held between the ranking and the
// write, none across an HTTP round trip). It is safe for concurrent use.
type Claimer struct {
	store    *ledger.Store
	policy   *scheduler.Policy
	policies PolicySource
	enricher Enricher
	data     scheduler.ClusterData
	cfg      Config
	log      *slog.Logger
	// provCache keeps the scheduler's view of providers between claims.
	provCache providerCache
}

// SetClusterData installs what scriptlets query about the cluster (set
// on every scheduler.Request). Call it before the first claim.
func (c *Claimer) SetClusterData(d scheduler.ClusterData) { c.data = d }

// SetPolicySource makes the Claimer resolve Params.Policy through src
// instead of using its one policy. Call it before the first claim.
func (c *Claimer) SetPolicySource(src PolicySource) { c.policies = src }

// SetEnricher installs the source of costly provider fields. Call it
// before the first claim.
func (c *Claimer) SetEnricher(e Enricher) { c.enricher = e }

// DefaultPolicy is the policy of a Claimer built without one: the
// capacity check (the ledger's candidates only include what fits) and
// spreading by free capacity.
func DefaultPolicy() (*scheduler.Policy, error) {
	return scheduler.NewPolicy(scheduler.DefaultPolicyConfig(), nil, nil, scheduler.ScriptletLimits{})
}

// New returns a Claimer over store ranking with policy (nil:
// DefaultPolicy) until SetPolicySource installs a source of named
// policies.
func New(store *ledger.Store, policy *scheduler.Policy, cfg Config, log *slog.Logger) (*Claimer, error) {
	if policy == nil {
		var err error
		if policy, err = DefaultPolicy(); err != nil {
			return nil, err
		}
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.ClaimCandidates == 0 {
		cfg.ClaimCandidates = DefaultClaimCandidates
	}
	if cfg.MaxAttempts < 1 || cfg.MaxAttempts > MaxMaxAttempts {
		return nil, fmt.Errorf("claims: max attempts %d: want 1 to %d", cfg.MaxAttempts, MaxMaxAttempts)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Claimer{store: store, policy: policy, cfg: cfg, log: log}, nil
}

// Params is one claim.
type Params struct {
	ConsumerUUID string
	// ProjectID and UserID own the consumer; ConsumerType, when set,
	// becomes its type.
	ProjectID    string
	UserID       string
	ConsumerType string
	// ConsumerGeneration is the generation of an existing consumer whose
	// allocations the claim replaces, or nil for a consumer that must not
	// exist yet (microversion 1.28 semantics).
	ConsumerGeneration *int64
	// Candidates is the request, as for GET /allocation_candidates. Limit
	// is ignored: every candidate (up to the configured cap) is ranked.
	Candidates ledger.CandidatesParams
	// Exclude lists root providers (uuid or name) not to place on: a
	// candidate using one of them or a provider of its tree is removed.
	Exclude []string
	// Target pins the claim to one root provider (uuid or name).
	Target string
	// MaxAttempts bounds the writes tried; 0 means the configured bound.
	MaxAttempts int
	// Name is the instance's name, handed to filters and scriptlets and
	// stored on the consumer.
	Name string
	// Reason is why the consumer is placed (Reasons); empty means new.
	// A claim with reason reschedule also avoids every provider the
	// consumer failed on before.
	Reason string
	// Properties is free-form, handed to filters and scriptlets and
	// stored on the consumer.
	Properties map[string]any
	// Policy names the scheduling policy; empty means the default.
	Policy string
	// Keys are the claim's placement keys.
	Keys []scheduler.KeyRequest
	// Alternates is how many further ranked candidates (on other roots)
	// to return unclaimed.
	Alternates int
	// DryRun does everything but the write and returns the full ranking.
	DryRun bool
	// PolicyOverride, when set, ranks with this policy instead of the
	// one Policy names (testing a scriptlet against live data).
	PolicyOverride *scheduler.Policy

	// with are other consumers written in the same transaction (a move's
	// migration consumer); move is the record written along.
	with []ledger.ConsumerAllocations
	move *ledger.MoveRecord
}

// Result is a successful claim, or a dry run's answer.
type Result struct {
	ConsumerUUID string
	// ConsumerGeneration is the consumer's generation after the write
	// (for a dry run: what it would be).
	ConsumerGeneration int64
	// Allocations are what was written, provider by provider.
	Allocations []ledger.ProviderResources
	// Mappings are request group suffix -> providers.
	Mappings map[string][]string
	// Root and RootName are the root provider of the chosen candidate.
	Root     string
	RootName string
	Score    float64
	// Alternates are further candidates, best first, one per root, not
	// claimed.
	Alternates []Option
	// Attempts is how many writes were tried (0 for a dry run).
	Attempts int
	DryRun   bool
	// Steps are the selection steps with what each removed.
	Steps []Step
	// Ranking is the full ranking (dry runs only).
	Ranking []Option
	// ScriptletLog are the scriptlet's log lines (dry runs only).
	ScriptletLog []LogLine
	// Migration is the migration consumer of a move and what it holds.
	Migration *ledger.ConsumerAllocations
}

// Option is a ranked candidate.
type Option struct {
	Root        string
	RootName    string
	Score       float64
	Weights     map[string]float64
	Allocations []ledger.ProviderResources
	Mappings    map[string][]string
}

// Step is one selection step: how many candidates it removed, how many
// remained, and why. The first step, StepCandidates, counts root
// providers (those with no candidate at all: removed) against candidates
// (remaining); the scheduler's filters after it count candidates. The
// scheduler's "pin" and "exclude" filters apply target and
// exclude_providers.
type Step struct {
	Unit      string
	Kind      string // "filter"
	Removed   int
	Remaining int
	Reasons   map[string]int
}

// ReasonOutsideSample counts, in a sampled claim's StepCandidates step,
// the roots that had no candidate in the sample (Config.ClaimCandidates):
// not looked at, or lacking capacity.
const ReasonOutsideSample = "outside the sample"

// StepCandidates names the first step: the ledger's allocation
// candidates, which leave out the roots that cannot hold the request.
const StepCandidates = "allocation_candidates"

// LogLine is one line a scriptlet logged (level "info", "warn" or
// "error").
type LogLine = scheduler.LogLine

// Reason says why a claim placed nothing.
type Reason string

// Reasons of a NotPlacedError.
const (
	NoCandidates       Reason = "no_candidates"
	AllFiltered        Reason = "all_filtered"
	Refused            Reason = "refused"
	ConflictsExhausted Reason = "conflicts_exhausted"
)

// NotPlacedError is a claim that placed nothing, and why: the answer
// "no valid host" (409 berth.no_valid_host over HTTP), an expected
// outcome, not a failure. Nothing was written.
type NotPlacedError struct {
	Reason Reason
	// Roots is how many root providers the request saw.
	Roots int
	// Steps are the selection steps, StepCandidates first.
	Steps []Step
	// Attempts is how many writes lost to concurrent claims.
	Attempts int
	// Refusal is the scriptlet's reason when Reason is Refused.
	Refusal string
	// ScriptletLog are the scriptlet's log lines.
	ScriptletLog []LogLine
}

// Error words the steps, as "1000 providers; 612 lacked MEMORY_MB
// 16384; 388 removed by anti_affinity".
func (e *NotPlacedError) Error() string {
	if e.Reason == Refused {
		return "Failed instance placement scriptlet: " + e.Refusal
	}
	noun := "providers"
	if e.Roots == 1 {
		noun = "provider"
	}
	parts := []string{fmt.Sprintf("%d %s", e.Roots, noun)}
	for _, st := range e.Steps {
		if st.Removed == 0 {
			continue
		}
		reasons := make([]string, 0, len(st.Reasons))
		for r := range st.Reasons {
			reasons = append(reasons, r)
		}
		slices.SortFunc(reasons, func(a, b string) int {
			if d := st.Reasons[b] - st.Reasons[a]; d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		if st.Unit == StepCandidates {
			for _, r := range reasons {
				parts = append(parts, fmt.Sprintf("%d %s", st.Reasons[r], r))
			}
			continue
		}
		s := fmt.Sprintf("%d removed by %s", st.Removed, st.Unit)
		if len(reasons) > 0 && !(len(reasons) == 1 && reasons[0] == "rejected") {
			for i, r := range reasons {
				reasons[i] = fmt.Sprintf("%s: %d", r, st.Reasons[r])
			}
			s += " (" + strings.Join(reasons, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if e.Reason == ConflictsExhausted {
		parts = append(parts, fmt.Sprintf("%d attempts lost to concurrent claims", e.Attempts))
	}
	return strings.Join(parts, "; ")
}

// Explanation is a dry run: the ranking a claim would try, nothing written.
type Explanation struct {
	Ranking *scheduler.Ranking
	// Refusal is the scriptlet's refusal, if it refused.
	Refusal string
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

// selection is the outcome of the selection pipeline.
type selection struct {
	roots int // root providers the request saw
	found int // candidates the ledger found
	cands []*scheduler.Candidate
	// reqs are the ledger's candidates, cands[i] made from reqs[i].
	reqs    []ledger.AllocationRequest
	steps   []Step
	ranking *scheduler.Ranking
	rankErr error // a *scheduler.RefusedError, or a failure
	policy  *scheduler.Policy
	// sampled is set when the candidates are a sample of a larger set.
	sampled bool
}

// resolved is what a claim's selections need from its Params beyond the
// selection fields, looked up once per claim: the providers to avoid
// (exclude_providers and, for a reschedule, the roots it failed on), the
// target root and the policy.
type resolved struct {
	exclude []string
	target  string
	policy  *scheduler.Policy
}

// resolveParams checks p's reason (defaulting it) and resolves its names.
// Errors in the request (unknown names, policy) and outages are returned.
func (c *Claimer) resolveParams(ctx context.Context, p *Params) (*resolved, error) {
	if p.Reason == "" {
		p.Reason = ReasonNew
	}
	if !slices.Contains(Reasons, p.Reason) {
		return nil, invalid("Invalid reason %q: want one of %s", p.Reason, strings.Join(Reasons, ", "))
	}
	r := &resolved{exclude: make([]string, 0, len(p.Exclude))}
	for _, x := range p.Exclude {
		prov, err := c.resolve(ctx, x, "exclude_providers")
		if err != nil {
			return nil, err
		}
		r.exclude = append(r.exclude, prov.UUID)
	}
	if p.Reason == ReasonReschedule {
		failed, err := c.store.ClaimFailures(ctx, p.ConsumerUUID)
		if err != nil {
			return nil, err
		}
		r.exclude = append(r.exclude, failed...)
	}
	if p.Target != "" {
		prov, err := c.resolve(ctx, p.Target, "target")
		if err != nil {
			return nil, err
		}
		r.target = prov.RootUUID
	}
	var err error
	if r.policy, err = c.resolvePolicy(ctx, p); err != nil {
		return nil, err
	}
	return r, nil
}

// selectCandidates runs the pipeline up to the ranking: get candidates
// from the ledger snapshot, apply r's exclusions and target, enrich,
// rank. With sample > 0 it ranks at most sample candidates drawn at
// random across roots (ledger CandidatesParams.Sample). Outages and
// policy failures are returned; a scriptlet refusal is in rankErr.
func (c *Claimer) selectCandidates(ctx context.Context, p *Params, r *resolved, sample int) (*selection, error) {
	policy, exclude, target := r.policy, r.exclude, r.target

	// Randomize (berthd --randomize-candidates) stays as the request
	// says: shuffled candidates break ties between equal scores at random,
	// so concurrent claims spread over equally good providers instead of
	// queueing on the first one's row lock.
	cp := p.Candidates
	cp.Limit, cp.Max = 0, c.cfg.MaxCandidates
	cp.VersionsOnly = true // convert keeps the providers it saw (provCache)
	if sample > 0 {
		cp.Sample = true
		if cp.Max <= 0 || sample < cp.Max {
			cp.Max = sample
		}
	}
	start := time.Now()
	lc, err := c.store.AllocationCandidates(ctx, cp)
	if err != nil {
		return nil, err
	}
	candidatesSpan(ctx, start, len(lc.Requests))
	s := &selection{roots: lc.Roots, found: len(lc.Requests), cands: convert(lc, &c.provCache), reqs: lc.Requests,
		policy: policy, sampled: sample > 0 && lc.Truncated}
	fit := make(map[string]struct{}, len(s.cands))
	for _, cand := range s.cands {
		fit[cand.Root()] = struct{}{}
	}
	first := Step{Unit: StepCandidates, Kind: "filter", Removed: max(0, lc.Roots-len(fit)),
		Remaining: len(s.cands), Reasons: map[string]int{}}
	if s.sampled {
		// Roots outside the sample were not looked at: whether they fit
		// is unknown, so they are counted as such, not as lacking capacity.
		first.Reasons[ReasonOutsideSample] = first.Removed
	}
	s.steps = append(s.steps, first)
	req := &scheduler.Request{
		ConsumerUUID: p.ConsumerUUID,
		ProjectID:    p.ProjectID,
		UserID:       p.UserID,
		ConsumerType: p.ConsumerType,
		Resources:    map[string]int64{},
		Name:         p.Name,
		Reason:       p.Reason,
		Properties:   p.Properties,
		Target:       target,
		Avoid:        exclude,
		Keys:         p.Keys,
		Data:         c.data,
	}
	for _, g := range cp.Groups {
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
	if c.enricher != nil && len(s.cands) > 0 {
		needs, provs := policy.NeedsFor(req), s.cands[0].Providers
		if needs.State || needs.Keys || needs.Consumers {
			// The Providers may be shared with other claims
			// (providerCache): the enricher fills copies of its own.
			for u, prov := range provs {
				cp := *prov
				provs[u] = &cp
			}
		}
		if err := c.enricher.Enrich(ctx, needs, provs); err != nil {
			return nil, err
		}
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

// resolvePolicy picks the policy p ranks with.
func (c *Claimer) resolvePolicy(ctx context.Context, p *Params) (*scheduler.Policy, error) {
	switch {
	case p.PolicyOverride != nil:
		return p.PolicyOverride, nil
	case c.policies != nil:
		pol, err := c.policies.Policy(ctx, p.Policy)
		var le *ledger.Error
		if errors.As(err, &le) && errors.Is(le, ledger.ErrNotFound) {
			// A name in the body, not the resource of the URL: 400.
			return nil, &ledger.Error{Kind: ledger.ErrInvalid, Code: le.Code, Msg: le.Msg}
		}
		return pol, err
	case p.Policy != "":
		return nil, invalid("Unknown scheduling policy %q: this server has no named policies.", p.Policy)
	}
	return c.policy, nil
}

// resolve finds the provider a uuid or name designates; unknown is
// ErrInvalid (a bad request, not a missing resource).
func (c *Claimer) resolve(ctx context.Context, ref, field string) (ledger.Provider, error) {
	f := ledger.ProviderFilter{Name: ref}
	if isUUID(ref) {
		f = ledger.ProviderFilter{UUID: ref}
	}
	provs, err := c.store.ProvidersMatching(ctx, f)
	if err != nil {
		return ledger.Provider{}, err
	}
	if len(provs) == 0 && f.UUID != "" {
		// A provider may be named like a uuid.
		if provs, err = c.store.ProvidersMatching(ctx, ledger.ProviderFilter{Name: ref}); err != nil {
			return ledger.Provider{}, err
		}
	}
	if len(provs) == 0 {
		return ledger.Provider{}, invalid("No resource provider with uuid or name %q in %s.", ref, field)
	}
	return provs[0], nil
}

func invalid(format string, args ...any) error {
	return &ledger.Error{Kind: ledger.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// Claim places p: it ranks the candidates and writes the best one's
// allocations, moving on to the next ranked candidate on another root when
// the write finds the capacity gone or a provider deleted, at most
// MaxAttempts times. It returns a *NotPlacedError when nothing was placed
// for an expected reason; a consumer generation conflict is returned as
// the ledger's ErrConflict (placement.concurrent_update) at once, since
// another candidate cannot cure it. Nothing is written unless the claim
// succeeds, and nothing at all for a dry run.
func (c *Claimer) Claim(ctx context.Context, p Params) (_ *Result, err error) {
	ctx, tr := startClaim(ctx, p.ConsumerUUID, p.DryRun)
	defer func() { tr.end(err) }()
	sample := c.cfg.ClaimCandidates
	if p.DryRun || p.Target != "" {
		sample = 0
	}
	r, err := c.resolveParams(ctx, &p)
	if err != nil {
		return nil, err
	}
	s, err := c.selectCandidates(ctx, &p, r, sample)
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
	if np := c.notPlaced(ctx, &p, s); np != nil {
		return nil, np
	}
	if p.DryRun {
		c.explainCapacity(ctx, &p, s.steps)
		return c.result(&p, s, 0, 0, nil), nil
	}

	maxAttempts := c.cfg.MaxAttempts
	if p.MaxAttempts > 0 {
		maxAttempts = min(p.MaxAttempts, MaxMaxAttempts)
	}
	w := writer{c: c, p: &p, tr: tr, max: maxAttempts}
	if res, err := w.run(ctx, s); res != nil || err != nil {
		return res, err
	}
	if s.sampled {
		// Every candidate of the sample lost to concurrent claims, or the
		// attempts ran out: the full set, for its true steps and, with
		// attempts left, for more candidates (not on the roots that
		// failed).
		if s, err = c.selectCandidates(ctx, &p, r, 0); err != nil {
			return nil, err
		}
		if np := c.notPlaced(ctx, &p, s); np != nil {
			return nil, np
		}
		if res, err := w.run(ctx, s); res != nil || err != nil {
			return res, err
		}
	}
	return nil, &NotPlacedError{Reason: ConflictsExhausted, Roots: s.roots, Steps: s.steps, Attempts: w.attempts}
}

// notPlaced is the answer for a selection that left nothing to write (a
// refusal, no candidate, all filtered), or nil.
func (c *Claimer) notPlaced(ctx context.Context, p *Params, s *selection) *NotPlacedError {
	var refused *scheduler.RefusedError
	if errors.As(s.rankErr, &refused) {
		np := &NotPlacedError{Reason: Refused, Roots: s.roots, Steps: s.steps, Refusal: refused.Reason}
		if s.ranking != nil {
			np.ScriptletLog = s.ranking.Log
		}
		return np
	}
	if len(s.ranking.Ranked) > 0 {
		return nil
	}
	np := &NotPlacedError{Reason: AllFiltered, Roots: s.roots, Steps: s.steps, ScriptletLog: s.ranking.Log}
	if s.found == 0 {
		np.Reason = NoCandidates
	}
	c.explainCapacity(ctx, p, np.Steps)
	return np
}

// writer is a claim's write loop, whose attempts and failed roots carry
// over from the sample to the full set.
type writer struct {
	c           *Claimer
	p           *Params
	tr          *claimTrace
	max         int
	attempts    int
	failedRoots []string
}

// run writes s's candidates in turn, each picked by pick, until one is
// written, a write fails for a reason another candidate cannot cure, the
// candidates run out or the attempts do; the last two return nil, nil.
func (w *writer) run(ctx context.Context, s *selection) (*Result, error) {
	p, ranked := w.p, s.ranking.Ranked
	tried := make([]bool, len(ranked))
	for w.attempts < w.max {
		// A root whose write failed is hot or stale in the snapshot; its
		// other candidates are likely to fail too. (Only the anchor root
		// counts: a sharing provider is common to many candidates.)
		i := w.c.pick(ranked, tried, w.failedRoots)
		if i < 0 {
			return nil, nil
		}
		tried[i] = true
		cand := ranked[i].Cand
		w.attempts++
		cw := ledger.ClaimWriteParams{Consumers: append([]ledger.ConsumerAllocations{{
			ConsumerUUID:    p.ConsumerUUID,
			ProjectID:       p.ProjectID,
			UserID:          p.UserID,
			ConsumerType:    p.ConsumerType,
			CheckGeneration: true,
			Generation:      p.ConsumerGeneration,
			Allocations:     CandidateAllocations(cand),
			Name:            p.Name,
			Properties:      p.Properties,
			CopyStickyKeys:  true,
		}}, p.with...), Move: p.move}
		start := time.Now()
		err := w.c.store.ClaimWrite(ctx, cw)
		w.tr.write(start, cand.Root(), err)
		if err == nil {
			return w.c.result(p, s, i, w.attempts, w.failedRoots), nil
		}
		if !retryable(err) {
			return nil, err
		}
		w.c.log.DebugContext(ctx, "claim attempt conflicted", "consumer", p.ConsumerUUID, "root", cand.Root(), "error", err)
		w.failedRoots = append(w.failedRoots, cand.Root())
	}
	return nil, nil
}

// pick returns the index in ranked of the next candidate to write, or -1
// if none is left: at random among the best untried candidates on roots
// that have not failed, the first Config.SubsetSize of them or, with a
// subset size of 1, those whose score ties the best one's; with 0, the
// best one. Claims
// ranking the same snapshot at the same time so spread over equally good
// providers instead of queueing on one provider's row lock.
func (c *Claimer) pick(ranked []scheduler.Scored, tried []bool, failedRoots []string) int {
	first, n := -1, 0
	chosen := -1
	for i, sc := range ranked {
		if tried[i] || slices.Contains(failedRoots, sc.Cand.Root()) {
			continue
		}
		if first < 0 {
			first = i
			if c.cfg.SubsetSize <= 0 {
				return i
			}
		} else if c.cfg.SubsetSize > 1 && n >= c.cfg.SubsetSize {
			break
		} else if c.cfg.SubsetSize <= 1 && !tie(ranked[first].Score, sc.Score) {
			break
		}
		// Reservoir sampling: each of the n+1 seen so far is kept with
		// probability 1/(n+1).
		n++
		if rand.IntN(n) == 0 {
			chosen = i
		}
	}
	return chosen
}

// tie reports whether two scores are equal up to rounding.
func tie(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}

// explainCapacity fills the capacity step's reasons (steps[0]), which
// cost a second pass over the snapshot: only for claims that placed
// nothing and dry runs. A failure to explain is logged, not returned.
func (c *Claimer) explainCapacity(ctx context.Context, p *Params, steps []Step) {
	cp := p.Candidates
	cp.Limit, cp.Max, cp.Randomize = 0, c.cfg.MaxCandidates, false
	sf, err := c.store.CandidatesShortfall(ctx, cp)
	if err != nil {
		c.log.WarnContext(ctx, "claims: explaining the capacity step", "error", err)
		return
	}
	steps[0].Reasons = sf.Reasons
}

// result builds the answer for the candidate ranked at chosen; the
// alternates are the best candidates on other roots, not on failed ones.
func (c *Claimer) result(p *Params, s *selection, chosen, attempts int, failed []string) *Result {
	ranked := s.ranking.Ranked
	best := s.option(ranked[chosen])
	gen := int64(1)
	if p.ConsumerGeneration != nil {
		gen = *p.ConsumerGeneration + 1
	}
	r := &Result{
		ConsumerUUID:       p.ConsumerUUID,
		ConsumerGeneration: gen,
		Allocations:        best.Allocations,
		Mappings:           best.Mappings,
		Root:               best.Root,
		RootName:           best.RootName,
		Score:              best.Score,
		Attempts:           attempts,
		DryRun:             p.DryRun,
		Steps:              s.steps,
		Alternates:         []Option{},
	}
	seen := append([]string{best.Root}, failed...)
	for _, sc := range ranked {
		if len(r.Alternates) >= p.Alternates {
			break
		}
		if slices.Contains(seen, sc.Cand.Root()) {
			continue
		}
		seen = append(seen, sc.Cand.Root())
		r.Alternates = append(r.Alternates, s.option(sc))
	}
	if p.DryRun {
		r.Ranking = make([]Option, len(ranked))
		for i, sc := range ranked {
			r.Ranking[i] = s.option(sc)
		}
		r.ScriptletLog = append([]LogLine{}, s.ranking.Log...)
	}
	for i := range p.with {
		if p.with[i].ConsumerType == MigrationConsumerType {
			m := p.with[i]
			r.Migration = &m
		}
	}
	return r
}

// option is the answer's view of a ranked candidate of s.
func (s *selection) option(sc scheduler.Scored) Option {
	o := Option{Root: sc.Cand.Root(), Score: sc.Score, Weights: sc.Weights(),
		Allocations: CandidateAllocations(sc.Cand), Mappings: mappings(&s.reqs[sc.Cand.Index])}
	if prov := sc.Cand.Providers[o.Root]; prov != nil {
		o.RootName = prov.Name
	}
	return o
}

// retryable reports whether a refused write may succeed on another
// candidate: capacity gone (ErrConflict other than a consumer generation
// conflict) or a provider that no longer exists (ErrInvalid).
func retryable(err error) bool {
	var le *ledger.Error
	if !errors.As(err, &le) {
		return false
	}
	switch {
	case errors.Is(le, ledger.ErrConflict):
		return le.Code != ledger.CodeConcurrentUpdate
	case errors.Is(le, ledger.ErrInvalid):
		return true
	}
	return false
}

// CandidateAllocations is a candidate's allocations as a ledger write,
// classes in name order.
func CandidateAllocations(c *scheduler.Candidate) []ledger.ProviderResources {
	out := make([]ledger.ProviderResources, 0, len(c.Allocations))
	for _, a := range c.Allocations {
		pr := ledger.ProviderResources{ProviderUUID: a.ProviderUUID}
		for class, amount := range a.Resources {
			pr.Resources = append(pr.Resources, ledger.Resource{Class: class, Amount: amount})
		}
		slices.SortFunc(pr.Resources, func(x, y ledger.Resource) int { return strings.Compare(x.Class, y.Class) })
		out = append(out, pr)
	}
	return out
}
