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
)

// PolicyConfig is the operator's policy file (JSON): which filters and
// weighers run, in order, with their parameters and factors.
//
//	{"filters":  [{"name": "max_usage_ratio", "params": {"max": 0.9}}],
//	 "weighers": [{"name": "pack", "factor": 2}, {"name": "prefer_traits", "params": {"traits": ["CUSTOM_GOLD"]}}],
//	 "scriptlet": {"max_steps": 100000, "timeout": "200ms", "weigh_factor": 1, "choose_window": 50}}
type PolicyConfig struct {
	Filters   []PluginConfig   `json:"filters"`
	Weighers  []PluginConfig   `json:"weighers"`
	Scriptlet *ScriptletConfig `json:"scriptlet"`
}

// PluginConfig names one plugin and its parameters.
type PluginConfig struct {
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params"`
	// Factor multiplies a weigher's normalised score; default 1; may be
	// negative to invert a weigher. Unused for filters.
	Factor *float64 `json:"factor"`
}

// ParsePolicyConfig decodes a policy file strictly: unknown fields are
// errors.
func ParsePolicyConfig(data []byte) (PolicyConfig, error) {
	var cfg PolicyConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("scheduler policy: %w", err)
	}
	return cfg, nil
}

// weighted is a weigher with its factor.
type weighted struct {
	w      Weigher
	factor float64
}

// Policy is a built chain: filters, weighers and an optional scriptlet.
// It is safe for concurrent use.
type Policy struct {
	filters  []Filter
	weighers []weighted
	script   *Scriptlet
	needs    Needs
}

// NewPolicy builds the plugins cfg names from reg. script may be nil; a
// scriptlet's filter runs after the configured filters and its weigh
// function is one more weigher (factor cfg.Scriptlet.WeighFactor).
func NewPolicy(cfg PolicyConfig, reg *Registry, script *Scriptlet) (*Policy, error) {
	if reg == nil {
		reg = DefaultRegistry()
	}
	p := &Policy{script: script}
	var errs []error
	for _, fc := range cfg.Filters {
		mk, ok := reg.Filters[fc.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown filter %q", fc.Name))
			continue
		}
		if fc.Factor != nil {
			errs = append(errs, fmt.Errorf("filter %q: factor only applies to weighers", fc.Name))
		}
		f, err := mk(fc.Params)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.filters = append(p.filters, f)
	}
	for _, wc := range cfg.Weighers {
		mk, ok := reg.Weighers[wc.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown weigher %q", wc.Name))
			continue
		}
		factor := 1.0
		if wc.Factor != nil {
			factor = *wc.Factor
		}
		if math.IsNaN(factor) || math.IsInf(factor, 0) {
			errs = append(errs, fmt.Errorf("weigher %q: factor must be finite", wc.Name))
		}
		w, err := mk(wc.Params)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.weighers = append(p.weighers, weighted{w, factor})
	}
	if script != nil {
		if script.filter != nil {
			p.filters = append(p.filters, scriptFilter{script})
		}
		if script.weigh != nil {
			p.weighers = append(p.weighers, weighted{scriptWeigher{script}, script.cfg.WeighFactor})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scheduler policy: %w", err)
	}
	return p, nil
}

// Needs reports which costly provider fields the policy's units read, so
// the caller fetches only those.
func (p *Policy) Needs() Needs {
	return p.needs
}

// Describe lists the policy's filters and weighers (name and factor), in
// the order they run.
func (p *Policy) Describe() (filters []string, weighers map[string]float64) {
	weighers = map[string]float64{}
	for _, f := range p.filters {
		filters = append(filters, f.Name())
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
	// by score, then by Candidate.Index. When the scriptlet chose, its
	// choice comes first (or only its list, in its order).
	Ranked []Scored
	// Rejections has one entry per filter that ran, in chain order, with
	// how many candidates it removed and why. A candidate is counted by
	// the first filter that rejects it.
	Rejections []FilterCount
	// Chosen is set when the scriptlet's choose changed the order.
	Chosen bool
}

// Scored is a candidate with its score.
type Scored struct {
	Cand *Candidate
	// Score is the sum of Weights.
	Score float64
	// Weights is each weigher's contribution: factor * normalised raw.
	Weights map[string]float64
}

// FilterCount is what one filter rejected.
type FilterCount struct {
	Filter   string
	Rejected int
	// Reasons counts rejections by reason.
	Reasons map[string]int
}

// Rank filters, scores and orders cands for req. It returns a
// *PluginError when a plugin or the scriptlet failed, and a
// *RefusedError (with the ranking so far) when the scriptlet refused the
// request. ctx bounds the work; with a scriptlet, so does the
// scriptlet's timeout, for the whole ranking.
func (p *Policy) Rank(ctx context.Context, req *Request, cands []*Candidate) (*Ranking, error) {
	if p.script != nil {
		var cancel context.CancelFunc
		ctx, cancel = p.script.withDeadline(ctx)
		defer cancel()
	}
	filters := p.filters
	if len(req.Avoid) > 0 {
		filters = append([]Filter{requestAvoid(req)}, filters...)
	}
	r := &Ranking{Considered: len(cands)}
	counts := make([]FilterCount, len(filters))
	for i, f := range filters {
		counts[i] = FilterCount{Filter: f.Name(), Reasons: map[string]int{}}
	}
	var passed []*Candidate
	for n, c := range cands {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ok := true
		for i, f := range filters {
			st := f.Filter(ctx, req, c)
			if st.IsSuccess() {
				continue
			}
			if !st.IsRejected() {
				return nil, &PluginError{Plugin: f.Name(), Err: statusErr(st)}
			}
			counts[i].Rejected++
			counts[i].Reasons[st.Reason()]++
			ok = false
			break
		}
		if ok {
			passed = append(passed, c)
		}
	}
	r.Rejections = counts

	scored := make([]Scored, len(passed))
	for i, c := range passed {
		scored[i] = Scored{Cand: c, Weights: make(map[string]float64, len(p.weighers))}
	}
	raw := make([]float64, len(passed))
	for _, w := range p.weighers {
		for i, c := range passed {
			v, st := w.w.Weigh(ctx, req, c)
			if !st.IsSuccess() {
				return nil, &PluginError{Plugin: w.w.Name(), Err: statusErr(st)}
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, &PluginError{Plugin: w.w.Name(), Err: fmt.Errorf("weight %v is not finite", v)}
			}
			raw[i] = v
		}
		norm := Normalize(raw)
		for i := range scored {
			contrib := w.factor * norm[i]
			scored[i].Weights[w.w.Name()] += contrib
			scored[i].Score += contrib
		}
	}
	slices.SortStableFunc(scored, func(a, b Scored) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Cand.Index, b.Cand.Index)
	})
	r.Ranked = scored

	if p.script != nil && p.script.choose != nil && len(scored) > 0 {
		order, err := p.script.callChoose(ctx, req, scored)
		if err != nil {
			var refused *RefusedError
			if errors.As(err, &refused) {
				return r, refused
			}
			return nil, &PluginError{Plugin: ScriptletName, Err: err}
		}
		if order != nil {
			r.Ranked, r.Chosen = reorder(scored, order), true
		}
	}
	return r, nil
}

// reorder applies a scriptlet's choice: one index moves that candidate to
// the front; a list keeps exactly those candidates, in that order.
func reorder(scored []Scored, ch *choice) []Scored {
	if ch.list == nil {
		out := make([]Scored, 0, len(scored))
		out = append(out, scored[ch.first])
		out = append(out, scored[:ch.first]...)
		return append(out, scored[ch.first+1:]...)
	}
	out := make([]Scored, 0, len(ch.list))
	for _, i := range ch.list {
		out = append(out, scored[i])
	}
	return out
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
