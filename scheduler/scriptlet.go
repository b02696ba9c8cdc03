package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// ScriptletName is the name the scriptlet's filter and weigher run under,
// and the plugin named in its errors.
const ScriptletName = "scriptlet"

// Scriptlet defaults.
const (
	DefaultScriptSteps   = 1_000_000
	DefaultScriptTimeout = time.Second
	DefaultChooseWindow  = 100
)

// ScriptletConfig bounds the operator's scriptlet.
type ScriptletConfig struct {
	// MaxSteps is the Starlark step budget of one call of filter, weigh
	// or choose (and of loading the script). Default 1,000,000.
	MaxSteps uint64 `json:"max_steps"`
	// Timeout bounds the whole scriptlet work of one request (every call
	// of filter, weigh and choose together). Default 1s.
	Timeout Duration `json:"timeout"`
	// WeighFactor is the factor of the scriptlet's weigh. Default 1.
	WeighFactor float64 `json:"weigh_factor"`
	// ChooseWindow is how many of the best ranked candidates choose sees.
	// Default 100.
	ChooseWindow int `json:"choose_window"`
}

// Duration is a time.Duration written as a Go duration string ("200ms").
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"200ms\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (c *ScriptletConfig) setDefaults() error {
	if c.MaxSteps == 0 {
		c.MaxSteps = DefaultScriptSteps
	}
	if c.Timeout < 0 {
		return errors.New("scriptlet: timeout must be positive")
	}
	if c.Timeout == 0 {
		c.Timeout = Duration(DefaultScriptTimeout)
	}
	if c.WeighFactor == 0 {
		c.WeighFactor = 1
	}
	if c.ChooseWindow < 0 {
		return errors.New("scriptlet: choose_window must be positive")
	}
	if c.ChooseWindow == 0 {
		c.ChooseWindow = DefaultChooseWindow
	}
	return nil
}

// Scriptlet is the operator's Starlark script, loaded once and frozen. It
// may define any of:
//
//	filter(request, candidate) -> None or True to keep the candidate,
//	    False or a reason string to reject it
//	weigh(request, candidate)  -> a number, higher is better (normalised
//	    and multiplied by weigh_factor like any weigher)
//	choose(request, candidates) -> None to keep the ranking, an index into
//	    candidates to try that one first, or a list of indexes to try
//	    exactly those in that order
//
// and may call refuse(reason) in choose to refuse the whole request. Each
// call runs on its own thread with a step budget; the request's scriptlet
// calls together have a deadline. A Scriptlet is safe for concurrent use.
type Scriptlet struct {
	cfg    ScriptletConfig
	log    *slog.Logger
	filter *starlark.Function
	weigh  *starlark.Function
	choose *starlark.Function
}

// refusal is the error refuse() raises.
type refusal struct{ reason string }

func (r *refusal) Error() string { return "refused: " + r.reason }

var refuseBuiltin = starlark.NewBuiltin("refuse", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var reason string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "reason", &reason); err != nil {
		return nil, err
	}
	return nil, &refusal{reason}
})

// NewScriptlet compiles and runs the script's top level (under the step
// budget and timeout) and freezes its globals. log receives print().
func NewScriptlet(filename string, src []byte, cfg ScriptletConfig, log *slog.Logger) (*Scriptlet, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Scriptlet{cfg: cfg, log: log}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.Timeout))
	defer cancel()
	thread, done := s.thread(ctx, "load")
	defer done()
	predeclared := starlark.StringDict{"refuse": refuseBuiltin, "struct": starlark.NewBuiltin("struct", starlarkstruct.Make)}
	globals, err := starlark.ExecFileOptions(&syntax.FileOptions{}, thread, filename, src, predeclared)
	if err != nil {
		return nil, fmt.Errorf("scriptlet %s: %w", filename, err)
	}
	globals.Freeze()
	for name, dst := range map[string]**starlark.Function{"filter": &s.filter, "weigh": &s.weigh, "choose": &s.choose} {
		v, ok := globals[name]
		if !ok {
			continue
		}
		fn, ok := v.(*starlark.Function)
		if !ok || fn.NumParams() != 2 {
			return nil, fmt.Errorf("scriptlet %s: %s must be a function of two parameters", filename, name)
		}
		*dst = fn
	}
	if s.filter == nil && s.weigh == nil && s.choose == nil {
		return nil, fmt.Errorf("scriptlet %s: defines none of filter, weigh, choose", filename)
	}
	return s, nil
}

// thread returns a Starlark thread with the step budget, cancelled when
// ctx is done. Call done when finished with it.
func (s *Scriptlet) thread(ctx context.Context, name string) (*starlark.Thread, func() bool) {
	th := &starlark.Thread{
		Name: "scriptlet:" + name,
		Print: func(_ *starlark.Thread, msg string) {
			s.log.Debug("scriptlet print", "msg", msg)
		},
	}
	th.SetMaxExecutionSteps(s.cfg.MaxSteps)
	return th, context.AfterFunc(ctx, func() { th.Cancel("deadline exceeded") })
}

// call runs fn(args...) with the budget.
func (s *Scriptlet) call(ctx context.Context, fn *starlark.Function, args ...starlark.Value) (starlark.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scriptlet %s: %w", fn.Name(), err)
	}
	th, done := s.thread(ctx, fn.Name())
	defer done()
	v, err := starlark.Call(th, fn, args, nil)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return nil, r
		}
		var ee *starlark.EvalError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%s", ee.Backtrace())
		}
		return nil, err
	}
	return v, nil
}

// withDeadline bounds ctx by the scriptlet timeout. Policy.Rank calls it
// once per request, so all of a request's calls share one deadline.
func (s *Scriptlet) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(s.cfg.Timeout))
}

// scriptFilter adapts the scriptlet's filter to Filter.
type scriptFilter struct{ s *Scriptlet }

var _ Filter = scriptFilter{}

func (f scriptFilter) Name() string { return ScriptletName }

func (f scriptFilter) Filter(ctx context.Context, req *Request, c *Candidate) *Status {
	v, err := f.s.call(ctx, f.s.filter, requestValue(req), candidateValue(c, c.Index, 0, nil))
	var r *refusal
	switch {
	case errors.As(err, &r):
		return Reject(r.reason)
	case err != nil:
		return AsError(err)
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return nil
	case starlark.Bool:
		if v {
			return nil
		}
		return Reject("rejected by scriptlet")
	case starlark.String:
		return Reject(string(v))
	}
	return AsError(fmt.Errorf("filter returned %s; want None, bool or string", v.Type()))
}

// scriptWeigher adapts the scriptlet's weigh to Weigher.
type scriptWeigher struct{ s *Scriptlet }

var _ Weigher = scriptWeigher{}

func (w scriptWeigher) Name() string { return ScriptletName }

func (w scriptWeigher) Weigh(ctx context.Context, req *Request, c *Candidate) (float64, *Status) {
	v, err := w.s.call(ctx, w.s.weigh, requestValue(req), candidateValue(c, c.Index, 0, nil))
	if err != nil {
		return 0, AsError(err)
	}
	f, ok := starlark.AsFloat(v)
	if !ok {
		return 0, AsError(fmt.Errorf("weigh returned %s; want a number", v.Type()))
	}
	return f, nil
}

// choice is what choose returned: first alone, or list.
type choice struct {
	first int
	list  []int
}

// callChoose runs choose over the best ChooseWindow candidates.
func (s *Scriptlet) callChoose(ctx context.Context, req *Request, scored []Scored) (*choice, error) {
	n := min(len(scored), s.cfg.ChooseWindow)
	provs := map[*Provider]starlark.Value{}
	list := make([]starlark.Value, n)
	for i := range n {
		list[i] = candidateValue(scored[i].Cand, i, scored[i].Score, provs)
	}
	cands := starlark.NewList(list)
	cands.Freeze()
	v, err := s.call(ctx, s.choose, requestValue(req), cands)
	var r *refusal
	if errors.As(err, &r) {
		return nil, &RefusedError{Reason: r.reason}
	}
	if err != nil {
		return nil, err
	}
	index := func(x starlark.Value) (int, error) {
		i, err := starlark.AsInt32(x)
		if err != nil || i < 0 || i >= n {
			return 0, fmt.Errorf("choose returned %s; want an index in [0, %d)", x.String(), n)
		}
		return i, nil
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Int:
		i, err := index(v)
		if err != nil {
			return nil, err
		}
		return &choice{first: i}, nil
	case *starlark.List, starlark.Tuple:
		ch := &choice{list: []int{}}
		iter := starlark.Iterate(v)
		defer iter.Done()
		var x starlark.Value
		for iter.Next(&x) {
			i, err := index(x)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(ch.list, i) {
				ch.list = append(ch.list, i)
			}
		}
		return ch, nil
	}
	return nil, fmt.Errorf("choose returned %s; want None, an int or a list of ints", v.Type())
}

// requestValue is req as a frozen struct: consumer_uuid, project_id,
// user_id, consumer_type, resources (dict class -> amount), avoid (tuple).
func requestValue(req *Request) starlark.Value {
	res := starlark.NewDict(len(req.Resources))
	for _, k := range sortedKeys(req.Resources) {
		_ = res.SetKey(starlark.String(k), starlark.MakeInt64(req.Resources[k]))
	}
	avoid := make(starlark.Tuple, len(req.Avoid))
	for i, a := range req.Avoid {
		avoid[i] = starlark.String(a)
	}
	v := starlarkstruct.FromStringDict(starlark.String("request"), starlark.StringDict{
		"consumer_uuid": starlark.String(req.ConsumerUUID),
		"project_id":    starlark.String(req.ProjectID),
		"user_id":       starlark.String(req.UserID),
		"consumer_type": starlark.String(req.ConsumerType),
		"resources":     res,
		"avoid":         avoid,
	})
	v.Freeze()
	return v
}

// candidateValue is c as a frozen struct: index, score, root, roots,
// allocations (dict provider -> dict class -> amount) and providers (dict
// uuid -> struct uuid, parent, root, traits, resources: dict class ->
// struct capacity, used). provs caches provider structs across
// candidates; nil for none.
func candidateValue(c *Candidate, index int, score float64, provs map[*Provider]starlark.Value) starlark.Value {
	allocs := starlark.NewDict(len(c.Allocations))
	for _, a := range c.Allocations {
		res := starlark.NewDict(len(a.Resources))
		for _, k := range sortedKeys(a.Resources) {
			_ = res.SetKey(starlark.String(k), starlark.MakeInt64(a.Resources[k]))
		}
		_ = allocs.SetKey(starlark.String(a.ProviderUUID), res)
	}
	providers := starlark.NewDict(len(c.Providers))
	for _, uuid := range sortedKeys(c.Providers) {
		p := c.Providers[uuid]
		pv, ok := provs[p]
		if !ok {
			pv = providerValue(p)
			if provs != nil {
				provs[p] = pv
			}
		}
		_ = providers.SetKey(starlark.String(uuid), pv)
	}
	roots := make(starlark.Tuple, len(c.Roots))
	for i, r := range c.Roots {
		roots[i] = starlark.String(r)
	}
	v := starlarkstruct.FromStringDict(starlark.String("candidate"), starlark.StringDict{
		"index":       starlark.MakeInt(index),
		"score":       starlark.Float(score),
		"root":        starlark.String(c.Root()),
		"roots":       roots,
		"allocations": allocs,
		"providers":   providers,
	})
	v.Freeze()
	return v
}

func providerValue(p *Provider) starlark.Value {
	res := starlark.NewDict(len(p.Resources))
	for _, k := range sortedKeys(p.Resources) {
		inv := p.Resources[k]
		_ = res.SetKey(starlark.String(k), starlarkstruct.FromStringDict(starlark.String("inventory"), starlark.StringDict{
			"capacity": starlark.MakeInt64(inv.Capacity),
			"used":     starlark.MakeInt64(inv.Used),
		}))
	}
	traits := make(starlark.Tuple, len(p.Traits))
	for i, t := range p.Traits {
		traits[i] = starlark.String(t)
	}
	v := starlarkstruct.FromStringDict(starlark.String("provider"), starlark.StringDict{
		"uuid":      starlark.String(p.UUID),
		"parent":    starlark.String(p.ParentUUID),
		"root":      starlark.String(p.RootUUID),
		"traits":    traits,
		"resources": res,
	})
	v.Freeze()
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
