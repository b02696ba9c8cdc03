package scheduler

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/berthd/berth/internal/jsonerror"
	"github.com/berthd/berth/internal/telemetry/instrument"
)

// PolicyConfig is a scheduling policy: which filters and weighers run,
// with their parameters and factors, an optional balancer and an
// optional scriptlet.
//
//	{"filters":  [{"name": "required_traits", "params": {"traits": ["CUSTOM_GOLD"]}},
//	              {"name": "anti_affinity", "params": {"key": "group"}}],
//	 "weighers": [{"name": "spread", "factor": 2, "params": {"class": "MEMORY_MB"}},
//	              {"name": "starlark:prefer-rack-a"}],
//	 "balancer": {"mode": "even", "high": 0.8, "low": 0.2},
//	 "scriptlet": "placement"}
type PolicyConfig struct {
	Filters  []PluginConfig  `json:"filters"`
	Weighers []PluginConfig  `json:"weighers"`
	Balancer *BalancerConfig `json:"balancer"`
	// Scriptlet names the stored scriptlet whose instance_placement runs
	// after ranking; "" means the server's default scriptlet (the config
	// key instances.placement.scriptlet), if any.
	Scriptlet string `json:"scriptlet"`
}

// PluginConfig names one unit and its parameters.
type PluginConfig struct {
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params,omitempty"`
	// Factor multiplies a weigher's normalised score; default 1; may be
	// negative to invert a weigher. Not allowed on filters.
	Factor *float64 `json:"factor,omitempty"`
}

// DefaultPolicyConfig is the policy of a server with none configured: the
// capacity filter, and spread by free capacity (the mean fraction of
// capacity left free over the classes a candidate takes).
func DefaultPolicyConfig() PolicyConfig {
	return PolicyConfig{
		Filters:  []PluginConfig{{Name: CapacityName}},
		Weighers: []PluginConfig{{Name: SpreadName}},
	}
}

// ParsePolicyConfig decodes a policy strictly: unknown fields are errors.
func ParsePolicyConfig(data []byte) (PolicyConfig, error) {
	var cfg PolicyConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("scheduler policy: %s", jsonerror.Message(err))
	}
	return cfg, nil
}

// weighted is a weigher with its factor.
type weighted struct {
	w      Weigher
	factor float64
}

// filterEntry is a filter with its cost.
type filterEntry struct {
	f    Filter
	cost int
}

// Policy is a built policy: filters in cost order, weighers with
// factors, the scriptlet's name. It is safe for concurrent use.
type Policy struct {
	cfg      PolicyConfig
	filters  []filterEntry
	weighers []weighted
	scripts  Scriptlets
	needs    Needs
	// implicitPin and implicitExclude enforce Request.Target and
	// Request.Avoid when the policy does not list those units (a listed
	// one reads them itself); nil when listed.
	implicitPin, implicitExclude Filter
	// keys ranks by Request.Keys (factor 1) when the policy does not list
	// affinity_keys: a claim that carries keys expects them to count.
	keys Weigher
	// weigherNames are the names of weighers, in order, shared by the
	// Scored of RankDirect's rankings.
	weigherNames []string
}

// NewPolicy builds the units cfg names from reg (nil: DefaultRegistry).
// The capacity filter is always on: it is added when cfg does not list
// it. Filters are ordered by cost, cheapest first, keeping cfg's order
// among equals. Units named "starlark:<scriptlet>" are built by scripts,
// and the scriptlets they name, like the policy's scriptlet, are looked
// up when Rank runs; scripts may be nil only when cfg uses neither (and
// then no default scriptlet runs).
func NewPolicy(cfg PolicyConfig, reg *Registry, scripts Scriptlets) (*Policy, error) {
	if reg == nil {
		reg = DefaultRegistry()
	}
	p := &Policy{cfg: cfg, scripts: scripts}
	var errs []error
	listed := map[string]bool{}
	for _, fc := range cfg.Filters {
		if fc.Factor != nil {
			errs = append(errs, fmt.Errorf("filter %q: factor only applies to weighers", fc.Name))
		}
		if name, ok := strings.CutPrefix(fc.Name, StarlarkUnitPrefix); ok {
			if scripts == nil {
				continue // refused below
			}
			f, err := scripts.NewFilter(name, fc.Params)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p.filters = append(p.filters, filterEntry{f, costScriptlet})
			p.needs = p.needs.merge(scriptletNeeds)
			continue
		}
		u, ok := reg.Lookup(fc.Name)
		if !ok || u.Info.Kind != KindFilter {
			errs = append(errs, fmt.Errorf("unknown filter %q", fc.Name))
			continue
		}
		f, err := u.NewFilter(fc.Params)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		listed[u.Info.Name] = true
		p.filters = append(p.filters, filterEntry{f, u.Cost})
		p.needs = p.needs.merge(u.Needs)
	}
	if !listed[CapacityName] {
		p.filters = append(p.filters, filterEntry{&Capacity{}, capacityUnit.Cost})
	}
	if !listed[PinName] {
		p.implicitPin = &Pin{}
	}
	if !listed[ExcludeName] {
		p.implicitExclude = &Exclude{}
	}
	slices.SortStableFunc(p.filters, func(a, b filterEntry) int { return cmp.Compare(a.cost, b.cost) })

	for _, wc := range cfg.Weighers {
		factor := 1.0
		if wc.Factor != nil {
			factor = *wc.Factor
		}
		if math.IsNaN(factor) || math.IsInf(factor, 0) {
			errs = append(errs, fmt.Errorf("weigher %q: factor must be finite", wc.Name))
		}
		if name, ok := strings.CutPrefix(wc.Name, StarlarkUnitPrefix); ok {
			if scripts == nil {
				continue // refused below
			}
			w, err := scripts.NewWeigher(name, wc.Params)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p.weighers = append(p.weighers, weighted{w, factor})
			p.needs = p.needs.merge(scriptletNeeds)
			continue
		}
		u, ok := reg.Lookup(wc.Name)
		if !ok || u.Info.Kind != KindWeigher {
			errs = append(errs, fmt.Errorf("unknown weigher %q", wc.Name))
			continue
		}
		w, err := u.NewWeigher(wc.Params)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.weighers = append(p.weighers, weighted{w, factor})
		p.needs = p.needs.merge(u.Needs)
	}
	if !slices.ContainsFunc(p.weighers, func(w weighted) bool { return w.w.Name() == AffinityKeysName }) {
		p.keys = &AffinityKeys{Rounds: 10, Start: 80, End: -10}
	}
	if cfg.Balancer != nil {
		if err := cfg.Balancer.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if scripts == nil && len(p.Scriptlets()) > 0 {
		errs = append(errs, errors.New("scriptlets named but no scriptlet store"))
	}
	if cfg.Scriptlet != "" {
		p.needs = p.needs.merge(scriptletNeeds)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scheduler policy: %w", err)
	}
	p.weigherNames = weigherNames(p.weighers)
	return p, nil
}

// Config returns the configuration the policy was built from.
func (p *Policy) Config() PolicyConfig { return p.cfg }

// Scriptlets lists the stored scriptlets the policy names (its scriptlet
// and its starlark: units), so a store can refuse to delete one in use.
func (p *Policy) Scriptlets() []string {
	var names []string
	if p.cfg.Scriptlet != "" {
		names = append(names, p.cfg.Scriptlet)
	}
	for _, units := range [2][]PluginConfig{p.cfg.Filters, p.cfg.Weighers} {
		for _, u := range units {
			if n, ok := strings.CutPrefix(u.Name, StarlarkUnitPrefix); ok && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// Needs reports which costly provider fields and CloudData calls the
// policy's units read, so the caller fetches only those. A policy that
// may run a scriptlet needs placement keys (candidate_members shows them).
func (p *Policy) Needs() Needs {
	if p.cfg.Scriptlet == "" && p.scripts != nil && p.scripts.HasDefault() {
		return p.needs.merge(scriptletNeeds) // the default scriptlet, set now
	}
	return p.needs
}

// NeedsFor is Needs for one request: a claim carrying placement keys
// under a policy without affinity_keys is ranked by an implicit
// affinity_keys weigher (factor 1), which reads keys, state and the
// consumer's sticky keys.
func (p *Policy) NeedsFor(req *Request) Needs {
	if p.keys != nil && len(req.Keys) > 0 {
		return p.Needs().merge(affinityKeysUnit.Needs)
	}
	return p.Needs()
}

// Describe lists the policy's filters in the order they run and its
// weighers' factors by name.
func (p *Policy) Describe() (filters []string, weighers map[string]float64) {
	weighers = map[string]float64{}
	for _, f := range p.filters {
		filters = append(filters, f.f.Name())
	}
	for _, w := range p.weighers {
		weighers[w.w.Name()] += w.factor
	}
	return filters, weighers
}

// Ranking is the outcome of Policy.Rank.
type Ranking struct {
	// Considered is how many candidates were handed in.
	Considered int
	// Ranked are the candidates that passed every filter, best first:
	// by score, then by Candidate.Index. When the scriptlet chose a
	// target, that candidate comes first and the rest keep their order.
	Ranked []Scored
	// Rejections has one entry per filter that ran, in the order they
	// ran, with how many candidates it removed and why, and how many
	// remained after it.
	Rejections []Rejection
	// Scriptlet is the name of the scriptlet whose instance_placement ran
	// ("" for none; "(default)" for the server's default scriptlet).
	Scriptlet string
	// Target is the root provider uuid the scriptlet chose with
	// set_target, "" when it did not.
	Target string
	// Chosen reports whether the scriptlet chose (Target is set).
	Chosen bool
	// Log is what the scriptlets logged (log_info, log_warn, log_error),
	// and an error line when a scriptlet failed or exceeded a limit.
	Log []LogLine
}

// Scored is a candidate with its score.
type Scored struct {
	Cand *Candidate
	// Score is the sum of the weighers' contributions (Weights).
	Score float64
	// names are the weighers of the Rank, in the order they ran (shared
	// by every Scored of a Ranking); contribs their contributions to
	// Score. Kept as slices, not as a map per candidate: a claim ranks a
	// hundred candidates and answers with two or three.
	names    []string
	contribs []float64
}

// Weights is each weigher's contribution to Score, factor * normalised
// raw value, by weigher name (summed when two weighers share a name).
// It is a new map on every call.
func (s *Scored) Weights() map[string]float64 {
	m := make(map[string]float64, len(s.names))
	for i, name := range s.names {
		m[name] += s.contribs[i]
	}
	return m
}

// Rejection is what one filter removed.
type Rejection struct {
	Unit string
	// Removed is how many candidates the filter removed; Remaining how
	// many were left after it.
	Removed   int
	Remaining int
	// Reasons counts removals by reason.
	Reasons map[string]int
}

// LogLine is one line a scriptlet logged. Level is "info", "warn" or
// "error".
type LogLine struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Rank filters, scores and orders cands for req, then runs the
// scriptlet's instance_placement over the ranked candidates. It returns
// a *RefusedError (with the ranking so far) when a scriptlet refused the
// request, failed or exceeded a limit; a *PluginError when a built-in
// unit failed (CloudData unreachable). ctx bounds the work; scriptlets
// also share one deadline (scriptlet.Limits.Timeout) per Rank. Rank does
// not change req or cands.
//
// It runs in stages, as the Kubernetes scheduler keeps PreFilter,
// Filter, Score and Reserve apart: prepare (the units this request runs,
// and what they look up once), filter, weigh (raw values, normalised,
// times factors) and place (the order, then the scriptlet's choice).
func (p *Policy) Rank(ctx context.Context, req *Request, cands []*Candidate) (_ *Ranking, err error) {
	rq := *req
	rq.prepared, rq.scripts = map[any]any{}, nil
	req = &rq
	r := &Ranking{Considered: len(cands)}
	ctx, span := startRank(ctx, len(cands))
	defer func() { endRank(span, r, err) }()

	if err := p.startScripts(ctx, req, cands, r); err != nil {
		return nil, err
	}
	if req.scripts != nil {
		defer req.scripts.End()
	}
	filters, weighers, err := p.prepare(ctx, req)
	if err != nil {
		return r, err
	}
	passed, err := p.filter(ctx, req, filters, cands, r)
	if err != nil {
		return r, err
	}
	scored, err := p.weigh(ctx, req, weighers, passed)
	if err != nil {
		return r, err
	}
	return r, p.place(ctx, req, scored, r)
}

// startScripts starts the scriptlet work of one Rank (Scriptlets.Start),
// reachable from req (Request.ScriptletRun), when the policy has a
// scriptlet runtime. The caller ends the run when the Rank is over.
func (p *Policy) startScripts(ctx context.Context, req *Request, cands []*Candidate, r *Ranking) error {
	if p.scripts == nil {
		return nil
	}
	run, err := p.scripts.Start(ctx, p, req, cands, r)
	if err != nil {
		return &PluginError{Plugin: ScriptletName, Err: err}
	}
	req.scripts = run
	return nil
}

// prepare is Rank's first stage. It returns the units that run for req,
// in the order they run: the implicit pin and exclude filters first when
// req has a target or candidates to avoid, then the policy's filters;
// the policy's weighers, then the implicit affinity_keys weigher when
// req has keys. Each unit that is a Preparer looks up what it needs once
// (filters first, then weighers), kept in req for its Filter or Weigh
// calls; its failure is Rank's error.
func (p *Policy) prepare(ctx context.Context, req *Request) ([]Filter, []weighted, error) {
	filters := make([]Filter, 0, len(p.filters)+2)
	if p.implicitPin != nil && req.Target != "" {
		filters = append(filters, p.implicitPin)
	}
	if p.implicitExclude != nil && len(req.Avoid) > 0 {
		filters = append(filters, p.implicitExclude)
	}
	for _, f := range p.filters {
		filters = append(filters, f.f)
	}
	weighers := p.weighers
	if p.keys != nil && len(req.Keys) > 0 {
		weighers = append(slices.Clone(weighers), weighted{p.keys, 1})
	}
	for _, f := range filters {
		if err := prepareUnit(ctx, req, f); err != nil {
			return nil, nil, err
		}
	}
	for _, w := range weighers {
		if err := prepareUnit(ctx, req, w.w); err != nil {
			return nil, nil, err
		}
	}
	return filters, weighers, nil
}

// prepareUnit runs u's Prepare, if it has one, and keeps its value in
// req under u.
func prepareUnit(ctx context.Context, req *Request, u any) error {
	pr, ok := u.(Preparer)
	if !ok {
		return nil
	}
	v, st := pr.Prepare(ctx, req)
	if err := statusError(u, st); err != nil {
		return err
	}
	req.prepared[u] = v
	return nil
}

// filter is Rank's second stage: each filter in turn over the
// candidates the filters before it kept, with one Rejection per filter
// in r (how many it removed, why, how many remain) and a span. It
// returns the candidates every filter kept, in their order in cands; a
// filter's failure, or ctx's end, is Rank's error.
func (p *Policy) filter(ctx context.Context, req *Request, filters []Filter, cands []*Candidate, r *Ranking) ([]*Candidate, error) {
	passed := slices.Clone(cands)
	for _, f := range filters {
		start := time.Now()
		rej := Rejection{Unit: f.Name(), Reasons: map[string]int{}}
		kept := passed[:0]
		for n, c := range passed {
			if n%256 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			st := f.Filter(ctx, req, c)
			if st.IsSuccess() {
				kept = append(kept, c)
				continue
			}
			if !st.IsRejected() {
				return nil, statusError(f, st)
			}
			rej.Removed++
			rej.Reasons[st.Reason()]++
		}
		passed = kept
		rej.Remaining = len(passed)
		r.Rejections = append(r.Rejections, rej)
		stageSpan(ctx, "filter", rej.Unit, start, instrument.AttrRemaining.Int(rej.Remaining))
	}
	return passed, nil
}

// weigh is Rank's third stage: each weigher's raw values over passed
// (nothing from a Starlark weigher whose failure the Rank's scriptlet
// run ignored), which must be finite, normalised to [0, 1] across passed
// and multiplied by the weigher's factor; a candidate's score is the
// sum. It returns passed scored, in their order; a weigher's failure is
// Rank's error.
func (p *Policy) weigh(ctx context.Context, req *Request, weighers []weighted, passed []*Candidate) ([]Scored, error) {
	scored, contribs := newScored(passed, weighers)
	raw := make([]float64, len(passed))
	for k, w := range weighers {
		start := time.Now()
		if err := rawWeights(ctx, req, w.w, passed, raw); err != nil {
			return nil, err
		}
		if req.scripts != nil && req.scripts.Failed(w.w.Name()) {
			clear(raw) // a starlark weigher that failed weighs nothing
		}
		if err := addWeights(contribs, len(weighers), k, w, raw); err != nil {
			return nil, err
		}
		stageSpan(ctx, "weigher", w.w.Name(), start)
	}
	for i := range scored {
		scored[i].Score = score(scored[i].contribs)
	}
	return scored, nil
}

// addWeights sets weigher k of nw (w)'s contribution to each
// candidate's score (contribs: a row of nw per candidate), given its raw
// values (one per candidate, in order), which must be finite: normalised
// across the candidates, times w's factor.
func addWeights(contribs []float64, nw, k int, w weighted, raw []float64) error {
	for _, v := range raw {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &PluginError{Plugin: w.w.Name(), Err: fmt.Errorf("weight %v is not finite", v)}
		}
	}
	// Normalize's values, written where they go.
	if len(raw) == 0 {
		return nil
	}
	lo, hi := slices.Min(raw), slices.Max(raw)
	for i, v := range raw {
		var norm float64
		if hi != lo {
			norm = (v - lo) / (hi - lo)
		}
		contribs[i*nw+k] = w.factor * norm
	}
	return nil
}

// score is a candidate's score: the sum of its weighers' contributions,
// in the weighers' order.
func score(contribs []float64) float64 {
	var s float64
	for _, c := range contribs {
		s += c
	}
	return s
}

// newScored is passed with score 0, each with its row of one
// contribution per weigher, cut from contribs, one array, which it
// returns too.
func newScored(passed []*Candidate, weighers []weighted) (scored []Scored, contribs []float64) {
	scored = make([]Scored, len(passed))
	names := weigherNames(weighers)
	nw := len(weighers)
	contribs = make([]float64, len(passed)*nw)
	for i, c := range passed {
		scored[i] = Scored{Cand: c, names: names, contribs: contribs[i*nw : (i+1)*nw : (i+1)*nw]}
	}
	return scored, contribs
}

// weigherNames are the names of weighers, in order.
func weigherNames(weighers []weighted) []string {
	names := make([]string, len(weighers))
	for k, w := range weighers {
		names[k] = w.w.Name()
	}
	return names
}

// rawWeights writes w's raw value of each of passed into raw (as long
// as passed): in one call for a BatchWeigher, one Weigh per candidate
// otherwise.
func rawWeights(ctx context.Context, req *Request, w Weigher, passed []*Candidate, raw []float64) error {
	if bw, ok := w.(BatchWeigher); ok {
		clear(raw)
		return statusError(w, bw.WeighAll(ctx, req, passed, raw))
	}
	for i, c := range passed {
		v, st := w.Weigh(ctx, req, c)
		if err := statusError(w, st); err != nil {
			return err
		}
		raw[i] = v
	}
	return nil
}

// place is Rank's last stage: r.Ranked is scored in order of score,
// then the scriptlet's instance_placement, if any (r.Scriptlet), sees it
// and may choose a target, which it moves first, or refuse the
// request, which is Rank's error.
func (p *Policy) place(ctx context.Context, req *Request, scored []Scored, r *Ranking) error {
	r.Ranked = sortScored(scored)
	if req.scripts == nil || r.Scriptlet == "" {
		return nil
	}
	start := time.Now()
	err := req.scripts.Place()
	stageSpan(ctx, "scriptlet", r.Scriptlet, start, attribute.Bool("berth.scriptlet.chose", r.Chosen))
	return err
}

// sortScored orders scored by score, highest first, then by
// Candidate.Index, then by position in scored: a total order, so the
// unstable (and much faster than stable) sort gives one answer.
func sortScored(scored []Scored) []Scored {
	order := rankOrder(len(scored), func(i int) float64 { return scored[i].Score },
		func(i int) int { return scored[i].Cand.Index })
	out := make([]Scored, len(scored))
	for k, i := range order {
		out[k] = scored[i]
	}
	return out
}

// rankOrder is the positions 0 to n-1 of candidates in sortScored's
// order, given each one's score and Candidate.Index.
func rankOrder(n int, score func(int) float64, index func(int) int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return rankCompare(i, j, score, index) })
	return order
}

// rankFirst is the first k positions of rankOrder(n, score, index), in
// its order, found without ordering the others: rankCompare is a total
// order, so its k smallest, sorted, are rankOrder's first k, ties and
// all. Its cost grows with n and k, not with n log n.
func rankFirst(n, k int, score func(int) float64, index func(int) int) []int {
	k = max(0, min(k, n))
	first := make([]int, 0, k)
	for i := range n {
		if len(first) == k && (k == 0 || rankCompare(i, first[k-1], score, index) > 0) {
			continue
		}
		at, _ := slices.BinarySearchFunc(first, i, func(f, i int) int { return rankCompare(f, i, score, index) })
		if len(first) < k {
			first = append(first, 0)
		}
		copy(first[at+1:], first[at:len(first)-1])
		first[at] = i
	}
	return first
}

// rankCompare is rankOrder's order: by score, highest first, then by
// Candidate.Index, then by position.
func rankCompare(i, j int, score func(int) float64, index func(int) int) int {
	if c := cmp.Compare(score(j), score(i)); c != 0 {
		return c
	}
	if c := cmp.Compare(index(i), index(j)); c != 0 {
		return c
	}
	return cmp.Compare(i, j)
}

// statusError turns a unit's failed status into Rank's error: a refusal
// for a scriptlet unit's error (it carries a *RefusedError), a
// *PluginError otherwise. nil for success and rejection.
func statusError(u any, st *Status) error {
	if st.IsSuccess() || st.IsRejected() {
		return nil
	}
	var refused *RefusedError
	if errors.As(st.Err, &refused) {
		return refused
	}
	name := fmt.Sprint(u)
	if n, ok := u.(interface{ Name() string }); ok {
		name = n.Name()
	}
	return &PluginError{Plugin: name, Err: statusErr(st)}
}

// Normalize maps raw values linearly onto [0, 1], the smallest to 0 and
// the largest to 1. When all values are equal every result is 0: a
// weigher that cannot tell candidates apart contributes nothing.
func Normalize(raw []float64) []float64 {
	out := make([]float64, len(raw))
	if len(raw) == 0 {
		return out
	}
	lo, hi := slices.Min(raw), slices.Max(raw)
	if hi == lo {
		return out
	}
	for i, v := range raw {
		out[i] = (v - lo) / (hi - lo)
	}
	return out
}

func statusErr(st *Status) error {
	if st.Err != nil {
		return st.Err
	}
	return errors.New(st.Reason())
}
