package claims

import (
	"context"
	"errors"
	"slices"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// Ranking a gang's placements (docs/gangs.md, "How a gang is placed"):
// the domains that hold the whole gang, as the engine placed it in each,
// are ranked by the gang's scheduling policy (GangParams.Policy, resolved
// as a single claim's is) with scheduler.Policy.RankGang: its weighers
// score each placement over the hosts it uses, its scriptlet's
// gang_placement may choose one or refuse the gang. The engine keeps the
// members of at most MaxGangRanked complete domains (its order first), so
// those are the ones ranked; domains that hold only some members (a
// min_count's) are not ranked.

// MaxGangRanked bounds the complete domains a policy ranks: the first
// ones in the engine's order (fewest empty hosts started, then fewest
// hosts, then the request's order).
const MaxGangRanked = 100

// gangPolicy is the policy p ranks with, and whether it ranks gangs
// at all (scheduler.Policy.RanksGangs).
func (g *Gangs) gangPolicy(ctx context.Context, p *GangParams) (*scheduler.Policy, bool, error) {
	pol, _, err := g.c.resolvePolicy(ctx, &Params{Policy: p.Policy})
	if err != nil {
		return nil, false, err
	}
	return pol, pol.RanksGangs(), nil
}

// chooseRanked is choose, then, when pol ranks gangs, the complete
// domains kept reordered by pol (the rest, and looked's other levels,
// as they were; looked's entries of the level chosen in the same new
// order). A scriptlet that refused the gang is a *GangNotPlacedError
// with its reason.
func (g *Gangs) chooseRanked(ctx context.Context, gp *engine.GangParams, p *GangParams, pol *scheduler.Policy, ranks bool) (*engine.Gang, []engine.GangDomain, error) {
	chosen, looked, err := g.choose(ctx, gp, p)
	if err != nil || !ranks || chosen.Complete == 0 {
		return chosen, looked, err
	}
	placements, provs := gangPlacements(p, chosen)
	req := gangRequest(p, gp)
	req.Data = g.c.cloudData()
	if g.c.cloud != nil {
		if err := g.c.cloud.Enrich(ctx, pol.NeedsFor(req), provs); err != nil {
			return nil, nil, err
		}
	}
	ranking, err := pol.RankGang(ctx, req, placements)
	var refused *scheduler.RefusedError
	if errors.As(err, &refused) {
		np := g.notPlaced(p, looked)
		np.Refusal = refused.Reason
		if ranking != nil {
			np.ScriptletLog = ranking.Log
		}
		return nil, nil, np
	}
	if err != nil {
		return nil, nil, err
	}
	if len(ranking.Log) > 0 {
		g.c.log.DebugContext(ctx, "claims: gang scriptlet log", "scriptlet", ranking.Scriptlet, "log", ranking.Log)
	}
	level := looked[len(looked)-len(chosen.Domains):]
	doms, lvl := slices.Clone(chosen.Domains[:len(placements)]), slices.Clone(level[:len(placements)])
	for k, s := range ranking.Ranked {
		chosen.Domains[k], level[k] = doms[s.Placement.Index], lvl[s.Placement.Index]
	}
	return chosen, looked, nil
}

// gangPlacements are the complete domains of chosen whose members the
// engine kept, as the scheduler ranks them, and the views of every
// provider they use (as they were before the gang).
func gangPlacements(p *GangParams, chosen *engine.Gang) ([]*scheduler.GangPlacement, map[string]*scheduler.ProviderView) {
	provs := map[string]*scheduler.ProviderView{}
	var out []*scheduler.GangPlacement
	nHosts := 0
	for i := 0; i < chosen.Complete && i < len(chosen.Domains) && chosen.Domains[i].Members != nil; i++ {
		d := &chosen.Domains[i]
		pl := &scheduler.GangPlacement{Domain: d.Aggregate, Index: i, EmptyStarted: d.EmptyStarted}
		host := make(map[string]int, d.RootsUsed)
		var viewed []*engine.Candidates
		for _, m := range d.Members {
			if !slices.Contains(viewed, m.Candidate) {
				views(m.Candidate, provs) // (one answer per distinct request)
				viewed = append(viewed, m.Candidate)
			}
			h, ok := host[m.Root]
			if !ok {
				h = len(pl.Hosts)
				host[m.Root] = h
				pl.Hosts = append(pl.Hosts, &scheduler.Candidate{Index: nHosts, Roots: []string{m.Root}, Providers: provs})
				nHosts++
			}
			pl.Hosts[h].Allocations = addAllocations(pl.Hosts[h].Allocations, m.Request.Allocations)
			pl.Members = append(pl.Members, scheduler.GangMemberPlace{ConsumerUUID: p.Members[m.Member].ConsumerUUID,
				Name: p.Members[m.Member].Name, Host: h, Allocations: m.Request.Allocations})
		}
		out = append(out, pl)
	}
	return out, provs
}

// addAllocations is sum with add's amounts added, provider by provider
// and class by class (sum is changed; add is not).
func addAllocations(sum, add []engine.Allocation) []engine.Allocation {
	for _, a := range add {
		i := slices.IndexFunc(sum, func(s engine.Allocation) bool { return s.ProviderUUID == a.ProviderUUID })
		if i < 0 {
			sum = append(sum, engine.Allocation{ProviderUUID: a.ProviderUUID, Resources: slices.Clone(a.Resources)})
			continue
		}
		for _, r := range a.Resources {
			j := slices.IndexFunc(sum[i].Resources, func(x engine.ResourceAmount) bool { return x.Class == r.Class })
			if j < 0 {
				sum[i].Resources = append(sum[i].Resources, r)
			} else {
				sum[i].Resources[j].Amount += r.Amount
			}
		}
	}
	return sum
}

// gangRequest is the gang p as one request, as the scheduler sees it:
// its owner, the first member's consumer type, and the whole gang's
// resources and traits (gp's members' selections).
func gangRequest(p *GangParams, gp *engine.GangParams) *scheduler.Request {
	req := &scheduler.Request{ProjectID: p.ProjectID, UserID: p.UserID, ConsumerType: p.Members[0].ConsumerType,
		Resources: map[string]int64{}, Reason: ReasonNew}
	for i := range gp.Members {
		addGroups(req, gp.Members[i].Groups)
	}
	return req
}
