package scheduler

import (
	"cmp"
	"context"
	"math"
	"reflect"
	"slices"

	"github.com/berthd/berth/ledger/engine"
)

// Gangs: a policy ranks the complete placements of a gang (claims.Gangs,
// docs/gangs.md). The engine simulates the whole gang in each domain (a
// rack: an aggregate) and finds, for each domain that holds every
// member, where each member goes; RankGang scores those placements
// whole, not one host at a time:
//
//   - each host a placement uses is a candidate whose allocations are
//     what the gang's members on it take together, over the host's view
//     before the gang (as a single claim's candidate is);
//   - every weigher of the policy weighs every host of every placement,
//     normalised across all of them (as a single claim's weighers are
//     across its candidates) and times its factor; a host's score is
//     the sum;
//   - a placement's score is the mean of its hosts' scores; the highest
//     wins, and the engine's order (fewest empty hosts started, then
//     fewest hosts, then the request's order) breaks ties;
//   - then the scriptlet's gang_placement, if it defines one, sees the
//     placements in that order and may choose one or refuse the gang.
//
// The policy's filters do not run: the members were placed by their own
// selection, and a filter judges one member on one host, not a
// placement.

// GangPlacement is where a whole gang goes in one domain.
type GangPlacement struct {
	// Domain is the domain's aggregate uuid ("" for the whole cloud).
	Domain string
	// Index is the placement's position in the engine's order: the
	// tie-break between equal scores.
	Index int
	// EmptyStarted is how many of Hosts held nothing before the gang.
	EmptyStarted int
	// Hosts are the root providers the placement uses, in the order the
	// members first use them, each a candidate (Roots: the host; Index:
	// its position among every host RankGang is given) whose Allocations
	// are what the members on it take together.
	Hosts []*Candidate
	// Members are the members placed, in the request's order.
	Members []GangMemberPlace
}

// GangMemberPlace is one member's place in a GangPlacement.
type GangMemberPlace struct {
	ConsumerUUID string
	Name         string
	// Host is the index in GangPlacement.Hosts of the member's host.
	Host int
	// Allocations are what the member takes.
	Allocations []engine.Allocation
}

// GangRanking is the outcome of Policy.RankGang.
type GangRanking struct {
	// Ranked are the placements, best first: by score, then by
	// GangPlacement.Index. When the scriptlet chose one, it comes first
	// and the rest keep their order.
	Ranked []ScoredPlacement
	// Scriptlet is the name of the scriptlet whose gang_placement ran
	// ("" for none; "(default)" for the server's default scriptlet).
	Scriptlet string
	// Domain is the domain the scriptlet chose, and Chosen whether it
	// chose one.
	Domain string
	Chosen bool
	// Log is what the scriptlets logged.
	Log []LogLine
}

// ScoredPlacement is a placement with its score.
type ScoredPlacement struct {
	Placement *GangPlacement
	// Score is the mean over the placement's hosts of each host's score
	// (the sum of the weighers' contributions); Weights the mean of each
	// weigher's contribution, by weigher name.
	Score   float64
	Weights map[string]float64
	// Hosts are the placement's hosts, scored, in GangPlacement.Hosts'
	// order.
	Hosts []Scored
}

// scoreDigits is how many decimal digits of a placement's score count:
// a mean of the same host scores summed in another order may differ in
// its last bits, and must tie.
const scoreDigits = 1e9

// RankGang scores and orders placements, every domain's placement of one
// gang, for req (the gang as one request: its owner, and Resources the
// whole gang's), as the top of this file says. It returns a
// *RefusedError (with the ranking so far) when the scriptlet refused the
// gang, failed or exceeded a limit; a *PluginError when a unit failed.
// RankGang does not change req or placements.
//
// The built-in policy (DefaultPolicyConfig: a server with no policy
// configured) weighs nothing for gangs: its spread weigher, right for
// one instance, would push every gang into an empty rack, where the
// engine's order fills racks in use first. Any other policy's weighers
// rank gangs (a policy with only pack, or only spread, says which way).
func (p *Policy) RankGang(ctx context.Context, req *Request, placements []*GangPlacement) (_ *GangRanking, err error) {
	rq := *req
	rq.prepared, rq.scripts = map[any]any{}, nil
	req = &rq
	var hosts []*Candidate
	for _, pl := range placements {
		hosts = append(hosts, pl.Hosts...)
	}
	r := &Ranking{Considered: len(hosts)}
	g := &GangRanking{}
	defer func() { g.Scriptlet, g.Log = r.Scriptlet, r.Log }()
	if p.scripts != nil {
		run, err := p.scripts.StartGang(ctx, p, req, hosts, r)
		if err != nil {
			return nil, &PluginError{Plugin: ScriptletName, Err: err}
		}
		req.scripts = run
		defer run.End()
	}
	weighers := p.gangWeighers()
	for _, w := range weighers {
		if err := prepareUnit(ctx, req, w.w); err != nil {
			return g, err
		}
	}
	scored, err := p.weigh(ctx, req, weighers, hosts)
	if err != nil {
		return g, err
	}
	g.Ranked = placementScores(placements, scored)
	if req.scripts == nil || r.Scriptlet == "" {
		return g, nil
	}
	return g, req.scripts.PlaceGang(g)
}

// RanksGangs reports whether RankGang may reorder placements: the
// policy has weighers that rank gangs, or a scriptlet may run (its own,
// or the server's default now). A caller that gets false keeps the
// engine's order without asking.
func (p *Policy) RanksGangs() bool {
	return len(p.gangWeighers()) > 0 || (p.scripts != nil && (p.cfg.Scriptlet != "" || p.scripts.HasDefault()))
}

// gangWeighers are the weighers that rank gangs: the policy's, none for
// the built-in policy (see RankGang).
func (p *Policy) gangWeighers() []weighted {
	if reflect.DeepEqual(p.cfg, DefaultPolicyConfig()) {
		return nil
	}
	return p.weighers
}

// placementScores is each placement's score, the mean of its hosts'
// (scored, in the order of the placements' hosts), best first, the
// engine's order on a tie.
func placementScores(placements []*GangPlacement, scored []Scored) []ScoredPlacement {
	out := make([]ScoredPlacement, len(placements))
	k := 0
	for i, pl := range placements {
		sp := ScoredPlacement{Placement: pl, Hosts: scored[k : k+len(pl.Hosts)]}
		k += len(pl.Hosts)
		if len(sp.Hosts) == 0 {
			out[i] = sp
			continue
		}
		n := float64(len(sp.Hosts))
		contribs := make([]float64, len(sp.Hosts[0].contribs))
		for _, h := range sp.Hosts {
			sp.Score += h.Score
			for w, v := range h.contribs {
				contribs[w] += v
			}
		}
		sp.Score /= n
		sp.Weights = make(map[string]float64, len(contribs))
		for w, name := range sp.Hosts[0].names {
			sp.Weights[name] += contribs[w] / n
		}
		out[i] = sp
	}
	slices.SortStableFunc(out, func(a, b ScoredPlacement) int {
		if c := cmp.Compare(math.Round(b.Score*scoreDigits), math.Round(a.Score*scoreDigits)); c != 0 {
			return c
		}
		return cmp.Compare(a.Placement.Index, b.Placement.Index)
	})
	return out
}

// ChooseDomain moves the placement of domain first, as a scriptlet's
// choice: Domain and Chosen set. It reports whether g has it.
func (g *GangRanking) ChooseDomain(domain string) bool {
	i := slices.IndexFunc(g.Ranked, func(s ScoredPlacement) bool { return s.Placement.Domain == domain })
	if i < 0 {
		return false
	}
	chosen := g.Ranked[i]
	copy(g.Ranked[1:i+1], g.Ranked[:i])
	g.Ranked[0] = chosen
	g.Domain, g.Chosen = domain, true
	return true
}
