package engine

import (
	"cmp"
	"context"
	"reflect"
	"slices"
)

// Gangs: where a group of members fits whole, in one domain (an
// aggregate of root providers: a rack, a network block). The question is
// answered by simulation, as Capacity answers its own (capacity.go): for
// each domain a scratch snapshot shares the real one's names and indexes
// and copies a provider the first time a member takes from it, so the
// members placed earlier in the domain consume capacity for those placed
// after them, and the real snapshot is never modified. Each member's
// candidate is the first the engine gives on a root, tried in this
// order: the roots the gang already uses in the domain (without spread),
// then the domain's roots that hold something already, then the empty
// ones, each group in the engine's order; so a gang fills hosts in use
// before it breaks into empty ones.
//
// Members with the same request share one search, and a root where that
// request failed once in a domain is not tried again there (usage only
// grows during a domain's simulation), so a domain costs about one look
// at each of its roots per distinct request, plus one per member.

// GangParams asks where a gang fits.
type GangParams struct {
	// Members are the members' requests, one each, as for allocation
	// candidates (Limit, Max, Randomize and Sample are ignored; MaxSteps
	// is replaced by the gang's).
	Members []CandidatesParams
	// Spread puts each member on a different root provider.
	Spread bool
	// Domains are aggregate uuids: all members go in the trees of root
	// providers of one of them (aggregates of providers below a root are
	// not looked at, as for Capacity's). Empty: the whole cloud is one
	// domain, whose Aggregate is "".
	Domains []string
	// Keep is how many of the domains that hold the whole gang, best
	// first, get their members' allocations; 0 means 1. A caller that
	// ranks the complete domains itself (by a scheduling policy) keeps
	// as many as it ranks.
	Keep int
	// MaxSteps bounds each distinct request's search in engine steps,
	// summed over every domain; 0 means DefaultCapacitySteps.
	MaxSteps int
	// MinCount, when above 0, makes a domain that holds at least that
	// many members (not all) acceptable too: Keep then counts the
	// acceptable domains, which get the placed members' allocations.
	// 0 means every member.
	MinCount int
}

// Gang is the answer to GangParams.
type Gang struct {
	// Domains are GangParams.Domains (repeats dropped): first those that
	// hold the whole gang, best first (fewest empty roots started, then
	// fewest roots used, then the request's order), then the others,
	// most members placed first, then in the request's order.
	Domains []GangDomain
	// Complete is how many of Domains, the first ones, hold the whole
	// gang; Acceptable how many, the first ones, hold it whole or hold at
	// least GangParams.MinCount members (Complete without a MinCount).
	Complete, Acceptable int
	// Truncated is set when a search ran out of steps: some domain may
	// hold more than it says.
	Truncated bool
}

// GangDomain is how much of a gang one domain holds.
type GangDomain struct {
	// Aggregate is the domain's aggregate uuid ("" for the whole cloud).
	Aggregate string
	// Roots is how many root providers the domain has.
	Roots int
	// Placed is how many members fit in it at most, one after the other
	// (a member that does not fit is skipped, the later ones tried).
	Placed int
	// FirstUnplaced is the index in GangParams.Members of the first member
	// that did not fit, -1 when all did; Reasons then counts the domain's
	// roots by why that member found no candidate on each: the reasons of
	// Shortfall, GangShortSpread and GangShortTaken.
	FirstUnplaced int
	Reasons       map[string]int
	// RootsUsed is how many distinct roots the members placed use, and
	// EmptyStarted how many of them held nothing before (the fragments
	// the gang makes of empty hosts).
	RootsUsed    int
	EmptyStarted int
	// Members, for the first GangParams.Keep acceptable domains, are
	// where each member placed goes, in the order of GangParams.Members
	// (all of them for a complete domain).
	Members []GangMember
}

// GangMember is one member's place: its root and its allocation
// request.
type GangMember struct {
	// Member is the member's index in GangParams.Members.
	Member   int
	Root     string
	RootName string
	Request  AllocationRequest
	// Candidate is the answer (with CandidatesParams.VersionsOnly) whose
	// Requests are those of the domain's members with the same request
	// as this one, Request among them: its Record gives the snapshot's
	// records (before the gang) of the providers they use, for a caller
	// that builds its own view of them (a policy ranking the domain's
	// placement). Members with the same request share it.
	Candidate *Candidates
}

// Reasons of a GangDomain besides Shortfall's.
const (
	// GangShortSpread: with spread, another member is on the root.
	GangShortSpread = "used by another member (spread hosts)"
	// GangShortTaken: the root had room before, taken by the gang's
	// earlier members.
	GangShortTaken = "capacity taken by the gang's earlier members"
	// GangShortNoRoots: the aggregate has no root provider.
	GangShortNoRoots = "no root provider in the aggregate"
)

// Gang answers p by the simulation described at the top of this file. It
// writes nothing. Unknown resource classes and traits are
// *UnknownNameError, as for Candidates; its error is otherwise ctx's.
func (s *Snapshot) Gang(ctx context.Context, p *GangParams) (*Gang, error) {
	gs, err := s.newGangSearch(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &Gang{}
	domains := p.Domains
	if len(domains) == 0 {
		domains = []string{""}
	}
	seen := map[string]bool{}
	for _, agg := range domains {
		if seen[agg] {
			continue
		}
		seen[agg] = true
		d, err := gs.domain(ctx, agg)
		if err != nil {
			return nil, err
		}
		out.Domains = append(out.Domains, d)
	}
	for _, e := range gs.searches {
		out.Truncated = out.Truncated || (e != nil && e.stopped)
	}
	// Stable: the request's order breaks ties.
	slices.SortStableFunc(out.Domains, func(x, y GangDomain) int {
		xc, yc := x.FirstUnplaced < 0, y.FirstUnplaced < 0
		switch {
		case xc != yc:
			if xc {
				return -1
			}
			return 1
		case !xc:
			return y.Placed - x.Placed
		}
		if c := cmp.Compare(x.EmptyStarted, y.EmptyStarted); c != 0 {
			return c
		}
		return cmp.Compare(x.RootsUsed, y.RootsUsed)
	})
	keep := max(p.Keep, 1)
	for i := range out.Domains {
		d := &out.Domains[i]
		if d.FirstUnplaced >= 0 && (gs.minCount == 0 || d.Placed < gs.minCount) {
			break
		}
		if d.FirstUnplaced < 0 {
			out.Complete++
		}
		out.Acceptable++
		if i < keep {
			d.Members = gs.members(d.Aggregate, gs.placed[d.Aggregate])
		} else {
			delete(gs.placed, d.Aggregate)
		}
	}
	return out, nil
}

// gangSearch is the state of one Gang: a search per distinct request
// (nil: the request matches nothing), the member's request index, and
// each domain's placements (root and provider vector per member) until
// the answer is built.
type gangSearch struct {
	base     *Snapshot
	scratch  *Snapshot
	spread   bool
	searches []*search
	gens     []*gen
	reqOf    []int // per member: index in searches
	copied   []bool
	touched  []int32 // providers copied in the current domain
	buf      []int32
	opens    int
	placed   map[string][]gangPlace
	minCount int
}

// gangPlace is one member's place in a domain's simulation.
type gangPlace struct {
	member int
	root   int32
	vec    []int32
}

// newGangSearch resolves p's distinct requests over a scratch snapshot.
func (s *Snapshot) newGangSearch(ctx context.Context, p *GangParams) (*gangSearch, error) {
	gs := &gangSearch{base: s, spread: p.Spread, copied: make([]bool, s.provs.len()), placed: map[string][]gangPlace{},
		minCount: p.MinCount}
	gs.scratch = &Snapshot{names: s.names, provs: s.provs.clone(), idx: s.idx}
	steps := p.MaxSteps
	if steps <= 0 {
		steps = DefaultCapacitySteps
	}
	var distinct []*CandidatesParams
	for i := range p.Members {
		m := &p.Members[i]
		j := slices.IndexFunc(distinct, func(d *CandidatesParams) bool { return reflect.DeepEqual(d, m) })
		if j < 0 {
			req := *m
			req.Limit, req.Max, req.Randomize, req.Sample, req.MaxSteps = 0, 0, false, false, steps
			e, err := gs.scratch.newSearch(ctx, &req)
			if err != nil {
				return nil, err
			}
			j = len(distinct)
			distinct = append(distinct, m)
			gs.searches = append(gs.searches, e)
			var g *gen
			if e != nil {
				g = &gen{opts: make([][]int32, len(e.slots)), pos: make([]int, len(e.slots))}
			}
			gs.gens = append(gs.gens, g)
		}
		gs.reqOf = append(gs.reqOf, j)
	}
	return gs, nil
}

// domainRoots lists the roots of aggregate agg ("": every root), those
// whose tree holds something first, each part in the engine's order.
func (gs *gangSearch) domainRoots(agg string) []int32 {
	s := gs.base
	var roots []int32
	if agg == "" {
		roots = s.idx.roots
	} else if id, ok := s.names.aggByUUID[agg]; ok {
		for _, i := range s.idx.byAgg[id] {
			if s.idx.parent[i] < 0 {
				roots = append(roots, i)
			}
		}
	}
	used := make([]int32, 0, len(roots))
	empty := make([]int32, 0, len(roots))
	for _, r := range roots {
		if gs.treeInUse(r) {
			used = append(used, r)
		} else {
			empty = append(empty, r)
		}
	}
	return append(used, empty...)
}

// treeInUse reports whether some provider of root r's tree has usage.
func (gs *gangSearch) treeInUse(r int32) bool {
	s := gs.base
	inUse := func(p *ProviderRecord) bool {
		for j := range p.Inventories {
			if p.Inventories[j].Used > 0 {
				return true
			}
		}
		return false
	}
	if s.idx.flat {
		return inUse(s.provs.at(r))
	}
	for _, m := range s.idx.members.of(r) {
		if inUse(s.provs.at(m)) {
			return true
		}
	}
	return false
}

// domain simulates the gang in aggregate agg's roots and resets the
// scratch after it.
func (gs *gangSearch) domain(ctx context.Context, agg string) (GangDomain, error) {
	defer gs.reset()
	dl := gs.domainRoots(agg)
	d := GangDomain{Aggregate: agg, Roots: len(dl), FirstUnplaced: -1}
	n := len(gs.searches)
	failed := make([]posSet, n) // per request: positions in dl where it failed
	cursor := make([]int, n)
	used := make([]bool, len(dl))
	var order []int // positions in dl, in the order first used
	places := make([]gangPlace, 0, len(gs.reqOf))
	for m, r := range gs.reqOf {
		pos, err := gs.place(ctx, r, dl, used, order, &failed[r], &cursor[r])
		if err != nil {
			return d, err
		}
		if pos < 0 {
			if d.FirstUnplaced < 0 {
				d.FirstUnplaced = m
				d.Reasons = gs.why(r, dl, used)
			}
			continue
		}
		g, e := gs.gens[r], gs.searches[r]
		vec := make([]int32, len(e.slots))
		for si := range e.slots {
			vec[si] = g.prov(si)
			for _, ra := range e.slots[si].res {
				gs.take(vec[si], ra)
			}
		}
		places = append(places, gangPlace{member: m, root: dl[pos], vec: vec})
		d.Placed++
		if !used[pos] {
			used[pos] = true
			order = append(order, pos)
			d.RootsUsed++
			if !gs.treeInUse(dl[pos]) {
				d.EmptyStarted++
			}
		}
	}
	if d.FirstUnplaced < 0 || (gs.minCount > 0 && d.Placed >= gs.minCount) {
		gs.placed[agg] = places
	}
	return d, nil
}

// place finds a root in dl for a member of request r and leaves its
// candidate in gs.gens[r]; it returns the root's position in dl, -1 when
// none holds it. Without spread it tries the roots in use first (order).
func (gs *gangSearch) place(ctx context.Context, r int, dl []int32, used []bool, order []int, failed *posSet, cursor *int) (int, error) {
	if gs.searches[r] == nil {
		return -1, nil
	}
	if !gs.spread {
		for _, pos := range order {
			if failed.has(pos) {
				continue
			}
			ok, err := gs.try(ctx, r, dl[pos])
			if err != nil || ok {
				return pos, err
			}
			failed.add(pos, len(dl))
		}
	}
	for ; *cursor < len(dl); *cursor++ {
		pos := *cursor
		if used[pos] || failed.has(pos) {
			continue
		}
		ok, err := gs.try(ctx, r, dl[pos])
		if err != nil {
			return -1, err
		}
		if ok {
			return pos, nil
		}
		failed.add(pos, len(dl))
	}
	return -1, nil
}

// posSet is a set of positions in a domain's roots, a bit each, made on
// its first add (most requests of a gang fail on few roots).
type posSet []uint64

func (s posSet) has(pos int) bool { return len(s) > 0 && s[pos>>6]&(1<<(pos&63)) != 0 }

// add adds pos to s, whose positions are below n.
func (s *posSet) add(pos, n int) {
	if *s == nil {
		*s = make(posSet, (n+63)/64)
	}
	(*s)[pos>>6] |= 1 << (pos & 63)
}

// try opens request r's generator on root a, in the scratch.
func (gs *gangSearch) try(ctx context.Context, r int, a int32) (bool, error) {
	e, g := gs.searches[r], gs.gens[r]
	if gs.opens++; gs.opens&255 == 0 {
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	if e.stopped || !e.anchorOK(a) || !e.inAnchorSets(a) {
		return false, nil
	}
	clear(e.seen) // a member may repeat an earlier one
	var ok bool
	gs.buf, ok = e.open(g, a, gs.buf[:0])
	return ok && e.next(g), nil
}

// take adds amount ra to provider i's usage in the scratch, copying its
// record first (once per domain).
func (gs *gangSearch) take(i int32, ra resAmount) {
	if !gs.copied[i] {
		c := *gs.scratch.provs.at(i)
		c.Inventories = slices.Clone(c.Inventories)
		gs.scratch.provs.set(i, &c)
		gs.copied[i] = true
		gs.touched = append(gs.touched, i)
	}
	gs.scratch.provs.at(i).Inventory(ra.class).Used += ra.amount
}

// reset gives the scratch the real snapshot's records back.
func (gs *gangSearch) reset() {
	for _, i := range gs.touched {
		gs.scratch.provs.set(i, gs.base.provs.at(i))
		gs.copied[i] = false
	}
	gs.touched = gs.touched[:0]
}

// why counts dl's roots by why request r found no candidate on each,
// with the domain's earlier members in the scratch.
func (gs *gangSearch) why(r int, dl []int32, used []bool) map[string]int {
	out := map[string]int{}
	if len(dl) == 0 {
		out[GangShortNoRoots] = 0
		return out
	}
	e, g := gs.searches[r], gs.gens[r]
	if e == nil {
		out[ShortNoMatchAtAll] = len(dl)
		return out
	}
	stopped, steps := e.stopped, e.steps
	defer func() { e.snap, e.stopped, e.steps = gs.scratch, stopped, steps }()
	for pos, a := range dl {
		if gs.spread && used[pos] {
			out[GangShortSpread]++
			continue
		}
		// Why not before the gang: the engine's own reason; else the
		// gang's members took the room.
		e.snap = gs.base
		reason := ""
		if reason, gs.buf = e.rootReason(a, g, gs.buf); reason == "" {
			reason = GangShortTaken
		}
		out[reason]++
	}
	return out
}

// members builds the answer's members of an acceptable domain's places:
// one answer (search.result) per distinct request, its candidates the
// places of the members with that request.
func (gs *gangSearch) members(agg string, places []gangPlace) []GangMember {
	out := make([]GangMember, len(places))
	var found []int32
	var at []int // found's k-th vector is the place of out[at[k]]
	for r, e := range gs.searches {
		found, at = found[:0], at[:0]
		for i, pl := range places {
			if gs.reqOf[pl.member] == r {
				found, at = append(found, pl.vec...), append(at, i)
			}
		}
		if len(at) == 0 {
			continue
		}
		c := e.result(vectors{n: len(e.slots), provs: found}, true, false)
		for k, i := range at {
			rp := gs.base.provs.at(places[i].root)
			out[i] = GangMember{Member: places[i].member, Root: rp.UUID, RootName: rp.Name, Request: c.Requests[k], Candidate: c}
		}
	}
	delete(gs.placed, agg)
	return out
}
