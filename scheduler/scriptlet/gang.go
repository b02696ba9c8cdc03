package scriptlet

import (
	"context"
	"errors"
	"fmt"

	"go.starlark.net/starlark"

	"github.com/berthd/berth/scheduler"
)

// Gangs: gang_placement(request, domains) sees the whole placement of a
// gang (scheduler.Policy.RankGang) and chooses a domain or refuses the
// gang, as instance_placement(request, candidate_members) does for one
// instance (docs/scriptlets.md, "Gangs").
//
// request is the gang as one request (its owner; resources: the whole
// gang's). domains are the domains that hold every member, best first,
// each a frozen struct:
//
//	aggregate            the domain's aggregate uuid ("" for the whole cloud)
//	rank, score, weights the placement's place, score and each weigher's part
//	empty_hosts_started  how many of its hosts held nothing before the gang
//	hosts                its hosts, candidate members (their allocations:
//	                     what the gang's members on the host take together)
//	members              each member placed: consumer_uuid, name, host (one of hosts)
//
// set_target(domain.aggregate) chooses a domain; returning a value other
// than None, or fail(message), refuses the gang.

// StartGang implements scheduler.Scriptlets: Start for one RankGang,
// whose scriptlet is the one that defines gang_placement.
func (rt *Runtime) StartGang(ctx context.Context, p *scheduler.Policy, req *scheduler.Request, cands []*scheduler.Candidate, r *scheduler.Ranking) (scheduler.ScriptletRun, error) {
	cfg := p.Config()
	run := &scriptRun{policy: p, ranking: r, limits: rt.limits, req: req, cands: cands}
	prog, err := rt.gangScriptlet(cfg.Scriptlet)
	if err != nil {
		return nil, err
	}
	if prog != nil {
		r.Scriptlet = cfg.Scriptlet
		if cfg.Scriptlet == "" {
			r.Scriptlet = DefaultName
		}
	}
	run.placement = prog
	run.ctx = ctx
	if prog != nil || hasStarlarkUnits(cfg) {
		run.ctx, run.cancel = context.WithTimeoutCause(ctx, rt.limits.Timeout, errScriptletDeadline)
	}
	return run, nil
}

// gangScriptlet resolves the scriptlet whose gang_placement runs for a
// policy naming scriptlet ("" for the server's default): nil when there
// is none or it defines no gang_placement; an error when the scriptlet
// named does not exist.
func (rt *Runtime) gangScriptlet(scriptlet string) (*Program, error) {
	if rt.scripts == nil {
		return nil, nil
	}
	prog := rt.scripts.DefaultScriptlet()
	if scriptlet != "" {
		var ok bool
		if prog, ok = rt.scripts.Scriptlet(scriptlet); !ok {
			return nil, fmt.Errorf("scriptlet %q does not exist", scriptlet)
		}
	}
	if prog == nil || !prog.HasGangPlacement() {
		return nil, nil
	}
	return prog, nil
}

// PlaceGang implements scheduler.ScriptletRun: run.placement's
// gang_placement over g.
func (run *scriptRun) PlaceGang(g *scheduler.GangRanking) error {
	prog := run.placement
	if prog == nil || prog.gang == nil {
		return errors.New("no gang_placement to run")
	}
	domains := make([]starlark.Value, len(g.Ranked))
	for i := range g.Ranked {
		domains[i] = run.domainValue(i, &g.Ranked[i])
	}
	st := &callState{run: run, req: run.req, gang: g}
	refuseOnValue := func(v starlark.Value) error {
		if v == starlark.None {
			return nil
		}
		return &failError{shortString(v)}
	}
	// As instance_placement's list, the domains' is the call's own.
	_, err := run.call(prog, entryGangPlacement, prog.gang, st, refuseOnValue, placementRequestValue(run.req), starlark.NewList(domains))
	if err != nil {
		// An ignored failure leaves the ranking as the weighers made it,
		// whatever set_target said before it.
		return run.refusal(scheduler.ScriptletName, err)
	}
	if st.domain != nil {
		g.ChooseDomain(*st.domain)
	}
	return nil
}

// domainValue is the placement ranked rank as gang_placement sees it.
func (run *scriptRun) domainValue(rank int, s *scheduler.ScoredPlacement) starlark.Value {
	pl := s.Placement
	hosts := make([]starlark.Value, len(pl.Hosts))
	for i, h := range pl.Hosts {
		hosts[i] = run.member(h).setRank(i, s.Hosts[i])
	}
	members := make([]starlark.Value, len(pl.Members))
	for i, m := range pl.Members {
		members[i] = frozenStruct("gang_member", starlark.StringDict{
			"consumer_uuid": starlark.String(m.ConsumerUUID),
			"name":          starlark.String(m.Name),
			"host":          hosts[m.Host],
		})
	}
	weights := starlark.NewDict(len(s.Weights))
	for _, k := range sortedKeys(s.Weights) {
		_ = weights.SetKey(starlark.String(k), starlark.Float(s.Weights[k]))
	}
	weights.Freeze()
	return frozenStruct("gang_domain", starlark.StringDict{
		"aggregate":           starlark.String(pl.Domain),
		"rank":                starlark.MakeInt(rank),
		"score":               starlark.Float(s.Score),
		"weights":             weights,
		"empty_hosts_started": starlark.MakeInt(pl.EmptyStarted),
		"hosts":               frozenList(hosts),
		"members":             frozenList(members),
	})
}

// setGangTarget is set_target in gang_placement: the domain whose
// aggregate is target.
func setGangTarget(st *callState, b *starlark.Builtin, target string) (starlark.Value, error) {
	for _, s := range st.gang.Ranked {
		if s.Placement.Domain == target {
			st.domain = &target
			return starlark.None, nil
		}
	}
	if st.run.limits.Dialect == DialectIncus {
		return nil, fmt.Errorf("%s: %w: %s", b.Name(), errInvalidMember, target)
	}
	st.run.log("warn", fmt.Sprintf("%s: %q is not a domain that holds the gang; the built-in choice stands", b.Name(), target))
	return starlark.String(invalidMemberName), nil
}
