package engine

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
)

// The combination search: a request's groups become slots, the anchors
// (roots) that may hold a candidate are found from the index lists, and
// each anchor's combinations are enumerated lazily, depth first, pruned as
// soon as a partial combination cannot work. Candidates (candidates.go)
// takes one combination per anchor in turn and turns them into the
// answer (search.result, in the same file).

// slot is one choice of the combination search: one resource class of the
// unsuffixed group, or one suffixed group. Which providers it may use
// under an anchor (the root of a tree) is worked out only when the search
// reaches that anchor (see options), so a request that stops at a limit
// looks at few trees.
type slot struct {
	group    int  // index in search.groups
	granular bool // a suffixed group
	res      []resAmount
	f        *filter // the group's criteria
	// drive lists providers among which every option of the slot is, or is
	// nil when any provider may be; it is only used to find anchors.
	drive []int32
	all   bool
	// invAt is where the last provider openOne read listed its
	// inventory of res[0]'s class (ProviderRecord.InventoryFrom's hint).
	invAt int
}

// search holds one request's search state.
type search struct {
	ctx         context.Context
	snap        *Snapshot
	anchorOK    func(int32) bool
	suffixes    []string // per group
	slots       []slot
	groupSlots  [][]int // per group: its slots
	lastShared  int     // last slot of the unsuffixed group, -1 if none
	sharedReq   [][]int32
	sharedTree  int32 // in_tree of the unsuffixed group: the only anchor; -1 for none
	isolate     bool
	nestedAware bool
	// skipEvac is set when the request avoids evacuated roots and some
	// provider of the snapshot is one (evacuatedTree).
	skipEvac bool
	// anchorSets are necessary conditions on anchors from the unsuffixed
	// group's traits and aggregates: each lists, ascending, the only
	// anchors that can satisfy one clause.
	anchorSets [][]int32
	subtrees   [][]int // per same_subtree: its slots, ascending
	slotTrees  [][]int // per slot: the same_subtrees it is in
	seen       map[string]struct{}
	steps      int
	maxSteps   int
	stopped    bool
	// oneEach is set when every anchor has at most one candidate, every
	// slot using the anchor itself: a flat cloud, the unsuffixed group
	// alone, no same_subtree. The search then checks each anchor with
	// openOne and nextOne instead of a generator (open and next).
	oneEach bool
	// oneSameClass, with oneEach, is set when two slots take the same
	// class: only then can their amounts together not fit (acceptOne).
	oneSameClass bool
	// scratch is roundRobin's working memory (searchScratches).
	scratch *searchScratch

	// A small request's slices and its first group's filter start here,
	// allocated with the search; groupSlots' lists are cut from slotIdx.
	suffixArr     [2]string
	groupSlotsArr [2][]int
	slotArr       [4]slot
	slotIdx       []int
	slotIdxArr    [4]int
	firstFilter   filter
}

// newSearch resolves p against s and prepares the search: the slots, the
// anchor conditions and same_subtree sets. It returns a nil engine (and no
// error) when some group can match nothing, which means no candidate. The
// engine reads capacity and usage through e.snap whenever it searches, so
// the snapshot may be swapped for one with the same providers' shape
// (see capacity.go).
func (s *Snapshot) newSearch(ctx context.Context, p *CandidatesParams) (*search, error) {
	rootReq, err := s.traitIDs(p.RootRequired)
	if err != nil {
		return nil, err
	}
	rootForbid, err := s.traitIDs(p.RootForbidden)
	if err != nil {
		return nil, err
	}
	e := &search{
		ctx: ctx, snap: s, lastShared: -1, sharedTree: -1, isolate: p.Isolate, nestedAware: p.NestedAware,
		maxSteps: p.MaxSteps, anchorOK: anyAnchor,
	}
	e.suffixes, e.groupSlots, e.slots, e.slotIdx = e.suffixArr[:0], e.groupSlotsArr[:0], e.slotArr[:0], e.slotIdxArr[:0]
	if len(rootReq) > 0 || len(rootForbid) > 0 {
		e.anchorOK = func(r int32) bool {
			rp := s.provs.at(r)
			for _, t := range rootReq {
				if !rp.hasTrait(t) {
					return false
				}
			}
			return !rp.hasAnyTrait(rootForbid)
		}
	}
	if p.AvoidEvacuated && s.idx.hasEvacuated {
		e.skipEvac = true
		ok := e.anchorOK
		e.anchorOK = func(r int32) bool { return !e.evacuatedTree(r) && ok(r) }
	}
	if e.maxSteps <= 0 {
		e.maxSteps = DefaultMaxSearchSteps
	}
	for gi := range p.Groups {
		g := &p.Groups[gi]
		e.suffixes = append(e.suffixes, g.Suffix)
		e.groupSlots = append(e.groupSlots, nil)
		ok, err := e.addGroup(gi, g)
		if err != nil {
			if e.someGroupEmpty() {
				return nil, nil
			}
			return nil, err
		}
		if !ok {
			return nil, nil
		}
	}
	// The unsuffixed group's slots go first so its collective trait check
	// prunes before the suffixed groups multiply the combinations.
	e.orderSlots()
	for _, st := range p.SameSubtrees {
		var set []int
		for _, suffix := range st {
			for gi, sfx := range e.suffixes {
				if sfx == suffix {
					set = append(set, e.groupSlots[gi]...)
				}
			}
		}
		slices.Sort(set)
		set = slices.Compact(set)
		if len(set) > 1 {
			e.subtrees = append(e.subtrees, set)
		}
	}
	if len(e.subtrees) > 0 {
		e.slotTrees = make([][]int, len(e.slots))
	}
	for ti, set := range e.subtrees {
		for _, si := range set {
			e.slotTrees[si] = append(e.slotTrees[si], ti)
		}
	}
	e.oneEach = s.idx.flat && len(e.slots) > 0 && e.lastShared == len(e.slots)-1 && len(e.subtrees) == 0
	for i := 0; e.oneEach && i < len(e.slots); i++ {
		for k := range i {
			e.oneSameClass = e.oneSameClass || e.slots[k].res[0].class == e.slots[i].res[0].class
		}
	}
	return e, nil
}

// anyAnchor is the anchorOK of a request without root conditions.
func anyAnchor(int32) bool { return true }

// slotIndexes returns the k slot indexes from first on, cut from
// e.slotIdx: a group's list in groupSlots.
func (e *search) slotIndexes(first, k int) []int {
	start := len(e.slotIdx)
	for i := range k {
		e.slotIdx = append(e.slotIdx, first+i)
	}
	return e.slotIdx[start:len(e.slotIdx):len(e.slotIdx)]
}

// someGroupEmpty reports whether a group resolved so far matches no
// provider at all, ignoring trees: Placement would have stopped there
// before resolving the names of later groups.
func (e *search) someGroupEmpty() bool {
	for i := range e.slots {
		sl := &e.slots[i]
		if sl.granular {
			if len(e.snap.matching(sl.f)) == 0 {
				return true
			}
			continue
		}
		any := false
		for _, p := range e.snap.idx.byClass[sl.res[0].class] {
			if e.snap.provs.at(p).Inventory(sl.res[0].class).fits(sl.res[0].amount) {
				any = true
				break
			}
		}
		if !any {
			return true
		}
	}
	return false
}

// addGroup resolves group g and adds its slots. It reports false when the
// group cannot match anything, which means no candidate at all.
func (e *search) addGroup(gi int, g *RequestGroup) (bool, error) {
	s := e.snap
	res, err := s.classIDs(g.Resources)
	if err != nil {
		return false, err
	}
	f := &e.firstFilter
	if gi > 0 {
		f = new(filter)
	}
	*f = filter{res: res, inTree: -1, memberOf: s.memberOfIDs(g.MemberOf), forbidAggs: s.aggIDs(g.ForbiddenAggregates)}
	for _, any := range f.memberOf {
		if len(any) == 0 {
			return false, nil
		}
	}
	if f.required, err = s.requiredIDs(g.RequiredTraits); err != nil {
		return false, err
	}
	if f.forbidden, err = s.traitIDs(g.ForbiddenTraits); err != nil {
		return false, err
	}
	if g.InTree != "" {
		r, ok := s.treeOf(g.InTree)
		if !ok {
			return false, nil
		}
		// Placement applies in_tree only where it looks for resources, so a
		// resourceless group ignores it.
		if len(res) > 0 {
			f.inTree = r
		}
	}
	if g.Suffix != "" {
		if len(res) == 0 && len(f.required) == 0 && len(f.memberOf) == 0 {
			// Placement finds the providers of a resourceless group among
			// those its required traits and aggregates select; with
			// neither, that is none.
			return false, nil
		}
		sl := slot{group: gi, granular: true, res: res, f: f}
		sl.drive, sl.all = s.driver(f)
		e.groupSlots[gi] = e.slotIndexes(len(e.slots), 1)
		e.slots = append(e.slots, sl)
		return true, nil
	}

	// The unsuffixed group: one slot per class, each class from any
	// provider of the anchor's tree or a sharing provider it reaches.
	if len(res) == 0 {
		return false, nil
	}
	e.sharedReq = f.required
	e.sharedTree = f.inTree
	for _, any := range f.required {
		set := e.anchorsWithAnyTrait(any)
		if len(set) == 0 {
			return false, nil
		}
		e.anchorSets = append(e.anchorSets, set)
	}
	if len(f.memberOf) > 0 {
		// Every option is in the aggregates, or its root is: either way the
		// anchor is reached by a provider in the aggregates.
		set := e.anchorsOf(s.matching(&filter{inTree: -1, memberOf: f.memberOf}))
		if len(set) == 0 {
			return false, nil
		}
		e.anchorSets = append(e.anchorSets, set)
	}
	// The slots' order is the order of the classes in the answer.
	// Placement lists them by class id when it takes its multi-provider
	// path, which it does as soon as the cloud has a nested tree or a
	// sharing provider; otherwise one provider has them all, in the order
	// the request named them.
	ordered := res // not to be changed: f's
	if s.idx.hasTrees || s.idx.hasSharing {
		ordered = slices.Clone(res)
		slices.SortStableFunc(ordered, func(a, b resAmount) int { return int(a.class - b.class) })
	}
	// Each slot's res is cut from ordered (one class each).
	e.slots = slices.Grow(e.slots, len(ordered))
	e.groupSlots[gi] = e.slotIndexes(len(e.slots), len(ordered))
	for k, ra := range ordered {
		sl := slot{group: gi, res: ordered[k : k+1 : k+1], f: f, drive: s.idx.byClass[ra.class]}
		e.slots = append(e.slots, sl)
	}
	return true, nil
}

// anchorsWithAnyTrait lists, ascending, the anchors under which some
// provider has one of the traits: a necessary condition for the unsuffixed
// group's collective trait check, cheap to compute from the trait index.
func (e *search) anchorsWithAnyTrait(traits []int32) []int32 {
	var provs []int32
	for _, t := range traits {
		provs = append(provs, e.snap.idx.byTrait[t]...)
	}
	return e.anchorsOf(provs)
}

// anchorsOf lists, ascending, the anchors the providers reach: their roots
// and, for sharing providers, the roots they share with. The answer must
// not be changed: in a cloud of root providers that share nothing it is
// provs itself, when provs is strictly ascending (an index list, say), so
// that a claim's search does not copy the list of every compute node.
func (e *search) anchorsOf(provs []int32) []int32 {
	s := e.snap
	if s.idx.flat && strictlyAscending(provs) {
		return provs
	}
	out := make([]int32, 0, len(provs))
	for _, i := range provs {
		out = append(out, s.idx.root[i])
		if s.idx.sharing[i] {
			out = append(out, s.idx.anchors.of(i)...)
		}
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return slices.Compact(out)
}

func strictlyAscending(xs []int32) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i] <= xs[i-1] {
			return false
		}
	}
	return true
}

// orderSlots moves the unsuffixed group's slots to the front, keeping the
// request order otherwise, and renumbers groupSlots accordingly.
func (e *search) orderSlots() {
	if !slices.IsSortedFunc(e.slots, func(a, b slot) int { return cmp.Compare(b2i(a.granular), b2i(b.granular)) }) {
		e.reorderSlots()
	}
	for n := range e.slots {
		if !e.slots[n].granular {
			e.lastShared = n
		}
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reorderSlots is orderSlots for slots out of order.
func (e *search) reorderSlots() {
	order := make([]int, 0, len(e.slots))
	for i, sl := range e.slots {
		if !sl.granular {
			order = append(order, i)
		}
	}
	for i, sl := range e.slots {
		if sl.granular {
			order = append(order, i)
		}
	}
	newIndex := make([]int, len(e.slots))
	slots := make([]slot, len(e.slots))
	for n, old := range order {
		slots[n] = e.slots[old]
		newIndex[old] = n
	}
	e.slots = slots
	for gi := range e.groupSlots {
		for k, old := range e.groupSlots[gi] {
			e.groupSlots[gi][k] = newIndex[old]
		}
	}
}

// candidateAnchors returns, ascending, the roots that may anchor a
// candidate: those reached by the providers of the slot (or anchor
// condition) with the shortest driving list. Each is checked in full
// when the search gets to it. The answer may be shared with the
// snapshot's index: it must not be changed.
func (e *search) candidateAnchors() []int32 {
	s := e.snap
	if e.sharedTree >= 0 {
		return []int32{e.sharedTree}
	}
	var best []int32
	bestSet := false
	for _, set := range e.anchorSets {
		if !bestSet || len(set) < len(best) {
			best, bestSet = set, true
		}
	}
	var drive []int32
	driveSet := false
	for i := range e.slots {
		sl := &e.slots[i]
		if !sl.all && (!driveSet || len(sl.drive) < len(drive)) {
			drive, driveSet = sl.drive, true
		}
	}
	if driveSet && (!bestSet || len(drive) < len(best)) {
		if s.idx.flat {
			// A slot's driving list is one of the index lists (driver,
			// byClass), strictly ascending by construction (buildIndex
			// appends each provider once, in index order), so in a flat
			// cloud it is its own list of anchors: no pass over it.
			return drive
		}
		return e.anchorsOf(drive)
	}
	if bestSet {
		return best
	}
	return s.idx.roots
}

// evacuatedTree reports whether provider i's root is evacuated and the
// request avoids evacuated roots.
func (e *search) evacuatedTree(i int32) bool {
	ix := e.snap.idx
	return e.skipEvac && ix.evacuated[ix.root[i]]
}

// options appends to buf the providers slot sl may use under anchor r,
// ascending: providers of r's tree, then sharing providers of other trees
// that r reaches.
func (e *search) options(sl *slot, r int32, buf []int32) []int32 {
	s := e.snap
	start := len(buf)
	if sl.granular {
		for _, m := range s.idx.members.of(r) {
			if s.matches(m, sl.f) {
				buf = append(buf, m)
			}
		}
		for _, m := range s.idx.sharedTo.of(r) {
			if s.matches(m, sl.f) && !e.evacuatedTree(m) {
				buf = append(buf, m)
			}
		}
	} else {
		f, ra := sl.f, sl.res[0]
		rp := s.provs.at(r)
		if s.idx.flat {
			// In a flat cloud r's tree is r alone and nothing shares: the
			// options are r or none, read from r's record without the
			// members and sharedTo lists (two more cache misses per
			// anchor in a large snapshot).
			if (f.inTree < 0 || f.inTree == r) && !rp.inAnyAgg(f.forbidAggs) && e.sharedOK(rp, ra) && inAllAggs(rp, f.memberOf) {
				buf = append(buf, r)
			}
			return buf
		}
		if (f.inTree < 0 || f.inTree == r) && !rp.inAnyAgg(f.forbidAggs) {
			rootMember := len(f.memberOf) == 0 || inAllAggs(rp, f.memberOf)
			for _, m := range s.idx.members.of(r) {
				p := s.provs.at(m)
				if e.sharedOK(p, ra) && (rootMember || inAllAggs(p, f.memberOf)) {
					buf = append(buf, m)
				}
			}
			if f.inTree < 0 {
				for _, m := range s.idx.sharedTo.of(r) {
					p := s.provs.at(m)
					if e.sharedOK(p, ra) && inAllAggs(p, f.memberOf) && !e.evacuatedTree(m) {
						buf = append(buf, m)
					}
				}
			}
		}
	}
	if opts := buf[start:]; !slices.IsSorted(opts) {
		slices.Sort(opts)
	}
	return buf
}

// openOne is what open reports for anchor a when e.oneEach: whether
// every slot has an option under a (a itself, options' flat case).
func (e *search) openOne(a int32) bool {
	f := e.slots[e.lastShared].f // every slot's
	rp := e.snap.provs.at(a)
	if f.inTree >= 0 && f.inTree != a || rp.inAnyAgg(f.forbidAggs) || rp.hasAnyTrait(f.forbidden) || !inAllAggs(rp, f.memberOf) {
		return false
	}
	for i := range e.slots {
		sl := &e.slots[i]
		ra := sl.res[0]
		var inv *InventoryRecord
		if inv, sl.invAt = rp.InventoryFrom(ra.class, sl.invAt); inv == nil || !inv.fits(ra.amount) {
			return false
		}
	}
	return true
}

// step counts one step of the search: false, the search stopped, when
// its budget is spent or its request has ended.
func (e *search) step() bool {
	e.steps++
	if e.steps < e.maxSteps && e.steps&0xffff != 0 {
		return true
	}
	return e.mayGoOn()
}

// mayGoOn is step's rare case, kept out of it so that step inlines: the
// budget spent, or every 65,536 steps, the request's context asked.
//
//go:noinline
func (e *search) mayGoOn() bool {
	if e.steps >= e.maxSteps || e.ctx.Err() != nil {
		e.stopped = true
		return false
	}
	return true
}

// nextOne is what next reports for the generator of anchor a when
// e.oneEach, its first call: whether the combination of a in every slot
// is accepted, counting the steps next counts on the way.
func (e *search) nextOne(a int32) bool {
	for d := range e.slots {
		if !e.step() {
			return false
		}
		if !e.acceptOne(a, d) {
			return false
		}
	}
	return true
}

// acceptOne is accept for slot d when every slot of e uses provider p
// (e.oneEach): the capacity of what slots 0..d take of one class
// together, the unsuffixed group's traits. (Isolation, one provider
// per tree and same_subtree cannot refuse it.)
func (e *search) acceptOne(p int32, d int) bool {
	if e.oneSameClass && !e.sameClassFits(p, d) {
		return false
	}
	if d == e.lastShared && len(e.sharedReq) > 0 {
		rp := e.snap.provs.at(p)
		for _, any := range e.sharedReq {
			if !rp.hasAnyTrait(any) {
				return false
			}
		}
	}
	return true
}

// sameClassFits reports whether what slot d and earlier slots take of
// its class from p, when more than one of them takes it, fits p's
// inventory (accept's check when every slot uses p).
func (e *search) sameClassFits(p int32, d int) bool {
	for _, r := range e.slots[d].res {
		total, shared := r.amount, false
		for i := 0; i < d; i++ {
			for _, r2 := range e.slots[i].res {
				if r2.class == r.class {
					total += r2.amount
					shared = true
				}
			}
		}
		if shared && !e.snap.provs.at(p).Inventory(r.class).fitsTotal(total) {
			return false
		}
	}
	return true
}

// sharedOK checks a provider for one class of the unsuffixed group: the
// amount fits, and it has no forbidden trait or aggregate.
func (e *search) sharedOK(p *ProviderRecord, ra resAmount) bool {
	f := e.slots[e.lastShared].f
	inv := p.Inventory(ra.class)
	return inv != nil && inv.fits(ra.amount) && !p.hasAnyTrait(f.forbidden) && !p.inAnyAgg(f.forbidAggs)
}

// gen enumerates the candidates of one anchor lazily, depth first.
type gen struct {
	anchor int32
	opts   [][]int32 // per slot
	pos    []int     // per slot: index in opts, -1 when unassigned
	leaf   bool      // pos holds a complete candidate already returned
}

// prov is the provider slot i uses in g's current combination.
func (g *gen) prov(i int) int32 { return g.opts[i][g.pos[i]] }

// roundRobin takes one candidate from each anchor in turn, so a capped
// answer is spread over many trees rather than being the first
// combinations of one. It returns the candidates as provider vectors (one
// provider per slot) and whether the search ran to completion. With
// shuffle it visits the anchors in random order, shuffling anchors in
// place only as far as it gets (a sample of a hundred candidates need
// not shuffle ten thousand roots). The vectors live in e.scratch until
// releaseScratch.
func (e *search) roundRobin(anchors []int32, want int, shuffle bool) (vectors, bool) {
	rr := e.startRobin(anchors, want, shuffle)
	defer rr.release()
	if e.oneEach {
		// Each anchor gave at most one candidate: the later rounds would
		// find no more, and end as soon as want are found.
		complete := rr.firstRound(anchors) && !e.stopped && rr.found < want
		return rr.vectors(), complete
	}
	if !rr.firstRound(anchors) {
		return rr.vectors(), false
	}
	complete := rr.nextRounds()
	return rr.vectors(), complete
}

// vectors are provider vectors of n providers each (one per slot), one
// after the other.
type vectors struct {
	n     int
	provs []int32
}

// len is the number of vectors.
func (v vectors) len() int {
	if v.n == 0 {
		return 0
	}
	return len(v.provs) / v.n
}

// at is vector i.
func (v vectors) at(i int) []int32 {
	return v.provs[i*v.n : (i+1)*v.n : (i+1)*v.n]
}

// robin is the state of one roundRobin, in e.scratch's buffers until
// release hands them back.
type robin struct {
	e       *search
	sc      *searchScratch
	n       int // slots: the length of a provider vector
	want    int
	shuffle bool
	draw    sparseShuffle // with shuffle
	found   int           // candidates found
	arena   []int32       // their provider vectors, one after the other
	ring    []*gen        // the generators that may have more
	// Generators and their option lists are allocated in chunks of
	// chunk: one allocation per anchor adds up. The first chunk is the
	// scratch's.
	chunk      int
	firstChunk bool
	gens       []gen
	optsBuf    [][]int32
	posBuf     []int
	provBuf    []int32
}

// startRobin sets up a roundRobin in e's scratch (a new one if e has
// none).
func (e *search) startRobin(anchors []int32, want int, shuffle bool) robin {
	sc := e.scratch
	if sc == nil {
		sc = &searchScratch{}
		e.scratch = sc
	}
	n := len(e.slots)
	rr := robin{e: e, sc: sc, n: n, want: want, shuffle: shuffle,
		arena: sc.arena[:0], ring: sc.ring[:0], provBuf: sc.provBuf[:0],
		// At most want generators are kept by the first round.
		chunk: min(len(anchors), want, 1024), firstChunk: true}
	if c := min(want, 4096) * n; cap(rr.arena) < c {
		rr.arena = make([]int32, 0, c)
	}
	if shuffle {
		rr.draw = sparseShuffle{list: anchors, moved: sc.moved}
		clear(rr.draw.moved)
		if len(anchors) <= maxPooledScratch {
			if len(sc.dense) < len(anchors) {
				sc.dense = make([]int32, len(anchors))
			}
			rr.draw.dense, rr.draw.set = sc.dense[:len(anchors)], sc.set[:0]
		}
	}
	return rr
}

// release hands rr's buffers back to the scratch, emptied.
func (rr *robin) release() {
	sc := rr.sc
	sc.arena, sc.ring, sc.provBuf = rr.arena[:0], rr.ring[:0], rr.provBuf[:0]
	if rr.shuffle {
		if len(rr.draw.moved) > maxPooledScratch {
			rr.draw.moved = nil // a large draw's map is left to the collector
		}
		clear(rr.draw.moved)
		sc.moved = rr.draw.moved
		if rr.draw.dense != nil {
			rr.draw.clearDense()
			if cap(rr.draw.set) <= maxPooledScratch {
				sc.set = rr.draw.set
			}
		}
	}
}

// firstRound visits the anchors (in shuffled order with shuffle), opens
// a generator on each that may hold a candidate and takes its first;
// the generators that gave one go on the ring. It reports false when it
// stopped early: want candidates found, or the search stopped.
func (rr *robin) firstRound(anchors []int32) bool {
	e := rr.e
	var aheadArr [drawAhead]int32
	var ahead []int32 // anchors drawn, not yet visited
	for k := range anchors {
		if rr.found >= rr.want || e.stopped {
			return false
		}
		a := anchors[k]
		if rr.shuffle {
			if len(ahead) == 0 {
				ahead = rr.draw.nextN(k, min(drawAhead, len(anchors)-k, rr.want-rr.found), aheadArr[:0])
				e.snap.touch(ahead)
			}
			a, ahead = ahead[0], ahead[1:]
		}
		if !e.anchorOK(a) || !e.inAnchorSets(a) {
			continue
		}
		if e.oneEach {
			if e.openOne(a) && e.nextOne(a) {
				rr.takeOne(a)
			}
			continue
		}
		g, ok := rr.open(a)
		if !ok {
			continue
		}
		if rr.take(g) {
			rr.ring = append(rr.ring, g)
		}
	}
	return true
}

// nextRounds takes one more candidate from each generator of the ring
// in turn, dropping those that have no more, until want are found, the
// search stops or the ring is empty. It reports whether the search ran
// to completion.
func (rr *robin) nextRounds() bool {
	e := rr.e
	for len(rr.ring) > 0 {
		next := rr.ring[:0]
		for _, g := range rr.ring {
			if rr.found >= rr.want || e.stopped {
				return false
			}
			if rr.take(g) {
				next = append(next, g)
			}
		}
		rr.ring = next
	}
	return !e.stopped
}

// open points the next free generator at anchor a (search.open). It
// reports false when a has no candidate; the generator's storage is then
// reused for the next anchor.
func (rr *robin) open(a int32) (*gen, bool) {
	n := rr.n
	if len(rr.gens) == 0 {
		rr.newChunk()
	}
	g := &rr.gens[0]
	g.opts, g.pos = rr.optsBuf[:n:n], rr.posBuf[:n:n]
	var ok bool
	if rr.provBuf, ok = rr.e.open(g, a, rr.provBuf); !ok {
		return nil, false
	}
	rr.gens, rr.optsBuf, rr.posBuf = rr.gens[1:], rr.optsBuf[n:], rr.posBuf[n:]
	return g, true
}

// newChunk makes the storage of chunk more generators: the scratch's
// for the first chunk when it is large enough (a first chunk made anew
// becomes the scratch's).
func (rr *robin) newChunk() {
	n, sc, chunk := rr.n, rr.sc, rr.chunk
	if rr.firstChunk && len(sc.gens) >= chunk && len(sc.optsBuf) >= chunk*n && len(sc.posBuf) >= chunk*n {
		rr.gens, rr.optsBuf, rr.posBuf = sc.gens[:chunk], sc.optsBuf[:chunk*n], sc.posBuf[:chunk*n]
	} else {
		rr.gens, rr.optsBuf, rr.posBuf = make([]gen, chunk), make([][]int32, chunk*n), make([]int, chunk*n)
		if rr.firstChunk {
			sc.gens, sc.optsBuf, sc.posBuf = rr.gens, rr.optsBuf, rr.posBuf
		}
	}
	rr.firstChunk = false
}

// vectors are the provider vectors of the candidates found, in the
// arena.
func (rr *robin) vectors() vectors { return vectors{n: rr.n, provs: rr.arena} }

// takeOne appends the candidate of anchor a to the arena (oneEach:
// every slot uses a), as take does.
func (rr *robin) takeOne(a int32) {
	for range rr.n {
		rr.arena = append(rr.arena, a)
	}
	rr.found++
}

// take appends g's next candidate's provider vector to the arena; it
// reports false when g has no more.
func (rr *robin) take(g *gen) bool {
	if !rr.e.next(g) {
		return false
	}
	for i := 0; i < rr.n; i++ {
		rr.arena = append(rr.arena, g.prov(i))
	}
	rr.found++
	return true
}

// drawAhead is how many shuffled anchors roundRobin draws at a time: their
// records are read in a loop of their own (Snapshot.touch) before the
// search visits them one by one. The order of the anchors is the same;
// no more are drawn at a time than candidates are still wanted (each
// anchor the first round visits gives one at most), and at most
// drawAhead-1 are drawn and not visited.
const drawAhead = 16

// touch reads the records of the providers in list (the lines a search
// and its answer read), and their inventories, in loops of independent loads. In a large snapshot the
// records of a random sample are scattered over a heap much larger than
// the CPU's caches; read one anchor at a time, as the search does, each
// anchor's misses (its record, then its inventories) wait for the
// previous anchor's, while loads that do not depend on one another
// overlap. It returns a sum only so that the loads are kept: it must not
// be inlined, or the compiler drops the loads whose sum its caller
// ignores.
//
//go:noinline
func (s *Snapshot) touch(list []int32) int {
	n := 0
	for _, i := range list {
		// A record spans three cache lines: the first holds its id and
		// uuid (read by the answer and by claims' views), the second
		// its inventories' slice.
		p := s.provs.at(i)
		n += int(p.ID) + len(p.Inventories)
	}
	for _, i := range list {
		// An inventory record is a cache line: each of a compute
		// node's few, which a search checks in turn, is read.
		invs := s.provs.at(i).Inventories
		for k := range min(len(invs), 4) {
			n += int(invs[k].Class)
		}
	}
	return n
}

// searchScratch is roundRobin's working memory: generators, option lists
// and provider vectors, which die with the request. A claim's sample
// needs some 30 KB of it; requests reuse it through searchScratches
// instead of allocating (and clearing) it anew.
type searchScratch struct {
	gens    []gen
	optsBuf [][]int32
	posBuf  []int
	provBuf []int32
	arena   []int32
	ring    []*gen
	// sparseShuffle's: moved for a long list, dense (all zero between
	// searches) and set for one of at most maxPooledScratch anchors.
	moved map[int]int32
	dense []int32
	set   []int32
	// summarised are the result builder's bits, one per provider, all
	// clear between searches.
	summarised []uint64
}

// sparseShuffle draws the elements of list in uniformly random order
// (Fisher-Yates) without changing list: moved holds, by position, the
// elements a step swapped in, so k draws cost O(k) time and memory
// whatever the length of list. With dense, the positions are held there
// instead of in moved.
type sparseShuffle struct {
	list  []int32
	moved map[int]int32
	// dense, when not nil, has one entry per position of list: the
	// element a step swapped in plus one, or 0 for none; it is all zero
	// before the first draw and again after clearDense. set lists the
	// positions written (a position may be listed more than once).
	dense []int32
	set   []int32
}

// at is the element now at position i.
func (d *sparseShuffle) at(i int) int32 {
	if d.dense != nil {
		if v := d.dense[i]; v != 0 {
			return v - 1
		}
		return d.list[i]
	}
	if v, ok := d.moved[i]; ok {
		return v
	}
	return d.list[i]
}

// clearDense sets dense to all zero again, leaving set empty.
func (d *sparseShuffle) clearDense() {
	for _, j := range d.set {
		d.dense[j] = 0
	}
	d.set = d.set[:0]
}

// nextN appends to out the elements k to k+m-1 of the shuffled order (m
// at most drawAhead); calls must ask for k = 0, then the k after the last
// call's elements, and so on. The random positions are
// drawn first and the list read at them in a loop of independent loads
// (readPositions): in a large list each is a cache miss, which would
// otherwise wait for the previous step's map updates.
func (d *sparseShuffle) nextN(k, m int, out []int32) []int32 {
	var posArr [drawAhead]int
	pos := posArr[:0]
	for i := k; i < k+m; i++ {
		pos = append(pos, i+rand.IntN(len(d.list)-i))
	}
	readPositions(d.list, pos)
	for i, j := range pos {
		out = append(out, d.step(k+i, j))
	}
	return out
}

// readPositions reads list at each of pos. It returns a sum only so that
// the loads are kept: it must not be inlined (see Snapshot.touch).
//
//go:noinline
func readPositions(list []int32, pos []int) int {
	n := 0
	for _, j := range pos {
		n += int(list[j])
	}
	return n
}

// step swaps positions k and j of the shuffle (j >= k) and returns the
// element that was at j: the k-th element of the shuffled order.
func (d *sparseShuffle) step(k, j int) int32 {
	a := d.at(j)
	if d.dense != nil {
		if j != k {
			if d.dense[j] == 0 {
				d.set = append(d.set, int32(j))
			}
			d.dense[j] = d.at(k) + 1
		}
		d.dense[k] = 0 // position k is never read again
		return a
	}
	if j != k {
		if d.moved == nil {
			d.moved = map[int]int32{}
		}
		d.moved[j] = d.at(k)
	}
	delete(d.moved, k) // position k is never read again
	return a
}

// searchScratches holds searchScratch values between requests.
var searchScratches = sync.Pool{New: func() any { return new(searchScratch) }}

// maxPooledScratch bounds, in elements, the buffers a searchScratch keeps
// when it goes back to the pool: a large answer's buffers are left to
// the garbage collector.
const maxPooledScratch = 1 << 14

// releaseScratch returns e's scratch to the pool, once nothing refers to
// the provider vectors roundRobin returned.
func (e *search) releaseScratch() {
	sc := e.scratch
	e.scratch = nil
	if sc == nil || cap(sc.arena) > maxPooledScratch ||
		cap(sc.ring) > maxPooledScratch || len(sc.optsBuf) > maxPooledScratch || cap(sc.provBuf) > maxPooledScratch {
		return
	}
	searchScratches.Put(sc)
}

// open points g, whose opts and pos have one entry per slot, at anchor a:
// it works out each slot's options under a, cutting them from buf (grown
// in chunks as needed), and returns buf. It reports false, leaving g
// unusable, when some slot has no option.
func (e *search) open(g *gen, a int32, buf []int32) ([]int32, bool) {
	g.anchor, g.leaf = a, false
	for i := range e.slots {
		if cap(buf)-len(buf) < 64 {
			// Chunks grow from 512 to 16,384 providers: a claim's sample
			// opens about a hundred small trees, a full answer thousands.
			buf = make([]int32, 0, min(max(2*cap(buf), 512), 16384))
		}
		start := len(buf)
		buf = e.options(&e.slots[i], a, buf)
		g.opts[i] = buf[start:len(buf):len(buf)]
		g.pos[i] = -1
		if len(g.opts[i]) == 0 {
			return buf, false
		}
	}
	return buf, true
}

// inAnchorSets reports whether anchor a is in every anchor set.
func (e *search) inAnchorSets(a int32) bool {
	for _, set := range e.anchorSets {
		if _, ok := slices.BinarySearch(set, a); !ok {
			return false
		}
	}
	return true
}

// next advances g to its next valid combination.
func (e *search) next(g *gen) bool {
	n := len(e.slots)
	d := 0
	if g.leaf {
		d = n - 1
		g.leaf = false
	} else if g.pos[0] >= 0 {
		return false // exhausted earlier
	}
	for d >= 0 {
		g.pos[d]++
		if g.pos[d] >= len(g.opts[d]) {
			g.pos[d] = -1
			d--
			continue
		}
		if !e.step() {
			return false
		}
		if !e.accept(g, d) {
			continue
		}
		if d < n-1 {
			d++
			continue
		}
		if e.duplicate(g) {
			continue
		}
		g.leaf = true
		return true
	}
	// Exhausted: leave pos[0] at len so later calls return false at once.
	g.pos[0] = len(g.opts[0])
	return false
}

// accept checks the constraints that slot d's choice can break, given
// slots 0..d-1: consolidated capacity, group_policy=isolate, one provider
// per tree below 1.29, the unsuffixed group's traits, same_subtree.
func (e *search) accept(g *gen, d int) bool {
	s := e.snap
	p := g.prov(d)
	sd := &e.slots[d]
	for i := 0; i < d; i++ {
		q := g.prov(i)
		si := &e.slots[i]
		if q == p {
			if e.isolate && sd.granular && si.granular {
				return false
			}
			continue
		}
		if !e.nestedAware && len(sd.res) > 0 && len(si.res) > 0 && s.idx.root[q] == s.idx.root[p] {
			return false
		}
	}
	// Capacity of what this and earlier slots take from p together.
	for _, r := range sd.res {
		total := r.amount
		shared := false
		for i := 0; i < d; i++ {
			if g.prov(i) != p {
				continue
			}
			for _, r2 := range e.slots[i].res {
				if r2.class == r.class {
					total += r2.amount
					shared = true
				}
			}
		}
		if shared && !s.provs.at(p).Inventory(r.class).fitsTotal(total) {
			return false
		}
	}
	if d == e.lastShared && len(e.sharedReq) > 0 && !e.sharedTraitsOK(g) {
		return false
	}
	if e.slotTrees == nil {
		return true // no same_subtree
	}
	for _, ti := range e.slotTrees[d] {
		if !e.subtreeOK(g, d, e.subtrees[ti]) {
			return false
		}
	}
	return true
}

// sharedTraitsOK reports whether the providers of the unsuffixed group's
// slots together have its required traits.
func (e *search) sharedTraitsOK(g *gen) bool {
	for _, any := range e.sharedReq {
		ok := false
		for i := 0; i <= e.lastShared && !ok; i++ {
			ok = e.snap.provs.at(g.prov(i)).hasAnyTrait(any)
		}
		if !ok {
			return false
		}
	}
	return true
}

// subtreeOK checks a same_subtree set once slot d is chosen: the chosen
// providers of the set must have a lowest common ancestor among them, or
// (if slots of the set remain) one of the remaining slots must be able to
// supply an ancestor of all of them.
func (e *search) subtreeOK(g *gen, d int, set []int) bool {
	s := e.snap
	lca := int32(-1)
	assigned := 0
	for _, si := range set {
		if si > d {
			break
		}
		p := g.prov(si)
		if assigned == 0 {
			lca = p
		} else if lca = s.lca(lca, p); lca < 0 {
			return false // different trees can never share a subtree
		}
		assigned++
	}
	for _, si := range set {
		if si <= d && g.prov(si) == lca {
			return true
		}
	}
	for _, si := range set {
		if si <= d {
			continue
		}
		for _, q := range g.opts[si] {
			if s.isAncestorOrSelf(q, lca) {
				return true
			}
		}
	}
	return false
}

// duplicate reports whether g's combination was already produced under
// another anchor. Only combinations made of sharing providers alone can be:
// any other provider belongs to exactly one anchor's tree.
func (e *search) duplicate(g *gen) bool {
	s := e.snap
	if !s.idx.hasSharing {
		// Nothing shares: not even one read of the sharing flags, which
		// in a large snapshot is a cache miss per candidate.
		return false
	}
	for i := range e.slots {
		if !s.idx.sharing[g.prov(i)] {
			return false
		}
	}
	key := make([]byte, 0, 4*len(e.slots))
	for i := range e.slots {
		p := g.prov(i)
		key = append(key, byte(p), byte(p>>8), byte(p>>16), byte(p>>24))
	}
	if e.seen == nil {
		e.seen = map[string]struct{}{}
	}
	if _, dup := e.seen[string(key)]; dup {
		return true
	}
	e.seen[string(key)] = struct{}{}
	return false
}
