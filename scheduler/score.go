package scheduler

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/engine"
)

// Scoring on the engine's records: a claim's sample is a hundred
// candidates, of which it writes one and answers with two or three more.
// When the policy reads nothing of a candidate but what it takes and the
// inventories it takes it from (Policy.Direct), RankDirect filters and
// weighs the engine's answer on the snapshot's records, with the same
// functions Rank's units run on views (capacityStatus,
// ResourceWeigher.raw, over a candidate's takes), and views are built
// only for the candidates the claim may read.

// take is one class a candidate takes from one provider, with that
// provider's inventory of the class (found false: the provider has none,
// or there is no view of it; the inventory's fields are then zero).
type take struct {
	class  string
	amount int64
	found  bool
	// The inventory: engine.InventoryUsage's Capacity, Used, MinUnit,
	// MaxUnit, StepSize.
	capacity, used, minUnit, maxUnit, stepSize int64
}

// takes appends what c takes to buf: provider by provider in the
// allocations' order, each provider's classes in name order, with the
// provider's inventory from its view. A caller passes a small array's
// slice to keep the common case off the heap.
func (c *Candidate) takes(buf []take) []take {
	for _, a := range c.Allocations {
		p := c.Providers[a.ProviderUUID]
		var amounts [8]engine.ResourceAmount
		for _, ca := range sortedAmounts(amounts[:0], a.Resources) {
			t := take{class: ca.Class, amount: ca.Amount}
			if p != nil {
				if inv := p.Resources.Find(ca.Class); inv != nil {
					t.found = true
					t.capacity, t.used = inv.Capacity, inv.Used
					t.minUnit, t.maxUnit, t.stepSize = inv.MinUnit, inv.MaxUnit, inv.StepSize
				}
			}
			buf = append(buf, t)
		}
	}
	return buf
}

// recordTakes is takes for candidate i of lc, read from the snapshot's
// records (engine.Candidates.AllocationRecord) instead of views, and
// from what the engine's answer says it takes, its request built or not
// (engine.Candidates.AllocationResources); ids caches the class ids of
// the names met and the name order of the last list of classes met.
func recordTakes(buf []take, lc *engine.Candidates, i int, ids *classIDs) []take {
	for j, n := 0, lc.AllocationCount(i); j < n; j++ {
		rec := lc.AllocationRecord(i, j)
		var res [8]engine.ResourceAmount
		got := lc.AllocationResources(i, j, res[:0])
		if len(got) > len(ids.shape.classes) {
			buf = appendTakes(buf, rec, sortedAmounts(nil, got), ids)
			continue
		}
		buf = shapeTakes(buf, rec, got, ids.shapeOf(got))
	}
	return buf
}

// shapeTakes appends the takes of amounts from rec, in name order: sh is
// amounts' shape (classIDs.shapeOf).
func shapeTakes(buf []take, rec *engine.ProviderRecord, amounts []engine.ResourceAmount, sh *classShape) []take {
	buf = slices.Grow(buf, len(amounts))
	for k := range amounts {
		ca := &amounts[sh.order[k]]
		buf = buf[:len(buf)+1]
		t := &buf[len(buf)-1]
		*t = take{class: ca.Class, amount: ca.Amount}
		if sh.known[k] {
			sh.at[k] = t.setInventoryAt(rec, sh.ids[k], sh.at[k])
		}
	}
	return buf
}

// appendTakes appends the takes of amounts, in name order, from rec.
func appendTakes(buf []take, rec *engine.ProviderRecord, amounts []engine.ResourceAmount, ids *classIDs) []take {
	for _, ca := range amounts {
		t := take{class: ca.Class, amount: ca.Amount}
		if id, ok := ids.of(ca.Class); ok {
			t.setInventoryAt(rec, id, 0)
		}
		buf = append(buf, t)
	}
	return buf
}

// setInventoryAt sets t's inventory from rec's of class id, if it has
// one, looking first at rec's inventory at position hint
// (engine.ProviderRecord.InventoryFrom); it returns the
// position of the inventory found, or hint when rec has none of class id.
func (t *take) setInventoryAt(rec *engine.ProviderRecord, id int32, hint int32) int32 {
	inv, at := rec.InventoryFrom(id, int(hint))
	if inv != nil {
		t.found = true
		t.capacity, t.used = inv.Capacity(), inv.Used
		t.minUnit, t.maxUnit, t.stepSize = inv.MinUnit, inv.MaxUnit, inv.StepSize
	}
	return int32(at)
}

// classIDs are the ids of the few class names a ranking meets, looked up
// once each in the snapshot's names, and the last list of classes met
// (shape): the candidates of one request mostly take the same classes
// in the same order, which are then put in name order once.
type classIDs struct {
	names *engine.Names
	known [8]struct {
		name string
		id   int32
		ok   bool
	}
	n     int
	shape classShape
}

// classShape is a list of up to eight classes (an allocation's, in the
// engine's order) put in name order: order[k] is the position in the
// list of the k-th class by name, ids[k] its id and known[k] whether the
// snapshot names it; at[k] is where the last provider read listed its
// inventory of that class (setInventoryAt's hint).
type classShape struct {
	n       int // 0: none yet
	classes [8]string
	order   [8]uint8
	ids     [8]int32
	known   [8]bool
	at      [8]int32
}

// shapeOf is the name order of res's classes (at most eight) and their
// ids, as sorting res by class name (sortedAmounts: stable for so few)
// would give them. The shape returned is valid until the next call.
func (c *classIDs) shapeOf(res []engine.ResourceAmount) *classShape {
	sh := &c.shape
	if sh.n == len(res) && sh.n > 0 {
		same := true
		for k := range res {
			if res[k].Class != sh.classes[k] {
				same = false
				break
			}
		}
		if same {
			return sh
		}
	}
	sh.n = len(res)
	for k := range res {
		sh.classes[k] = res[k].Class
	}
	// Insertion sort of the positions: stable, as slices.SortFunc is
	// for lists this short.
	for k := range res {
		at := k
		for at > 0 && res[sh.order[at-1]].Class > res[k].Class {
			sh.order[at] = sh.order[at-1]
			at--
		}
		sh.order[at] = uint8(k)
	}
	for k := range res {
		sh.ids[k], sh.known[k] = c.of(res[sh.order[k]].Class)
	}
	return sh
}

func (c *classIDs) of(name string) (int32, bool) {
	for i := range c.known[:c.n] {
		if k := &c.known[i]; k.name == name {
			return k.id, k.ok
		}
	}
	id, ok := c.names.ClassID(name)
	if c.n < len(c.known) {
		c.known[c.n].name, c.known[c.n].id, c.known[c.n].ok = name, id, ok
		c.n++
	}
	return id, ok
}

// Direct reports whether Rank, for req, reads nothing of a candidate but
// what it takes and the inventories it takes it from: no scriptlet
// (named, default or unit), no target, no provider to avoid, no
// placement keys, no costly field (Needs), and only the capacity filter
// and the spread and pack weighers. RankDirect then ranks an engine
// answer as Rank ranks its views.
func (p *Policy) Direct(req *Request) bool {
	if len(p.Scriptlets()) > 0 || (p.scripts != nil && p.scripts.HasDefault()) ||
		req.Target != "" || len(req.Avoid) > 0 || (p.keys != nil && len(req.Keys) > 0) || p.NeedsFor(req) != (Needs{}) {
		return false
	}
	for _, f := range p.filters {
		if _, ok := f.f.(*Capacity); !ok {
			return false
		}
	}
	for _, w := range p.weighers {
		if _, ok := w.w.(*ResourceWeigher); !ok {
			return false
		}
	}
	return true
}

// RankDirect is Rank for a request the policy is Direct for, over lc,
// an engine answer asked with VersionsOnly (engine.Candidates.
// AllocationRecord), with DeferRequests or not: it builds the requests
// of the candidates it keeps (engine.Candidates.BuildRequests), and
// reads no other's. Candidate i is lc.Request(i), with Index i. Every
// candidate is filtered and weighed on the snapshot's records with the
// functions Rank's units use on views, the weights normalised across
// those that passed, and ordered as Rank orders them; r.Rejections are
// Rank's. r.Ranked then keeps the first keep candidates only, and more
// while the next one's score ties (Tie) a kept one's, unless
// randomOrder says lc's order among equals is random (a truncated
// sample, engine CandidatesParams.Sample): then keep of equally good
// candidates spread claims as all of them would, and ties are cut like
// the rest. build is called once with those kept, best first (a slice
// the caller may keep), to set their Roots, as the caller's full path
// would, and their Providers (the views) unless the caller builds those
// later, for the candidates it reads. r.Considered is every candidate of lc. The order of r.Ranked
// is Rank's: RankDirect changes how much a ranking costs and how far it
// reaches, never its order.
func (p *Policy) RankDirect(ctx context.Context, lc *engine.Candidates, keep int, randomOrder bool, build func([]*Candidate)) (_ *Ranking, err error) {
	n := lc.Len()
	r := &Ranking{Considered: n}
	ctx, span := startRank(ctx, n)
	defer func() { endRank(span, r, err) }()
	start := time.Now()
	sc := directScratchPool.Get().(*directScratch)
	defer directScratchPool.Put(sc)

	passed, raw, err := p.directPass(ctx, lc, r, sc)
	if err != nil {
		return nil, err
	}
	left := n
	for k := range r.Rejections {
		left -= r.Rejections[k].Removed
		r.Rejections[k].Remaining = left
		stageSpan(ctx, "filter", r.Rejections[k].Unit, start, instrument.AttrRemaining.Int(left))
	}
	np, nw := len(passed), len(p.weighers)
	contribs := grow(sc.contribs, np*nw)
	sc.contribs = contribs
	for k, w := range p.weighers {
		if err := addWeights(contribs, nw, k, w, raw[k*n:k*n+np]); err != nil {
			return nil, err
		}
		stageSpan(ctx, "weigher", w.w.Name(), start)
	}
	scores := grow(sc.scores, np)
	sc.scores = scores
	for i := range scores {
		scores[i] = score(contribs[i*nw : (i+1)*nw])
	}
	order, cut := keptOrder(sc, scores, passed, keep, randomOrder)
	r.Ranked = make([]Scored, cut)
	cands, kept := make([]Candidate, cut), make([]*Candidate, cut)
	// The kept candidates' contributions, copied out of the scratch.
	keptContribs := make([]float64, cut*nw)
	at := grow(sc.at, cut) // the kept ones' positions in lc
	sc.at = at
	for k, i := range order[:cut] {
		at[k] = int(passed[i])
	}
	lc.BuildRequests(at)
	for k, i := range order[:cut] {
		li := at[k]
		cands[k] = Candidate{Index: li, Allocations: lc.Request(li).Allocations}
		kept[k] = &cands[k]
		cs := keptContribs[k*nw : (k+1)*nw : (k+1)*nw]
		copy(cs, contribs[i*nw:(i+1)*nw])
		r.Ranked[k] = Scored{Cand: kept[k], Score: scores[i], names: p.weigherNames, contribs: cs}
	}
	build(kept)
	return r, nil
}

// directScratch is what one RankDirect works in and returns nothing of:
// its slices are reused by the rankings after it (directScratchPool).
type directScratch struct {
	passed                []int32
	raw, contribs, scores []float64
	at, order             []int
}

var directScratchPool = sync.Pool{New: func() any { return new(directScratch) }}

// grow is buf resliced to n elements, reallocated if too short; its
// contents are unspecified.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// directPass filters and weighs every candidate of lc on the engine's
// records, counting rejections in r: passed are the positions in lc of
// the candidates every filter kept, and raw the weighers' raw values,
// weigher by weigher, each as long as lc (its first len(passed) used),
// both cut from sc.
func (p *Policy) directPass(ctx context.Context, lc *engine.Candidates, r *Ranking, sc *directScratch) (passed []int32, raw []float64, err error) {
	n := lc.Len()
	passed = grow(sc.passed, n)[:0]
	r.Rejections = make([]Rejection, len(p.filters))
	for k, f := range p.filters {
		r.Rejections[k] = Rejection{Unit: f.f.Name(), Reasons: map[string]int{}}
	}
	raw = grow(sc.raw, len(p.weighers)*n)
	sc.raw = raw
	ids := classIDs{names: lc.Names()}
	// When every candidate takes the same of its one provider, the name
	// order of what it takes is worked out once.
	shared := lc.SharedResources()
	var sharedShape *classShape
	if shared != nil && len(shared) <= len(ids.shape.classes) {
		sharedShape = ids.shapeOf(shared)
	}
	var buf [8]take
	for i := range n {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		var ts []take
		if sharedShape != nil {
			ts = shapeTakes(buf[:0], lc.AllocationRecord(i, 0), shared, sharedShape)
		} else {
			ts = recordTakes(buf[:0], lc, i, &ids)
		}
		// Each filter sees what the ones before it kept: a candidate
		// counts against the first that rejects it.
		rejected := false
		for k := range p.filters {
			if st := capacityStatus(ts); st != nil {
				r.Rejections[k].Removed++
				r.Rejections[k].Reasons[st.Reason()]++
				rejected = true
				break
			}
		}
		if rejected {
			continue
		}
		for k, w := range p.weighers {
			raw[k*n+len(passed)] = w.w.(*ResourceWeigher).raw(ts)
		}
		passed = append(passed, int32(i))
	}
	sc.passed = passed
	return passed, raw, nil
}

// keptOrder is Rank's order of the passed candidates' scores, of which
// only the first cut become Scored: the first keep are selected, and the
// one after them too unless the order among equals is random, to see
// whether it ties a kept one; only then is every candidate ordered, and
// cut grown to keep those tied as well. order may be cut from sc.
func keptOrder(sc *directScratch, scores []float64, passed []int32, keep int, randomOrder bool) (order []int, cut int) {
	np := len(scores)
	byScore, byIndex := func(i int) float64 { return scores[i] }, func(i int) int { return int(passed[i]) }
	cut = max(0, min(keep, np))
	first := cut
	if !randomOrder {
		first = min(cut+1, np)
	}
	order = keptFirst(sc.order[:0], scores, passed, first)
	sc.order = order
	if !randomOrder && cut < np && tiesAny(scores, order[:cut], scores[order[cut]]) {
		order = rankOrder(np, byScore, byIndex)
		for cut < np && tiesAny(scores, order[:cut], scores[order[cut]]) {
			cut++
		}
	}
	return order, cut
}

// keptFirst is rankFirst(len(scores), k, ...), appended to first (empty), for the
// scores of the candidates at passed: scores[i] by score, passed[i] by
// index. The comparisons are rankCompare's, made in place.
func keptFirst(first []int, scores []float64, passed []int32, k int) []int {
	n := len(scores)
	k = max(0, min(k, n))
	compare := func(i, j int) int { // rankCompare
		if c := cmp.Compare(scores[j], scores[i]); c != 0 {
			return c
		}
		if c := cmp.Compare(passed[i], passed[j]); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	}
	for i := range n {
		if len(first) == k && (k == 0 || scores[i] < scores[first[k-1]] || compare(i, first[k-1]) > 0) {
			// (A lower score, neither NaN, is compare's answer too.)
			continue
		}
		// The first position whose candidate ranks after i.
		lo, hi := 0, len(first)
		for lo < hi {
			if m := int(uint(lo+hi) >> 1); compare(first[m], i) < 0 {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if len(first) < k {
			first = append(first, 0)
		}
		copy(first[lo+1:], first[lo:len(first)-1])
		first[lo] = i
	}
	return first
}

// tiesAny reports whether score ties one of scores at positions at.
func tiesAny(scores []float64, at []int, score float64) bool {
	for _, i := range at {
		if Tie(scores[i], score) {
			return true
		}
	}
	return false
}

// Tie reports whether two scores are equal up to rounding: candidates a
// claim counts as equally good.
func Tie(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b))
}
