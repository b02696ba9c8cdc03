package scriptlet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.starlark.net/starlark"

	"github.com/berthd/berth/scheduler"
)

// The units named "starlark:<scriptlet>" (scheduler.StarlarkUnitPrefix):
// a stored scriptlet's filter(request, candidate) as a policy's filter,
// its weigh(request, candidate) as a weigher.

// starlarkUnit is the scriptlet behind a starlark: unit, looked up at
// every Rank.
type starlarkUnit struct {
	script string
	rt     *Runtime
}

func newStarlarkUnit(script string, params json.RawMessage, rt *Runtime) (starlarkUnit, error) {
	if script == "" {
		return starlarkUnit{}, errors.New("starlark unit: the scriptlet name is empty")
	}
	if len(params) > 0 && string(params) != "null" && string(params) != "{}" {
		return starlarkUnit{}, fmt.Errorf("%s%s: takes no params", scheduler.StarlarkUnitPrefix, script)
	}
	return starlarkUnit{script: script, rt: rt}, nil
}

func (u starlarkUnit) Name() string { return scheduler.StarlarkUnitPrefix + u.script }

// program resolves the scriptlet and the function entry picks from it.
func (u starlarkUnit) program(entry string, pick func(*Program) *starlark.Function) (*Program, *starlark.Function, error) {
	if u.rt.scripts == nil {
		return nil, nil, errors.New("no scriptlet store")
	}
	prog, ok := u.rt.scripts.Scriptlet(u.script)
	if !ok {
		return nil, nil, fmt.Errorf("scriptlet %q does not exist", u.script)
	}
	fn := pick(prog)
	if fn == nil {
		return nil, nil, fmt.Errorf("scriptlet %q does not define %s(request, candidate)", u.script, entry)
	}
	return prog, fn, nil
}

// starlarkFilter is a scriptlet's filter as a Filter: True keeps the
// candidate; False or None removes it; a string removes it with that
// reason.
type starlarkFilter struct{ starlarkUnit }

var (
	_ scheduler.Filter   = (*starlarkFilter)(nil)
	_ scheduler.Preparer = (*starlarkFilter)(nil)
)

func newStarlarkFilter(script string, params json.RawMessage, rt *Runtime) (*starlarkFilter, error) {
	u, err := newStarlarkUnit(script, params, rt)
	return &starlarkFilter{u}, err
}

// prepared is what Prepare resolved for one Rank.
type preparedScript struct {
	prog *Program
	fn   *starlark.Function
}

// Prepare implements Preparer: the scriptlet is resolved once per Rank.
func (f *starlarkFilter) Prepare(context.Context, *scheduler.Request) (any, *scheduler.Status) {
	prog, fn, err := f.program(entryFilter, func(p *Program) *starlark.Function { return p.filter })
	if err != nil {
		return nil, scheduler.AsError(err)
	}
	return preparedScript{prog, fn}, nil
}

// Filter implements Filter. A call that fails keeps the candidate
// unless the limits say to refuse (Limits.OnError).
func (f *starlarkFilter) Filter(_ context.Context, req *scheduler.Request, c *scheduler.Candidate) *scheduler.Status {
	ps, _ := req.Prepared(f).(preparedScript)
	run := runOf(req)
	if ps.prog == nil || run == nil {
		return scheduler.AsError(errors.New("starlark filter run outside Policy.Rank"))
	}
	st := &callState{run: run, req: req}
	var verdict *scheduler.Status
	check := func(v starlark.Value) error {
		switch v := v.(type) {
		case starlark.Bool:
			if !v {
				verdict = scheduler.Reject("removed by " + f.Name())
			}
			return nil
		case starlark.NoneType:
			verdict = scheduler.Reject("removed by " + f.Name())
			return nil
		case starlark.String:
			verdict = scheduler.Reject(truncate(string(v), maxMessageBytes))
			return nil
		}
		return fmt.Errorf("filter returned %s; want a bool or a reason string", v.Type())
	}
	_, err := run.call(ps.prog, entryFilter, ps.fn, st, check, run.requestValue(req), run.member(c))
	if err != nil {
		if err := unitError(run, f.Name(), err); err != nil {
			return scheduler.AsError(err)
		}
		return nil
	}
	return verdict
}

// unitError is a starlark unit's run error as Rank returns it: a
// refusal for what the scriptlet caused (wrapping a plain error from
// check as a *RunError), nil for a failure Rank goes on without.
func unitError(run *scriptRun, unit string, err error) error {
	var fe *failError
	var lim *LimitError
	var se *RunError
	if errors.As(err, &fe) || errors.As(err, &lim) || errors.As(err, &se) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return run.refusal(unit, err)
	}
	return run.refusal(unit, &RunError{Msg: truncate(err.Error(), maxMessageBytes)})
}

// starlarkWeigher is a scriptlet's weigh as a Weigher: it returns a
// number, higher is better.
type starlarkWeigher struct{ starlarkUnit }

var (
	_ scheduler.Weigher  = (*starlarkWeigher)(nil)
	_ scheduler.Preparer = (*starlarkWeigher)(nil)
)

func newStarlarkWeigher(script string, params json.RawMessage, rt *Runtime) (*starlarkWeigher, error) {
	u, err := newStarlarkUnit(script, params, rt)
	return &starlarkWeigher{u}, err
}

// Prepare implements Preparer.
func (w *starlarkWeigher) Prepare(context.Context, *scheduler.Request) (any, *scheduler.Status) {
	prog, fn, err := w.program(entryWeigh, func(p *Program) *starlark.Function { return p.weigh })
	if err != nil {
		return nil, scheduler.AsError(err)
	}
	return preparedScript{prog, fn}, nil
}

// Weigh implements Weigher. Once a call failed, and the limits say to go
// on (Limits.OnError), the weigher is not called again in this
// Rank, which zeroes what it weighed (Policy.Rank).
func (w *starlarkWeigher) Weigh(_ context.Context, req *scheduler.Request, c *scheduler.Candidate) (float64, *scheduler.Status) {
	ps, _ := req.Prepared(w).(preparedScript)
	run := runOf(req)
	if ps.prog == nil || run == nil {
		return 0, scheduler.AsError(errors.New("starlark weigher run outside Policy.Rank"))
	}
	if run.Failed(w.Name()) {
		return 0, nil
	}
	st := &callState{run: run, req: req}
	var out float64
	check := func(v starlark.Value) error {
		f, err := asNumber(v)
		if err != nil {
			return fmt.Errorf("weigh returned %s; want a number", v.Type())
		}
		out = f
		return nil
	}
	_, err := run.call(ps.prog, entryWeigh, ps.fn, st, check, run.requestValue(req), run.member(c))
	if err != nil {
		if err := unitError(run, w.Name(), err); err != nil {
			return 0, scheduler.AsError(err)
		}
		return 0, nil
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
