package scriptlet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/berthd/berth/scheduler"
)

// Runtime runs a policy's scriptlets: it is the scheduler.Scriptlets a
// policy is built with (scheduler.NewPolicy), over the programs a
// Resolver finds, under Limits. It is safe for concurrent use.
type Runtime struct {
	scripts Resolver
	limits  Limits
}

var _ scheduler.Scriptlets = (*Runtime)(nil)

// NewRuntime returns the runtime of the scriptlets scripts resolves
// (asked at every Rank, since scriptlets change while the server runs),
// run under limits (zero fields: the defaults).
func NewRuntime(scripts Resolver, limits Limits) *Runtime {
	return &Runtime{scripts: scripts, limits: limits.withDefaults()}
}

// NewFilter implements scheduler.Scriptlets: the unit starlark:<name> as
// a filter.
func (rt *Runtime) NewFilter(name string, params json.RawMessage) (scheduler.Filter, error) {
	return newStarlarkFilter(name, params, rt)
}

// NewWeigher implements scheduler.Scriptlets: the unit starlark:<name>
// as a weigher.
func (rt *Runtime) NewWeigher(name string, params json.RawMessage) (scheduler.Weigher, error) {
	return newStarlarkWeigher(name, params, rt)
}

// HasDefault implements scheduler.Scriptlets.
func (rt *Runtime) HasDefault() bool {
	return rt.scripts != nil && rt.scripts.DefaultScriptlet() != nil
}

// errScriptletDeadline is the cause of a Rank's scriptlet context ending
// at the scriptlet deadline.
var errScriptletDeadline = errors.New("scriptlet deadline exceeded")

// Start implements scheduler.Scriptlets: the scriptlet state of one Rank,
// with the scriptlet whose instance_placement runs (its name recorded in
// r) and, when any Starlark runs, the scriptlet deadline.
func (rt *Runtime) Start(ctx context.Context, p *scheduler.Policy, req *scheduler.Request, cands []*scheduler.Candidate, r *scheduler.Ranking) (scheduler.ScriptletRun, error) {
	cfg := p.Config()
	run := &scriptRun{policy: p, ranking: r, limits: rt.limits, req: req, cands: cands}
	placement, err := rt.placementScriptlet(cfg.Scriptlet, r)
	if err != nil {
		return nil, err
	}
	run.placement = placement
	// Scriptlets run under their own deadline; built-in units under
	// ctx, so that a scriptlet that ran out of time (and is ignored)
	// leaves them theirs.
	run.ctx = ctx
	if placement != nil || hasStarlarkUnits(cfg) {
		run.ctx, run.cancel = context.WithTimeoutCause(ctx, rt.limits.Timeout, errScriptletDeadline)
	}
	return run, nil
}

// hasStarlarkUnits reports whether cfg names a starlark: filter or
// weigher.
func hasStarlarkUnits(cfg scheduler.PolicyConfig) bool {
	for _, units := range [][]scheduler.PluginConfig{cfg.Filters, cfg.Weighers} {
		for _, u := range units {
			if strings.HasPrefix(u.Name, scheduler.StarlarkUnitPrefix) {
				return true
			}
		}
	}
	return false
}

// placementScriptlet resolves the scriptlet whose instance_placement runs
// for a policy naming scriptlet ("" for the server's default), nil for
// none, and records its name in r.
func (rt *Runtime) placementScriptlet(scriptlet string, r *scheduler.Ranking) (*Program, error) {
	if rt.scripts == nil {
		return nil, nil
	}
	if scriptlet == "" {
		prog := rt.scripts.DefaultScriptlet()
		if prog == nil {
			return nil, nil
		}
		if !prog.HasPlacement() {
			return nil, errors.New("the default scriptlet does not define instance_placement(request, candidate_members)")
		}
		r.Scriptlet = DefaultName
		return prog, nil
	}
	prog, ok := rt.scripts.Scriptlet(scriptlet)
	if !ok {
		return nil, fmt.Errorf("scriptlet %q does not exist", scriptlet)
	}
	if !prog.HasPlacement() {
		return nil, fmt.Errorf("scriptlet %q does not define instance_placement(request, candidate_members)", scriptlet)
	}
	r.Scriptlet = scriptlet
	return prog, nil
}
