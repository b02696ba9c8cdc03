package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	p, err := compileScriptlet(name, src)
	if err != nil {
		err.Scriptlet = name
		return nil, err
	}
	return p, nil
}

// compileScriptlet is CompileScriptlet but for the name in its error.
func compileScriptlet(name string, src []byte) (*Program, *CompileError) {
	f, err := (&syntax.FileOptions{}).Parse(name, src, 0)
	if err != nil {
		return nil, compileError(err)
	}
	if err := rewriteFile(f); err != nil {
		return nil, compileError(err)
	}
	prog, err := starlark.FileProgram(f, isPredeclared)
	if err != nil {
		return nil, compileError(err)
	}
	th := newSandboxThread("scriptlet:"+name+":load", DefaultScriptletSteps, DefaultScriptletMaxAlloc,
		func(*starlark.Thread, string) {}, nil)
	timer := time.AfterFunc(DefaultScriptletTimeout, func() { th.Cancel("deadline exceeded") })
	globals, err := prog.Init(th, predeclared)
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

// predeclared are the names a scriptlet sees: the builtins, and the
// sandbox's hidden ones (which no source can name).
var predeclared = func() starlark.StringDict {
	d := starlark.StringDict{}
	for k, v := range builtins {
		d[k] = v
	}
	for k, v := range hidden {
		d[k] = v
	}
	return d
}()

func isPredeclared(n string) bool { _, ok := predeclared[n]; return ok }

func compileError(err error) *CompileError {
	var re *rewriteError
	if errors.As(err, &re) {
		return &CompileError{Line: int(re.pos.Line), Col: int(re.pos.Col), Msg: re.msg}
	}
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
		return &CompileError{Line: line, Col: col, Msg: truncate(ee.Msg, maxMessageBytes)}
	}
	return &CompileError{Msg: truncate(err.Error(), maxMessageBytes)}
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
// safe for concurrent use and quick); OnFailure, when set, after a run
// that failed or exceeded a limit, at most once a second per scriptlet,
// with how many such runs it was not called for since.
type ScriptletMetrics struct {
	Runs          atomic.Uint64
	Refused       atomic.Uint64 // returned a value or called fail()
	Errors        atomic.Uint64 // runtime errors
	StepLimit     atomic.Uint64
	DeadlineLimit atomic.Uint64
	MemoryLimit   atomic.Uint64
	// Ignored counts the scriptlet failures claims went on without
	// (ScriptletLimits.OnError "ignore"): once per Rank and entry point.
	Ignored     atomic.Uint64
	Steps       atomic.Uint64
	Nanoseconds atomic.Uint64
	OnRun       func(ScriptletRunStats)
	OnFailure   func(s ScriptletRunStats, suppressed uint64)

	mu   sync.Mutex
	last map[string]failureLog
}

// failureLog is when OnFailure last ran for a scriptlet and how many
// failures it skipped since.
type failureLog struct {
	at         time.Time
	suppressed uint64
}

// ScriptletRunStats describes one run. Outcome is "ok", "refused",
// "error", "limit_steps", "limit_deadline" or "limit_memory"; Error the
// failure, for logs.
type ScriptletRunStats struct {
	Scriptlet string
	Entry     string
	Outcome   string
	Steps     uint64
	Duration  time.Duration
	Error     string
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
	case "limit_memory":
		m.MemoryLimit.Add(1)
	}
	if m.OnRun != nil {
		m.OnRun(s)
	}
	if s.Outcome != "ok" && s.Outcome != "refused" && m.OnFailure != nil {
		if ok, suppressed := m.allowLog(s.Scriptlet, time.Now()); ok {
			m.OnFailure(s, suppressed)
		}
	}
}

// failureLogEvery is how often OnFailure runs for one scriptlet.
const failureLogEvery = time.Second

// allowLog reports whether a failure of scriptlet may be logged now and
// how many were not since the last that was.
func (m *ScriptletMetrics) allowLog(scriptlet string, now time.Time) (bool, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]failureLog{}
	}
	l, seen := m.last[scriptlet]
	if seen && now.Sub(l.at) < failureLogEvery {
		l.suppressed++
		m.last[scriptlet] = l
		return false, 0
	}
	if len(m.last) > 1000 { // names come and go: forget them all now and then
		clear(m.last)
	}
	m.last[scriptlet] = failureLog{at: now}
	return true, l.suppressed
}

// count records a limit hit outside a run (the deadline passing between
// calls).
func (m *ScriptletMetrics) count(lim *ScriptletLimitError) {
	if m == nil {
		return
	}
	switch lim.Limit {
	case LimitSteps:
		m.StepLimit.Add(1)
	case LimitMemory:
		m.MemoryLimit.Add(1)
	default:
		m.DeadlineLimit.Add(1)
	}
}

// failError is what fail(message) raises.
type failError struct{ msg string }

func (e *failError) Error() string { return e.msg }

// truncate cuts s to at most n bytes (at a rune boundary), saying so.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [%d bytes cut]", s[:cut], len(s)-cut)
}

// scriptRunKey keys the Rank's *scriptRun in Request.prepared.
type scriptRunKey struct{}

// scriptRun is the scriptlet state of one Rank: where log lines go, the
// limits, the context bounded by the scriptlet deadline, the failures
// ignored so far, and the Starlark values built so far (built once per
// Rank).
type scriptRun struct {
	policy  *Policy
	ranking *Ranking
	limits  ScriptletLimits
	// req and cands are the Rank's request and candidates.
	req   *Request
	cands []*Candidate
	// states are the reported states of the candidates' roots, loaded
	// once when a scriptlet reads a member's status the policy did not
	// fetch states for (stateOf); nil before.
	states map[string]*ProviderState
	// ctx is the Rank's context with the scriptlet deadline; scriptlet
	// calls run under it, built-in units under the Rank's own.
	ctx     context.Context
	request starlark.Value
	members map[*Candidate]*memberValue
	// ignored are the failing units of this Rank (OnErrorIgnore), by
	// unit name.
	ignored map[string]*ignoredFailure
	// logBytes is what the log holds; dropped counts the lines cut,
	// dropLine is the index of the line that says so (-1 before).
	logBytes int
	dropped  int
	dropLine int
}

// ignoredFailure is a unit whose failures this Rank went on without.
type ignoredFailure struct {
	calls   int
	logLine int
	first   string
	what    string
}

func runOf(req *Request) *scriptRun {
	run, _ := req.Prepared(scriptRunKey{}).(*scriptRun)
	return run
}

// callState is what builtins see of one call, through the thread, and
// the call's sandbox. At top level (compiling) only sb is set.
type callState struct {
	sb     sandbox
	ctx    context.Context
	run    *scriptRun
	req    *Request
	ranked []Scored // instance_placement only: the candidates
	target *Candidate
}

const threadStateKey = "berth.call"

// call runs fn(args...) of prog on a fresh thread with the step and
// memory budgets, cancelled when run.ctx ends (the scriptlet deadline or
// the caller's context), and classifies its error: a *failError (from
// fail, or from check, which judges the returned value), a
// *ScriptletLimitError, a *ScriptletError, or ctx's error when the
// caller's context ended. Every run is counted in the metrics; a call
// made after the deadline passed does not run and is not counted.
func (run *scriptRun) call(prog *Program, entry string, fn *starlark.Function, st *callState,
	check func(starlark.Value) error, args ...starlark.Value) (starlark.Value, error) {
	ctx := run.ctx
	name := prog.name
	if err := ctx.Err(); err != nil {
		if context.Cause(ctx) == errScriptletDeadline {
			return nil, &ScriptletLimitError{Scriptlet: name, Limit: LimitDeadline}
		}
		return nil, err
	}
	st.ctx = ctx
	th := newSandboxThread("scriptlet:"+name+":"+entry, run.limits.MaxSteps, run.limits.MaxAlloc,
		func(_ *starlark.Thread, msg string) { run.log("info", msg) }, st)
	start := time.Now()
	stop := context.AfterFunc(ctx, func() { th.Cancel("deadline exceeded") })
	v, err := starlark.Call(th, fn, args, nil)
	stop()
	if err == nil && check != nil {
		err = check(v)
	}
	stats := ScriptletRunStats{Scriptlet: name, Entry: entry, Outcome: "ok", Steps: th.ExecutionSteps(), Duration: time.Since(start)}
	defer func() { run.limits.Metrics.observe(stats) }()
	if err == nil {
		return v, nil
	}
	var fe *failError
	var be *budgetError
	switch {
	case errors.As(err, &fe):
		stats.Outcome = "refused"
		return nil, &failError{truncate(fe.msg, maxMessageBytes)}
	case errors.As(err, &be) && be.limit == LimitMemory:
		stats.Outcome = "limit_memory"
		lim := &ScriptletLimitError{Scriptlet: name, Limit: LimitMemory, Steps: stats.Steps, Detail: truncate(be.msg, maxMessageBytes)}
		stats.Error = lim.Error()
		return nil, lim
	case be != nil || (stats.Steps >= run.limits.MaxSteps && ctx.Err() == nil):
		stats.Outcome = "limit_steps"
		lim := &ScriptletLimitError{Scriptlet: name, Limit: LimitSteps, Steps: stats.Steps}
		if be != nil {
			lim.Detail = truncate(be.msg, maxMessageBytes)
		}
		stats.Error = lim.Error()
		return nil, lim
	case context.Cause(ctx) == errScriptletDeadline:
		stats.Outcome = "limit_deadline"
		lim := &ScriptletLimitError{Scriptlet: name, Limit: LimitDeadline, Steps: stats.Steps}
		stats.Error = lim.Error()
		return nil, lim
	case ctx.Err() != nil:
		stats.Outcome = "error"
		stats.Error = ctx.Err().Error()
		return nil, ctx.Err()
	}
	stats.Outcome = "error"
	se := &ScriptletError{Scriptlet: name, Msg: truncate(err.Error(), maxMessageBytes)}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		se.Line, se.Col = evalPos(ee)
		se.Msg, se.Backtrace = truncate(ee.Msg, maxMessageBytes), truncate(ee.Backtrace(), 4*maxMessageBytes)
	}
	stats.Error = se.Error()
	return nil, se
}

// failure sorts a run's error: refused (fail, or a returned refusal:
// always refuses the claim), failed (a runtime error or a limit: refuses
// the claim only under OnErrorRefuse), or neither (the caller's context
// ended: returned as is).
func failure(err error) (refused *failError, failed error) {
	var fe *failError
	var lim *ScriptletLimitError
	var se *ScriptletError
	switch {
	case errors.As(err, &fe):
		return fe, nil
	case errors.As(err, &lim):
		return nil, lim
	case errors.As(err, &se):
		return nil, se
	}
	return nil, nil
}

// refusal turns a run's error into Rank's: a *RefusedError (logged in the
// ranking) for a refusal, and for a failure under OnErrorRefuse; nil for
// a failure under OnErrorIgnore (logged, counted: the claim goes on
// without the unit, see ignore); err itself otherwise.
func (run *scriptRun) refusal(unit string, err error) error {
	refused, failed := failure(err)
	switch {
	case refused != nil:
		return &RefusedError{Reason: refused.msg}
	case failed == nil:
		return err
	case run.limits.OnError == OnErrorRefuse:
		run.log("error", failed.Error())
		return &RefusedError{Reason: failed.Error(), Err: failed}
	}
	run.ignore(unit, failed)
	return nil
}

// ignore records a failure of unit the Rank goes on without: one log
// line per unit, updated with the count of failed calls, and one count
// in the metrics.
func (run *scriptRun) ignore(unit string, err error) {
	if run.ignored == nil {
		run.ignored = map[string]*ignoredFailure{}
	}
	f, ok := run.ignored[unit]
	if !ok {
		f = &ignoredFailure{first: err.Error(), logLine: -1}
		switch {
		case unit == ScriptletName:
			f.what = "the ranking stands as the policy made it"
		case strings.HasPrefix(unit, StarlarkUnitPrefix) && run.isFilter(unit):
			f.what = "the candidates it failed on were kept"
		default:
			f.what = "it weighs nothing in this claim"
		}
		run.ignored[unit] = f
		if m := run.limits.Metrics; m != nil {
			m.Ignored.Add(1)
		}
	}
	f.calls++
	label := unit
	if unit == ScriptletName {
		label = fmt.Sprintf("scriptlet %q", run.ranking.Scriptlet)
	}
	msg := fmt.Sprintf("%s failed and was ignored (%s): %s", label, f.what, f.first)
	if f.calls > 1 {
		msg = fmt.Sprintf("%s failed on %d calls and was ignored (%s); the first: %s", label, f.calls, f.what, f.first)
	}
	if f.logLine >= 0 && f.logLine < len(run.ranking.Log) {
		run.ranking.Log[f.logLine].Message = msg
		return
	}
	if run.log("error", msg) {
		f.logLine = len(run.ranking.Log) - 1
	}
}

// isFilter reports whether the unit named is one of the policy's filters.
func (run *scriptRun) isFilter(unit string) bool {
	for _, f := range run.policy.filters {
		if f.f.Name() == unit {
			return true
		}
	}
	return false
}

// failed reports whether unit failed earlier in this Rank.
func (run *scriptRun) failed(unit string) bool {
	_, ok := run.ignored[unit]
	return ok
}

// log appends a line to the ranking's log, within the log limits: a line
// is cut to the byte limit, and once the log is full the lines are
// dropped and counted in a last line. It reports whether the line was
// kept.
func (run *scriptRun) log(level, msg string) bool {
	r := run.ranking
	room := run.limits.MaxLogBytes - run.logBytes
	if run.dropped == 0 && len(r.Log) < run.limits.MaxLogLines-1 && room > 0 {
		msg = truncate(msg, max(room, 64))
		run.logBytes += len(msg)
		r.Log = append(r.Log, LogLine{Level: level, Message: msg})
		return true
	}
	run.dropped++
	line := LogLine{Level: "warn", Message: fmt.Sprintf("scriptlet log full (%d lines, %d bytes at most): %d more lines dropped",
		run.limits.MaxLogLines, run.limits.MaxLogBytes, run.dropped)}
	if run.dropped == 1 {
		run.dropLine = len(r.Log)
		r.Log = append(r.Log, line)
	} else if run.dropLine < len(r.Log) {
		r.Log[run.dropLine] = line
	}
	return false
}

// placement runs prog's instance_placement over the ranking and applies
// its decision to it.
func (run *scriptRun) placement(prog *Program, req *Request) error {
	r := run.ranking
	if run.members == nil {
		run.members = make(map[*Candidate]*memberValue, len(r.Ranked))
	}
	list := make([]starlark.Value, len(r.Ranked))
	for i, s := range r.Ranked {
		list[i] = run.member(s.Cand).setRank(i, s)
	}
	// As LXD's: the list is the call's own, which the scriptlet may
	// change (pop, remove); the members in it are read-only.
	members := starlark.NewList(list)
	st := &callState{run: run, req: req, ranked: r.Ranked}
	refuseOnValue := func(v starlark.Value) error {
		if v == starlark.None {
			return nil
		}
		return &failError{shortString(v)}
	}
	_, err := run.call(prog, entryPlacement, prog.placement, st, refuseOnValue, placementRequestValue(req), members)
	if err != nil {
		// An ignored failure leaves the ranking as it is, whatever
		// set_target said before it.
		return run.refusal(ScriptletName, err)
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

// shortString is v as a refusal message: strings as they are, other
// values as Starlark prints them, cut to maxMessageBytes; a value too big
// to print is named by its type.
func shortString(v starlark.Value) string {
	if s, ok := starlark.AsString(v); ok {
		return truncate(s, maxMessageBytes)
	}
	w := walker{limit: maxMessageBytes}
	w.walk(v, 0)
	if w.over || w.bytes > 4*maxMessageBytes {
		return "a " + v.Type() + " too large to print"
	}
	return truncate(v.String(), maxMessageBytes)
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
		m.run = run
		run.members[c] = m
	}
	return m
}

// stateOf is the reported state of root provider uuid, nil if it never
// reported: the states of every candidate's root are loaded on the first
// call, in one query (CloudData.States).
func (run *scriptRun) stateOf(uuid string) (*ProviderState, error) {
	if run.states == nil {
		if run.req == nil || run.req.Data == nil {
			return nil, nil
		}
		seen := make(map[string]struct{}, len(run.cands))
		roots := make([]string, 0, len(run.cands))
		for _, c := range run.cands {
			if r := c.Root(); r != "" {
				if _, dup := seen[r]; !dup {
					seen[r] = struct{}{}
					roots = append(roots, r)
				}
			}
		}
		states, err := run.req.Data.States(run.ctx, roots)
		if err != nil {
			return nil, fmt.Errorf("reading the members' states: %w", err)
		}
		if states == nil {
			states = map[string]*ProviderState{}
		}
		run.states = states
	}
	return run.states[uuid], nil
}
