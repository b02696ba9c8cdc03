package engine

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// The capacity question, "how many more of this flavor fit, and where", is
// answered by simulation with the candidate engine itself, so it can never
// disagree with GET /allocation_candidates about what one instance needs:
// for each root provider, take the first candidate the engine gives for
// that tree, add its amounts to a private scratch copy of the usage, and
// repeat until nothing fits or the per-root cap is reached.
//
// The scratch usage lives in a scratch Snapshot that shares the real
// snapshot's names and indexes (the providers' shape does not change) and
// starts with the same provider pointers; a provider is copied the first
// time a simulated placement takes from it (copy on write), so the real
// snapshot is never modified and the cost is proportional to the providers
// touched. The scratch is shared across the whole computation: a sharing
// provider's capacity taken by one tree is gone for the trees that come
// after it, in the engine's deterministic order (roots in creation order).

// CapacityParams asks how many more instances of one request fit.
type CapacityParams struct {
	// Request is the request for one instance, as for allocation
	// candidates. Its Limit, Max and Randomize are ignored; its MaxSteps,
	// if set, overrides MaxSteps below.
	Request CandidatesParams
	// MaxPerRoot caps the count per root provider; 0 means
	// DefaultCapacityMaxPerRoot.
	MaxPerRoot int
	// MaxSteps bounds the whole computation in engine search steps (as
	// CandidatesParams.MaxSteps, summed over every simulated placement);
	// 0 means DefaultCapacitySteps.
	MaxSteps int
	// MaxDuration bounds the computation in time; 0 means
	// DefaultCapacityDuration.
	MaxDuration time.Duration
}

// Defaults for CapacityParams.
const (
	DefaultCapacityMaxPerRoot = 1000
	DefaultCapacitySteps      = 50_000_000
	DefaultCapacityDuration   = 10 * time.Second
)

// Capacity is the answer to a CapacityParams.
type Capacity struct {
	// Total is the sum of Fits over Roots.
	Total int64
	// Capped is set when some root's count stopped at MaxPerRoot.
	Capped bool
	// Truncated is set when the step or time budget ran out: the root being
	// counted then has a lower bound, and the roots after it in the
	// engine's order were not counted (they are missing from Roots).
	Truncated bool
	// Roots lists the root providers where at least one more instance
	// fits, most instances first, then in the engine's order.
	Roots []RootCapacity
	// Aggregates sums Fits per aggregate of the root providers (a root
	// counts towards every aggregate it is a member of; aggregates of
	// providers below the root are not looked at), most first, then by
	// uuid. Aggregates where nothing fits are not listed.
	Aggregates []AggregateCapacity
}

// AggregateCapacity is how many more instances fit in the trees whose
// root is in one aggregate.
type AggregateCapacity struct {
	UUID string
	Fits int64
}

// RootCapacity is how many more instances fit in one tree.
type RootCapacity struct {
	UUID string
	Name string
	// Fits is the number of instances that fit, one after the other.
	Fits int
	// Capped is set when Fits stopped at MaxPerRoot.
	Capped bool
	// Limiting names the resource classes that ran out: for some request
	// group (one class of the unsuffixed group), every provider that could
	// serve it before the simulation no longer has the capacity for it. It
	// is empty when the count was capped or truncated, or when the tree
	// stopped fitting for another reason (capacity taken by several groups
	// together, group_policy=isolate, same_subtree).
	Limiting []string
}

// Capacity answers p by the simulation described at the top of this file.
// It writes nothing. Unknown resource classes and traits are
// *UnknownNameError, as for Candidates. Its error is otherwise ctx's when
// ctx ends; running out of budget is not an error.
func (s *Snapshot) Capacity(ctx context.Context, p *CapacityParams) (*Capacity, error) {
	out := &Capacity{Roots: []RootCapacity{}, Aggregates: []AggregateCapacity{}}
	perAgg := map[int32]int64{}
	req, maxPer, deadline := capacityRequest(p)
	scratch := &Snapshot{names: s.names, provs: s.provs.clone(), idx: s.idx}
	e, err := scratch.newSearch(ctx, &req)
	if err != nil || e == nil {
		return out, err
	}
	sim := simulation{base: s, scratch: scratch, e: e, copied: make([]bool, s.provs.len()), maxPer: maxPer, deadline: deadline}
	// The generator every placement reuses: a local, which the compiler
	// keeps on the stack.
	g := &gen{opts: make([][]int32, len(e.slots)), pos: make([]int, len(e.slots))}
	for _, a := range e.candidateAnchors() {
		if !e.anchorOK(a) || !e.inAnchorSets(a) {
			continue
		}
		rc, err := sim.count(ctx, a, g)
		if err != nil {
			return nil, err
		}
		if e.stopped {
			out.Truncated = true
		}
		out.Capped = out.Capped || rc.Capped
		if rc.Fits > 0 {
			out.Total += int64(rc.Fits)
			out.Roots = append(out.Roots, rc)
			for _, agg := range s.provs.at(a).Aggregates {
				perAgg[agg] += int64(rc.Fits)
			}
		}
		if e.stopped {
			break
		}
	}
	slices.SortStableFunc(out.Roots, func(x, y RootCapacity) int { return y.Fits - x.Fits })
	for agg, fits := range perAgg {
		out.Aggregates = append(out.Aggregates, AggregateCapacity{UUID: s.names.aggUUID[agg], Fits: fits})
	}
	slices.SortFunc(out.Aggregates, func(x, y AggregateCapacity) int {
		if c := cmp.Compare(y.Fits, x.Fits); c != 0 {
			return c
		}
		return strings.Compare(x.UUID, y.UUID)
	})
	return out, nil
}

// capacityRequest is p's request for one instance as the simulation
// runs it (no limit, no randomness, the step budget of the whole
// computation), the per-root cap and the deadline, defaults applied.
func capacityRequest(p *CapacityParams) (req CandidatesParams, maxPer int, deadline time.Time) {
	maxPer = p.MaxPerRoot
	if maxPer <= 0 {
		maxPer = DefaultCapacityMaxPerRoot
	}
	req = p.Request
	req.Limit, req.Max, req.Randomize = 0, 0, false
	if req.MaxSteps <= 0 {
		req.MaxSteps = p.MaxSteps
	}
	if req.MaxSteps <= 0 {
		req.MaxSteps = DefaultCapacitySteps
	}
	budget := p.MaxDuration
	if budget <= 0 {
		budget = DefaultCapacityDuration
	}
	return req, maxPer, time.Now().Add(budget)
}

// simulation is the state of one Capacity: the search over the scratch
// snapshot (e.snap is scratch), which providers of scratch are copies
// already, and the budget.
type simulation struct {
	base, scratch *Snapshot
	e             *search
	copied        []bool  // by provider
	buf           []int32 // the option lists' storage, reused
	placements    int     // tried so far: every 256th checks ctx and the deadline
	maxPer        int
	deadline      time.Time
}

// count places instances in a's tree one after the other, each the
// first candidate the engine gives (through g), until none fits, maxPer
// fit or the budget runs out (then e.stopped). Its error is ctx's.
func (sim *simulation) count(ctx context.Context, a int32, g *gen) (RootCapacity, error) {
	s, e := sim.base, sim.e
	rc := RootCapacity{UUID: s.provs.at(a).UUID, Name: s.provs.at(a).Name}
	exhausted := false
	// (Locals in the loop; placements and buf are written back after it.)
	placements, buf, maxPer, scratch, copied := sim.placements, sim.buf, sim.maxPer, sim.scratch, sim.copied
	for rc.Fits < maxPer {
		if placements++; placements&255 == 0 {
			if err := ctx.Err(); err != nil {
				return rc, err
			}
			if time.Now().After(sim.deadline) {
				e.stopped = true
				break
			}
		}
		clear(e.seen) // a placement may repeat an earlier one
		var ok bool
		if buf, ok = e.open(g, a, buf[:0]); !ok || !e.next(g) {
			exhausted = !e.stopped
			break
		}
		// The candidate's amounts join the scratch usage.
		for si := range e.slots {
			for _, r := range e.slots[si].res {
				i := g.prov(si)
				if !copied[i] {
					sim.copyProvider(i)
				}
				scratch.provs.at(i).Inventory(r.class).Used += r.amount
			}
		}
		rc.Fits++
	}
	sim.placements, sim.buf = placements, buf
	if e.stopped {
		if err := ctx.Err(); err != nil {
			return rc, err
		}
	}
	rc.Capped = rc.Fits >= maxPer
	if exhausted && rc.Fits > 0 {
		rc.Limiting = e.limiting(s, a, buf[:0])
	}
	return rc, nil
}

// copyProvider makes provider i's record in the scratch a copy of the
// real snapshot's, which the simulation may change (copy on write: once
// per provider a placement takes from).
func (sim *simulation) copyProvider(i int32) {
	c := *sim.scratch.provs.at(i)
	c.Inventories = slices.Clone(c.Inventories)
	sim.scratch.provs.set(i, &c)
	sim.copied[i] = true
}

// limiting names the classes that ran out under anchor a: a class of a
// slot is limiting when the slot had options under a in base (the
// snapshot before the simulation) and none of them has the capacity for
// the slot's amount of it any more in e.snap (the scratch).
func (e *search) limiting(base *Snapshot, a int32, buf []int32) []string {
	scratch := e.snap
	e.snap = base
	defer func() { e.snap = scratch }()
	var out []string
	for i := range e.slots {
		sl := &e.slots[i]
		buf = e.options(sl, a, buf[:0])
		if len(buf) == 0 {
			continue
		}
		for _, r := range sl.res {
			full := true
			for _, q := range buf {
				inv := scratch.provs.at(q).Inventory(r.class)
				if float64(inv.Used+r.amount) <= inv.capacity() {
					full = false
					break
				}
			}
			if name := scratch.names.className[r.class]; full && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// OverCapacity lists the row ids (ProviderRecord.ID) of the providers
// with a class whose usage is above its capacity, (total - reserved) *
// allocation_ratio, in ascending order: inventories lowered below what is
// allocated. Its cost is one look at every inventory, and like every
// answer of the snapshot it is advisory (the ledger's audit confirms each
// id in the database).
func (s *Snapshot) OverCapacity() []int64 {
	var ids []int64
	for i := range s.provs.len() {
		p := s.provs.at(int32(i))
		for j := range p.Inventories {
			if inv := &p.Inventories[j]; float64(inv.Used) > inv.capacity() {
				ids = append(ids, p.ID)
				break
			}
		}
	}
	slices.Sort(ids)
	return ids
}
