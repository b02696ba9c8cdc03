package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// ScriptletName is the plugin named in errors about the policy's
// scriptlet; DefaultScriptletName is how Ranking.Scriptlet names the
// server's default scriptlet.
const (
	ScriptletName        = "scriptlet"
	DefaultScriptletName = "(default)"
)

// Entry points a scriptlet may define.
const (
	entryPlacement = "instance_placement"
	entryFilter    = "filter"
	entryWeigh     = "weigh"
)

// Program is a compiled scriptlet: Starlark source whose top level has
// run once (under the default step budget) and whose globals are frozen.
// It defines any of
//
//	instance_placement(request, candidate_members)  the policy's scriptlet
//	filter(request, candidate)                      a "starlark:<name>" filter
//	weigh(request, candidate)                       a "starlark:<name>" weigher
//
// A Program is immutable and safe for concurrent use; every run gets its
// own thread, budget and deadline.
type Program struct {
	name      string
	src       []byte
	placement *starlark.Function
	filter    *starlark.Function
	weigh     *starlark.Function
}

// CompileScriptlet compiles src and runs its top level. Errors are a
// *CompileError with the line and column: syntax errors, undefined names,
// a failing top level, an entry point that is not a function of two
// parameters, or none of the entry points defined.
func CompileScriptlet(name string, src []byte) (*Program, error) {
	isPredeclared := func(n string) bool { _, ok := builtins[n]; return ok }
	_, prog, err := starlark.SourceProgramOptions(&syntax.FileOptions{}, name, src, isPredeclared)
	if err != nil {
		return nil, compileError(err)
	}
	th := &starlark.Thread{Name: "scriptlet:" + name + ":load", Print: func(*starlark.Thread, string) {}}
	th.SetMaxExecutionSteps(DefaultScriptletSteps)
	timer := time.AfterFunc(DefaultScriptletTimeout, func() { th.Cancel("deadline exceeded") })
	globals, err := prog.Init(th, builtins)
	timer.Stop()
	if err != nil {
		return nil, compileError(err)
	}
	globals.Freeze()
	p := &Program{name: name, src: append([]byte(nil), src...)}
	for entry, dst := range map[string]**starlark.Function{entryPlacement: &p.placement, entryFilter: &p.filter, entryWeigh: &p.weigh} {
		v, ok := globals[entry]
		if !ok {
			continue
		}
		fn, ok := v.(*starlark.Function)
		if !ok || fn.NumParams() != 2 {
			line, col := 0, 0
			if ok {
				line, col = int(fn.Position().Line), int(fn.Position().Col)
			}
			return nil, &CompileError{Line: line, Col: col, Msg: entry + " must be a function of two parameters"}
		}
		*dst = fn
	}
	if p.placement == nil && p.filter == nil && p.weigh == nil {
		return nil, &CompileError{Line: 1, Col: 1, Msg: "defines none of instance_placement(request, candidate_members), " +
			"filter(request, candidate), weigh(request, candidate)"}
	}
	return p, nil
}

func compileError(err error) *CompileError {
	var se syntax.Error
	var rl resolve.ErrorList
	var ee *starlark.EvalError
	switch {
	case errors.As(err, &se):
		return &CompileError{Line: int(se.Pos.Line), Col: int(se.Pos.Col), Msg: se.Msg}
	case errors.As(err, &rl):
		return &CompileError{Line: int(rl[0].Pos.Line), Col: int(rl[0].Pos.Col), Msg: rl[0].Msg}
	case errors.As(err, &ee):
		line, col := evalPos(ee)
		return &CompileError{Line: line, Col: col, Msg: ee.Msg}
	}
	return &CompileError{Msg: err.Error()}
}

// evalPos is the innermost Starlark (not builtin) position of ee.
func evalPos(ee *starlark.EvalError) (int, int) {
	for i := range ee.CallStack {
		if pos := ee.CallStack.At(i).Pos; pos.Line > 0 {
			return int(pos.Line), int(pos.Col)
		}
	}
	return 0, 0
}

// Name is the name the program was compiled under.
func (p *Program) Name() string { return p.name }

// Source is the program's source.
func (p *Program) Source() []byte { return p.src }

// HasPlacement, HasFilter and HasWeigh report which entry points the
// program defines.
func (p *Program) HasPlacement() bool { return p.placement != nil }
func (p *Program) HasFilter() bool    { return p.filter != nil }
func (p *Program) HasWeigh() bool     { return p.weigh != nil }

// StaticScriptlets is a ScriptletResolver over a fixed set of programs,
// for tests and file-configured servers.
type StaticScriptlets struct {
	Default *Program
	Named   map[string]*Program
}

var _ ScriptletResolver = StaticScriptlets{}

// Scriptlet implements ScriptletResolver.
func (s StaticScriptlets) Scriptlet(name string) (*Program, bool) {
	p, ok := s.Named[name]
	return p, ok
}

// DefaultScriptlet implements ScriptletResolver.
func (s StaticScriptlets) DefaultScriptlet() *Program { return s.Default }

// ScriptletMetrics counts scriptlet runs; one value may be shared by
// every policy (ScriptletLimits.Metrics). The counters are safe to read
// at any time; OnRun, when set, is called after every run (it must be
// safe for concurrent use and quick).
type ScriptletMetrics struct {
	Runs          atomic.Uint64
	Refused       atomic.Uint64 // returned a value or called fail()
	Errors        atomic.Uint64 // runtime errors
	StepLimit     atomic.Uint64
	DeadlineLimit atomic.Uint64
	Steps         atomic.Uint64
	Nanoseconds   atomic.Uint64
	OnRun         func(ScriptletRunStats)
}

// ScriptletRunStats describes one run. Outcome is "ok", "refused",
// "error", "limit_steps" or "limit_deadline".
type ScriptletRunStats struct {
	Scriptlet string
	Entry     string
	Outcome   string
	Steps     uint64
	Duration  time.Duration
}

func (m *ScriptletMetrics) observe(s ScriptletRunStats) {
	if m == nil {
		return
	}
	m.Runs.Add(1)
	m.Steps.Add(s.Steps)
	m.Nanoseconds.Add(uint64(s.Duration))
	switch s.Outcome {
	case "refused":
		m.Refused.Add(1)
	case "error":
		m.Errors.Add(1)
	case "limit_steps":
		m.StepLimit.Add(1)
	case "limit_deadline":
		m.DeadlineLimit.Add(1)
	}
	if m.OnRun != nil {
		m.OnRun(s)
	}
}

// count records a limit hit outside a run (the deadline passing between
// calls).
func (m *ScriptletMetrics) count(lim *ScriptletLimitError) {
	if m == nil {
		return
	}
	if lim.Limit == LimitSteps {
		m.StepLimit.Add(1)
	} else {
		m.DeadlineLimit.Add(1)
	}
}

// failError is what fail(message) raises.
type failError struct{ msg string }

func (e *failError) Error() string { return e.msg }

// scriptRunKey keys the Rank's *scriptRun in Request.prepared.
type scriptRunKey struct{}

// scriptRun is the scriptlet state of one Rank: where log lines go, the
// limits, and the Starlark values built so far (built once per Rank).
type scriptRun struct {
	policy  *Policy
	ranking *Ranking
	limits  ScriptletLimits
	request starlark.Value
	members map[*Candidate]*memberValue
}

func runOf(req *Request) *scriptRun {
	run, _ := req.Prepared(scriptRunKey{}).(*scriptRun)
	return run
}

// callState is what builtins see of one call, through the thread.
type callState struct {
	ctx    context.Context
	run    *scriptRun
	req    *Request
	ranked []Scored // instance_placement only: the candidates
	target *Candidate
}

const threadStateKey = "berth.call"

// call runs fn(args...) of prog on a fresh thread with the step budget,
// cancelled when ctx ends, and classifies its error: a *failError (from
// fail, or from check, which judges the returned value), a
// *ScriptletLimitError, a *ScriptletError, or ctx's error when the
// caller's context ended. Every run is counted in the metrics.
func (run *scriptRun) call(ctx context.Context, prog *Program, entry string, fn *starlark.Function, st *callState,
	check func(starlark.Value) error, args ...starlark.Value) (starlark.Value, error) {
	name := prog.name
	th := &starlark.Thread{Name: "scriptlet:" + name + ":" + entry,
		Print: func(_ *starlark.Thread, msg string) { run.log("info", msg) }}
	th.SetMaxExecutionSteps(run.limits.MaxSteps)
	th.SetLocal(threadStateKey, st)
	start := time.Now()
	var v starlark.Value
	var err error
	if err = ctx.Err(); err == nil {
		stop := context.AfterFunc(ctx, func() { th.Cancel("deadline exceeded") })
		v, err = starlark.Call(th, fn, args, nil)
		stop()
		if err == nil && check != nil {
			err = check(v)
		}
	}
	stats := ScriptletRunStats{Scriptlet: name, Entry: entry, Outcome: "ok", Steps: th.ExecutionSteps(), Duration: time.Since(start)}
	defer func() { run.limits.Metrics.observe(stats) }()
	if err == nil {
		return v, nil
	}
	var fe *failError
	switch {
	case errors.As(err, &fe):
		stats.Outcome = "refused"
		return nil, fe
	case context.Cause(ctx) == errScriptletDeadline:
		stats.Outcome = "limit_deadline"
		return nil, &ScriptletLimitError{Scriptlet: name, Limit: LimitDeadline, Steps: stats.Steps}
	case ctx.Err() != nil:
		stats.Outcome = "error"
		return nil, ctx.Err()
	case stats.Steps >= run.limits.MaxSteps:
		stats.Outcome = "limit_steps"
		return nil, &ScriptletLimitError{Scriptlet: name, Limit: LimitSteps, Steps: stats.Steps}
	}
	stats.Outcome = "error"
	se := &ScriptletError{Scriptlet: name, Msg: err.Error()}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		se.Line, se.Col = evalPos(ee)
		se.Msg, se.Backtrace = ee.Msg, ee.Backtrace()
	}
	return nil, se
}

// refusal turns a run's error into Rank's: a *RefusedError (logged in the
// ranking) for everything the scriptlet caused, err itself otherwise.
func (run *scriptRun) refusal(err error) error {
	var fe *failError
	var lim *ScriptletLimitError
	var se *ScriptletError
	switch {
	case errors.As(err, &fe):
		return &RefusedError{Reason: fe.msg}
	case errors.As(err, &lim):
		run.log("error", lim.Error())
		return &RefusedError{Reason: lim.Error(), Err: lim}
	case errors.As(err, &se):
		run.log("error", se.Error())
		return &RefusedError{Reason: se.Error(), Err: se}
	}
	return err
}

func (run *scriptRun) log(level, msg string) {
	run.ranking.Log = append(run.ranking.Log, LogLine{Level: level, Message: msg})
}

// placement runs prog's instance_placement over the ranking and applies
// its decision to it.
func (run *scriptRun) placement(ctx context.Context, prog *Program, req *Request) error {
	r := run.ranking
	if run.members == nil {
		run.members = make(map[*Candidate]*memberValue, len(r.Ranked))
	}
	list := make([]starlark.Value, len(r.Ranked))
	for i, s := range r.Ranked {
		list[i] = run.member(s.Cand).setRank(i, s)
	}
	members := starlark.NewList(list)
	members.Freeze()
	st := &callState{ctx: ctx, run: run, req: req, ranked: r.Ranked}
	refuseOnValue := func(v starlark.Value) error {
		if v == starlark.None {
			return nil
		}
		if s, ok := starlark.AsString(v); ok {
			return &failError{s}
		}
		return &failError{v.String()}
	}
	_, err := run.call(ctx, prog, entryPlacement, prog.placement, st, refuseOnValue, run.requestValue(req), members)
	if err != nil {
		return run.refusal(err)
	}
	if st.target != nil {
		out := make([]Scored, 0, len(r.Ranked))
		var first Scored
		for _, s := range r.Ranked {
			if s.Cand == st.target {
				first = s
			} else {
				out = append(out, s)
			}
		}
		r.Ranked = append([]Scored{first}, out...)
		r.Target, r.Chosen = st.target.Root(), true
	}
	return nil
}

func (run *scriptRun) requestValue(req *Request) starlark.Value {
	if run.request == nil {
		run.request = requestValue(req)
	}
	return run.request
}

// member is the candidate as a candidate member, made once per Rank so
// the attributes a filter read are not built again for weigh or
// instance_placement.
func (run *scriptRun) member(c *Candidate) *memberValue {
	if run.members == nil {
		run.members = map[*Candidate]*memberValue{}
	}
	m, ok := run.members[c]
	if !ok {
		m = candidateMember(c)
		run.members[c] = m
	}
	return m
}
