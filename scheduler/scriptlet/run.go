package scriptlet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.starlark.net/starlark"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

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

// scriptRun is the scriptlet state of one Rank: where log lines go, the
// limits, the context bounded by the scriptlet deadline, the failures
// ignored so far, and the Starlark values built so far (built once per
// Rank).
type scriptRun struct {
	policy  *scheduler.Policy
	ranking *scheduler.Ranking
	limits  Limits
	// placement is the scriptlet whose instance_placement runs, nil for
	// none.
	placement *Program
	// req and cands are the Rank's request and candidates.
	req   *scheduler.Request
	cands []*scheduler.Candidate
	// states are the reported states of the candidates' roots, loaded
	// once when a scriptlet reads a member's status the policy did not
	// fetch states for (stateOf); nil before.
	states map[string]*engine.ProviderState
	// preemptible is what preemptible consumers hold on the candidates'
	// roots, loaded once when a scriptlet reads a candidate's
	// preemptible usage (preemptibleOf); nil before.
	preemptible map[string][]engine.PreemptibleUsage
	// ctx is the Rank's context with the scriptlet deadline; scriptlet
	// calls run under it, built-in units under the Rank's own. cancel
	// releases the deadline (nil without one).
	ctx     context.Context
	cancel  context.CancelFunc
	request starlark.Value
	members map[*scheduler.Candidate]*memberValue
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

// runOf is the Rank's run of req, nil outside a Rank of a policy built
// with a Runtime.
func runOf(req *scheduler.Request) *scriptRun {
	run, _ := req.ScriptletRun().(*scriptRun)
	return run
}

// callState is what builtins see of one call, through the thread, and
// the call's sandbox. At top level (compiling) only sb is set.
type callState struct {
	sb     sandbox
	ctx    context.Context
	run    *scriptRun
	req    *scheduler.Request
	ranked []scheduler.Scored // instance_placement only: the candidates
	target *scheduler.Candidate
	// gang is gang_placement's ranking, domain the domain it chose
	// (gang.go).
	gang   *scheduler.GangRanking
	domain *string
}

const threadStateKey = "berth.call"

// call runs fn(args...) of prog on a fresh thread with the step and
// memory budgets, cancelled when run.ctx ends (the scriptlet deadline or
// the caller's context), and classifies its error: a *failError (from
// fail, or from check, which judges the returned value), a
// *LimitError, a *RunError, or ctx's error when the
// caller's context ended. Every run is counted in the metrics; a call
// made after the deadline passed does not run and is not counted.
func (run *scriptRun) call(prog *Program, entry string, fn *starlark.Function, st *callState,
	check func(starlark.Value) error, args ...starlark.Value) (starlark.Value, error) {
	ctx := run.ctx
	name := prog.name
	if err := ctx.Err(); err != nil {
		if context.Cause(ctx) == errScriptletDeadline {
			return nil, &LimitError{Scriptlet: name, Limit: LimitDeadline}
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
	stats := RunStats{Scriptlet: name, Entry: entry, Outcome: "ok", Steps: th.ExecutionSteps(), Duration: time.Since(start)}
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
		lim := &LimitError{Scriptlet: name, Limit: LimitMemory, Steps: stats.Steps, Detail: truncate(be.msg, maxMessageBytes)}
		stats.Error = lim.Error()
		return nil, lim
	case be != nil || (stats.Steps >= run.limits.MaxSteps && ctx.Err() == nil):
		stats.Outcome = "limit_steps"
		lim := &LimitError{Scriptlet: name, Limit: LimitSteps, Steps: stats.Steps}
		if be != nil {
			lim.Detail = truncate(be.msg, maxMessageBytes)
		}
		stats.Error = lim.Error()
		return nil, lim
	case context.Cause(ctx) == errScriptletDeadline:
		stats.Outcome = "limit_deadline"
		lim := &LimitError{Scriptlet: name, Limit: LimitDeadline, Steps: stats.Steps}
		stats.Error = lim.Error()
		return nil, lim
	case ctx.Err() != nil:
		stats.Outcome = "error"
		stats.Error = ctx.Err().Error()
		return nil, ctx.Err()
	}
	stats.Outcome = "error"
	se := &RunError{Scriptlet: name, Msg: truncate(err.Error(), maxMessageBytes)}
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
	var lim *LimitError
	var se *RunError
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
		return &scheduler.RefusedError{Reason: refused.msg}
	case failed == nil:
		return err
	case run.limits.OnError == OnErrorRefuse:
		run.log("error", failed.Error())
		return &scheduler.RefusedError{Reason: failed.Error(), Err: failed}
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
		case unit == scheduler.ScriptletName:
			f.what = "the ranking stands as the policy made it"
		case strings.HasPrefix(unit, scheduler.StarlarkUnitPrefix) && run.isFilter(unit):
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
	if unit == scheduler.ScriptletName {
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
	filters, _ := run.policy.Describe()
	return slices.Contains(filters, unit)
}

// Failed implements scheduler.ScriptletRun: whether unit failed earlier
// in this Rank.
func (run *scriptRun) Failed(unit string) bool {
	_, ok := run.ignored[unit]
	return ok
}

// Place implements scheduler.ScriptletRun: run.placement's
// instance_placement over the ranking.
func (run *scriptRun) Place() error { return run.place(run.placement, run.req) }

// End implements scheduler.ScriptletRun: it releases the deadline.
func (run *scriptRun) End() {
	if run.cancel != nil {
		run.cancel()
	}
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
		r.Log = append(r.Log, scheduler.LogLine{Level: level, Message: msg})
		return true
	}
	run.dropped++
	line := scheduler.LogLine{Level: "warn", Message: fmt.Sprintf("scriptlet log full (%d lines, %d bytes at most): %d more lines dropped",
		run.limits.MaxLogLines, run.limits.MaxLogBytes, run.dropped)}
	if run.dropped == 1 {
		run.dropLine = len(r.Log)
		r.Log = append(r.Log, line)
	} else if run.dropLine < len(r.Log) {
		r.Log[run.dropLine] = line
	}
	return false
}

// place runs prog's instance_placement over the ranking and applies its
// decision to it.
func (run *scriptRun) place(prog *Program, req *scheduler.Request) error {
	r := run.ranking
	if run.members == nil {
		run.members = make(map[*scheduler.Candidate]*memberValue, len(r.Ranked))
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
		return run.refusal(scheduler.ScriptletName, err)
	}
	if st.target != nil {
		out := make([]scheduler.Scored, 0, len(r.Ranked))
		var first scheduler.Scored
		for _, s := range r.Ranked {
			if s.Cand == st.target {
				first = s
			} else {
				out = append(out, s)
			}
		}
		r.Ranked = append([]scheduler.Scored{first}, out...)
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

func (run *scriptRun) requestValue(req *scheduler.Request) starlark.Value {
	if run.request == nil {
		run.request = requestValue(req)
	}
	return run.request
}

// member is the candidate as a candidate member, made once per Rank so
// the attributes a filter read are not built again for weigh or
// instance_placement.
func (run *scriptRun) member(c *scheduler.Candidate) *memberValue {
	if run.members == nil {
		run.members = map[*scheduler.Candidate]*memberValue{}
	}
	m, ok := run.members[c]
	if !ok {
		m = candidateMember(c)
		m.run = run
		run.members[c] = m
	}
	return m
}

// candidateRoots are the distinct roots of the Rank's candidates, in
// the candidates' order.
func (run *scriptRun) candidateRoots() []string {
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
	return roots
}

// preemptibleOf is what preemptible consumers hold on root provider p:
// p's own usage when the policy fetched some (scheduler.Needs.Preemptible),
// else the usage of every candidate's root, loaded on the first call in
// one query (CloudData.PreemptibleUsage).
func (run *scriptRun) preemptibleOf(p *scheduler.ProviderView) ([]engine.PreemptibleUsage, error) {
	if p.Preemptible != nil || run.req == nil || run.req.Data == nil {
		return p.Preemptible, nil
	}
	if run.preemptible == nil {
		usage, err := run.req.Data.PreemptibleUsage(run.ctx, run.candidateRoots())
		if err != nil {
			return nil, fmt.Errorf("reading the members' preemptible usage: %w", err)
		}
		if usage == nil {
			usage = map[string][]engine.PreemptibleUsage{}
		}
		run.preemptible = usage
	}
	return run.preemptible[p.UUID], nil
}

// stateOf is the reported state of root provider uuid, nil if it never
// reported: the states of every candidate's root are loaded on the first
// call, in one query (CloudData.States).
func (run *scriptRun) stateOf(uuid string) (*engine.ProviderState, error) {
	if run.states == nil {
		if run.req == nil || run.req.Data == nil {
			return nil, nil
		}
		states, err := run.req.Data.States(run.ctx, run.candidateRoots())
		if err != nil {
			return nil, fmt.Errorf("reading the members' states: %w", err)
		}
		if states == nil {
			states = map[string]*engine.ProviderState{}
		}
		run.states = states
	}
	return run.states[uuid], nil
}
