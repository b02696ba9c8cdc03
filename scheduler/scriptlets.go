package scheduler

import (
	"context"
	"encoding/json"
)

// The boundary between the policy and the scriptlet runtime: a Policy
// runs Starlark only through Scriptlets, which package
// scheduler/scriptlet implements (scriptlet.Runtime) and the caller hands
// to NewPolicy. The runtime imports this package, for the request, the
// candidates and the ranking it reads and writes; this package does not
// import it.

// StarlarkUnitPrefix starts the name of a unit that is a stored
// scriptlet: "starlark:<scriptlet name>" uses the scriptlet's
// filter(request, candidate) in a policy's filters, its
// weigh(request, candidate) in its weighers.
const StarlarkUnitPrefix = "starlark:"

// ScriptletName is the plugin named in errors about the policy's
// scriptlet (its instance_placement).
const ScriptletName = "scriptlet"

// scriptletNeeds are the fields a scriptlet may read: candidates show
// their placement keys.
var scriptletNeeds = Needs{Keys: true}

// Scriptlets is the scriptlet runtime of a Policy: it builds the units
// named "starlark:<scriptlet>", and runs the scriptlet work of each Rank.
// It must be safe for concurrent use.
type Scriptlets interface {
	// NewFilter and NewWeigher build the unit "starlark:<name>" with
	// params, as a filter or as a weigher. The scriptlet is looked up
	// when a Rank runs, not here.
	NewFilter(name string, params json.RawMessage) (Filter, error)
	NewWeigher(name string, params json.RawMessage) (Weigher, error)
	// HasDefault reports whether the server's default scriptlet is set
	// now (the one whose instance_placement runs for a policy that names
	// none).
	HasDefault() bool
	// Start begins the scriptlet work of one Rank of p over req (the
	// Rank's own copy) and cands: it resolves the scriptlet whose
	// instance_placement runs (p's, or the server's default; none when
	// there is neither), records its name in r.Scriptlet ("" for none),
	// and sets the scriptlet deadline when any Starlark may run. Its
	// error (the scriptlet p names does not exist, or defines no
	// instance_placement) is Rank's, as a *PluginError. The run's units
	// find it with req.ScriptletRun.
	Start(ctx context.Context, p *Policy, req *Request, cands []*Candidate, r *Ranking) (ScriptletRun, error)
	// StartGang is Start for one RankGang, whose hosts are cands: the
	// scriptlet whose gang_placement runs is p's, or the server's
	// default, and none when that scriptlet defines no gang_placement
	// (a scriptlet written for single claims leaves gangs to the
	// weighers).
	StartGang(ctx context.Context, p *Policy, req *Request, cands []*Candidate, r *Ranking) (ScriptletRun, error)
}

// ScriptletRun is the scriptlet work of one Rank. Rank calls it from one
// goroutine.
type ScriptletRun interface {
	// Failed reports whether the unit named failed earlier in the Rank
	// and the Rank goes on without it (the runtime's limits say to
	// ignore failures): a Starlark weigher that failed weighs nothing.
	Failed(unit string) bool
	// Place runs the instance_placement of r.Scriptlet over r.Ranked,
	// which it may reorder (the candidate it chose first, r.Target and
	// r.Chosen set); its error (a *RefusedError when the scriptlet
	// refused the request, failed or exceeded a limit) is Rank's. Rank
	// calls it only when r.Scriptlet is set.
	Place() error
	// PlaceGang runs the gang_placement of r.Scriptlet (the Ranking
	// StartGang was given) over g.Ranked, which it may reorder (the
	// placement it chose first: GangRanking.ChooseDomain); its error is
	// RankGang's, as Place's is Rank's.
	PlaceGang(g *GangRanking) error
	// End releases what the run holds (its deadline); Rank calls it
	// when it returns.
	End()
}

// ScriptletRun is the Rank's scriptlet run (Scriptlets.Start), nil when
// the policy has no scriptlet runtime or outside Policy.Rank.
func (r *Request) ScriptletRun() ScriptletRun { return r.scripts }
