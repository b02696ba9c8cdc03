package engine

import (
	"context"
	"math/rand/v2"
	"slices"
)

// CandidatesParams is a request for allocation candidates
// (GET /allocation_candidates), with names still as the user wrote them.
type CandidatesParams struct {
	// Groups in the order the request first named each suffix.
	Groups []RequestGroup
	// Isolate is group_policy=isolate: suffixed groups use distinct providers.
	Isolate bool
	// RootRequired and RootForbidden are root_required's traits: the root of
	// each candidate's tree must have the first and lack the second.
	RootRequired  []string
	RootForbidden []string
	// SameSubtrees lists groups of suffixes whose providers must all be in
	// the subtree of one of them.
	SameSubtrees [][]string
	// Limit caps the candidates returned; 0 means no limit.
	Limit int
	// Max caps the candidates generated, whatever Limit is; 0 means
	// DefaultMaxCandidates.
	Max int
	// MaxSteps bounds the search (nodes of the combination tree visited);
	// 0 means DefaultMaxSearchSteps.
	MaxSteps int
	// NestedAware is false below microversion 1.29: a candidate may then
	// use at most one provider per tree.
	NestedAware bool
	// Randomize shuffles the candidates instead of the deterministic order.
	Randomize bool
	// Sample, when more than Max candidates exist, makes the answer a
	// random Max of them drawn across root providers (the roots are taken
	// in random order, one candidate per root in turn) instead of the
	// first Max in the deterministic order. When all of them fit under
	// Max the answer is the same as without Sample. Truncated tells which.
	Sample bool
	// AvoidEvacuated leaves out the trees of evacuated root providers,
	// and sharing providers whose root is evacuated: what a claim asks.
	// GET /allocation_candidates does not (Placement knows no
	// evacuation). Not part of a claim's recorded request (json:"-"): the
	// server sets it.
	AvoidEvacuated bool `json:"-"`
	// VersionsOnly leaves Candidates.Summaries nil and lists instead, in
	// Candidates.Versions, the providers they would describe: for a
	// caller that builds its own view of each provider from the
	// snapshot's record (Candidates.Record), without the summaries'
	// copies.
	VersionsOnly bool
	// DeferRequests, with VersionsOnly and without Randomize, leaves
	// Candidates.Requests nil, and each candidate's request
	// (Candidates.Request) the zero AllocationRequest, until
	// Candidates.BuildRequests builds it (BuildAllRequests: every one,
	// in Requests): for a caller that reads what every candidate takes
	// (AllocationResources) and keeps a few. The requests it builds may
	// share their allocations' Resources, which, as every answer's, are
	// read only. Not part of a claim's recorded request: the server sets
	// it.
	DeferRequests bool `json:"-"`
}

// Defaults for CandidatesParams.
const (
	DefaultMaxCandidates  = 10000
	DefaultMaxSearchSteps = 2_000_000
)

// Candidates is the answer to a CandidatesParams.
type Candidates struct {
	// Requests are the candidates, one each; nil while they are
	// deferred (CandidatesParams.DeferRequests): Len and Request read
	// either.
	Requests []AllocationRequest
	// Summaries describe the providers of the trees (below 1.29: the
	// providers) the requests use.
	Summaries []ProviderSummary
	// Truncated is set when the search stopped at Max or MaxSteps before
	// it had found every candidate.
	Truncated bool
	// Roots is how many root providers the request was matched against
	// (every root of the snapshot); see Snapshot.Shortfall for why the
	// roots without a candidate have none.
	Roots int
	// Versions, with CandidatesParams.VersionsOnly, stand for the
	// providers Summaries would describe, in the same order.
	Versions []ProviderVersion
	// Flat is set when every provider of the snapshot is the root of its
	// own tree and none shares its inventory: each allocation's provider
	// is then its candidate's root, and none is a sharing provider.
	Flat bool

	// snap and summaryList are what Record reads; allocProv and
	// allocStart what AllocationRecord reads (with VersionsOnly): the
	// providers of Request(i)'s allocations are
	// allocProv[allocStart[i]:allocStart[i+1]].
	snap        *Snapshot
	summaryList []int32
	allocProv   []int32
	allocStart  []int32
	// deferred, with CandidatesParams.DeferRequests, builds the requests.
	deferred deferredRequests
}

// deferredRequests is what Candidates.BuildRequests builds Requests
// from: the search's slots and groups (nil e: nothing deferred), and the
// candidates' provider vectors, one after the other, one provider per
// slot (nil for a search of one candidate per anchor, search.oneEach:
// every slot of a candidate uses its one provider).
type deferredRequests struct {
	e *search
	// n is how many candidates there are.
	n    int
	vecs []int32
	// built has a bit per candidate, set once its request is built;
	// reqs hold the requests built while Candidates.Requests is nil, in
	// the order built.
	built []uint64
	reqs  []builtRequest
	// oneRes, for a search of one candidate per anchor (search.oneEach),
	// is what every candidate takes of its one provider.
	oneRes []ResourceAmount
	// Where built and oneRes start: a claim's sample's fit here.
	builtArr  [2]uint64
	oneResArr [4]ResourceAmount
}

// builtRequest is candidate i's request, built (deferredRequests.reqs).
type builtRequest struct {
	i int
	AllocationRequest
}

// Len is how many candidates c holds: len(Requests), or while their
// requests are deferred, how many would be.
func (c *Candidates) Len() int {
	if c.Requests == nil && c.deferred.e != nil {
		return c.deferred.n
	}
	return len(c.Requests)
}

// Request is candidate i's request: Requests[i], or while the requests
// are deferred, the one BuildRequests built (the zero AllocationRequest
// before).
func (c *Candidates) Request(i int) AllocationRequest {
	if c.Requests != nil || c.deferred.e == nil {
		return c.Requests[i]
	}
	for k := range c.deferred.reqs {
		if br := &c.deferred.reqs[k]; br.i == i {
			return br.AllocationRequest
		}
	}
	return AllocationRequest{}
}

// isBuilt reports whether candidate i's request is built.
func (d *deferredRequests) isBuilt(i int) bool { return d.built[i/64]&(1<<(i%64)) != 0 }

// setBuilt records that candidate i's request is built.
func (d *deferredRequests) setBuilt(i int) { d.built[i/64] |= 1 << (i % 64) }

// vec is candidate i's provider vector, of an answer whose requests are
// deferred; made in buf when the vectors are not kept.
func (c *Candidates) vec(i int, buf []int32) []int32 {
	d := &c.deferred
	n := len(d.e.slots)
	if d.vecs == nil {
		p := c.allocProv[c.allocStart[i]]
		buf = buf[:0]
		for range n {
			buf = append(buf, p)
		}
		return buf
	}
	return d.vecs[i*n : (i+1)*n : (i+1)*n]
}

// BuildRequests builds candidate i's request (Request), for each i of
// is not built yet, of an answer asked with DeferRequests; it does
// nothing for another.
func (c *Candidates) BuildRequests(is []int) {
	d := &c.deferred
	if d.e == nil {
		return
	}
	n := 0
	for _, i := range is {
		if !d.isBuilt(i) {
			n++
		}
	}
	if n == 0 {
		return
	}
	if c.Requests == nil {
		d.reqs = slices.Grow(d.reqs, n)
	}
	b := newRequestBuilder(d.e, n)
	// One candidate per anchor: every request's one allocation shares
	// what they all take.
	b.oneRes = d.oneRes[:len(d.oneRes):len(d.oneRes)]
	// On the stack, as search.result's.
	var provArr, vecArr [8]int32
	var keyArr [16]provClass
	var amountArr [16]int64
	provOrder, keys, amounts := provArr[:0], keyArr[:0], amountArr[:0]
	for _, i := range is {
		if d.isBuilt(i) {
			continue
		}
		d.setBuilt(i)
		vec := c.vec(i, vecArr[:0])
		if b.oneRes != nil {
			// request reads no amounts for a candidate of one provider.
			provOrder = d.e.providers(provOrder[:0], vec)
		}
		if b.oneRes == nil || len(provOrder) != 1 {
			provOrder, keys, amounts = d.e.amounts(provOrder[:0], keys[:0], amounts[:0], vec)
		}
		var ar *AllocationRequest
		if c.Requests != nil {
			ar = &c.Requests[i]
		} else {
			d.reqs = append(d.reqs, builtRequest{i: i})
			ar = &d.reqs[len(d.reqs)-1].AllocationRequest
		}
		b.request(ar, vec, provOrder, keys, amounts)
	}
}

// BuildAllRequests builds every candidate's request not built yet (see
// BuildRequests), in Requests.
func (c *Candidates) BuildAllRequests() {
	d := &c.deferred
	if d.e == nil {
		return
	}
	if c.Requests == nil {
		c.Requests = make([]AllocationRequest, d.n)
		for _, br := range d.reqs {
			c.Requests[br.i] = br.AllocationRequest
		}
		d.reqs = nil
	}
	is := make([]int, len(c.Requests))
	for i := range is {
		is[i] = i
	}
	c.BuildRequests(is)
}

// AllocationCount is len(Request(i).Allocations), built or not (with
// VersionsOnly it is read from the answer's index).
func (c *Candidates) AllocationCount(i int) int {
	if c.allocStart == nil {
		return len(c.Request(i).Allocations)
	}
	return int(c.allocStart[i+1] - c.allocStart[i])
}

// SharedResources is, when every candidate's request has one allocation
// and every one takes the same (the deferred sample of a search of one
// candidate per anchor), what each takes: AllocationResources(i, 0) for
// every i, which must not be changed. It is nil otherwise.
func (c *Candidates) SharedResources() []ResourceAmount {
	return c.deferred.oneRes
}

// AllocationResources appends to buf what Request(i).Allocations[j]
// takes, as its Resources hold it (the same classes, amounts and
// order), whether its request is built yet or not.
func (c *Candidates) AllocationResources(i, j int, buf []ResourceAmount) []ResourceAmount {
	d := &c.deferred
	if d.e == nil || d.isBuilt(i) {
		return append(buf, c.Request(i).Allocations[j].Resources...)
	}
	if d.oneRes != nil {
		return append(buf, d.oneRes...)
	}
	// As search.amounts sums them: classes in the order the slots of
	// the provider first name them.
	var vecArr [8]int32
	p, from := c.allocProv[int(c.allocStart[i])+j], len(buf)
	for si, q := range c.vec(i, vecArr[:0]) {
		if q != p {
			continue
		}
	next:
		for _, r := range d.e.slots[si].res {
			name := r.name
			for k := from; k < len(buf); k++ {
				if buf[k].Class == name {
					buf[k].Amount += r.amount
					continue next
				}
			}
			buf = append(buf, ResourceAmount{Class: name, Amount: r.amount})
		}
	}
	return buf
}

// Record returns the snapshot's record of the provider Versions[i] (or
// Summaries[i]) stands for, which must not be changed, with the uuids of
// its parent ("" for a root) and of its root: what a summary describes,
// for a caller that builds its own view of the provider. In a flat
// snapshot it reads nothing but the record.
func (c *Candidates) Record(i int) (rec *ProviderRecord, parentUUID, rootUUID string) {
	s, k := c.snap, c.summaryList[i]
	rec = s.provs.at(k)
	if c.Flat {
		return rec, "", rec.UUID
	}
	if pi := s.idx.parent[k]; pi >= 0 {
		parentUUID = s.provs.at(pi).UUID
	}
	return rec, parentUUID, s.provs.at(s.idx.root[k]).UUID
}

// AllocationRecord returns the snapshot's record of the provider of
// Request(i).Allocations[j], which must not be changed: for a caller
// that reads the inventories a candidate takes from without a view of
// every provider. nil for an answer asked without VersionsOnly.
func (c *Candidates) AllocationRecord(i, j int) *ProviderRecord {
	if c.allocStart == nil {
		return nil
	}
	return c.snap.provs.at(c.allocProv[int(c.allocStart[i])+j])
}

// Names are the names of the classes, traits and aggregates the records
// of c's providers refer to by id.
func (c *Candidates) Names() *Names { return c.snap.names }

// AllocationRequest is one candidate: what to allocate from which provider,
// and which providers satisfied which group.
type AllocationRequest struct {
	Allocations []Allocation
	Mappings    []GroupMapping
}

// Allocation is what a consumer takes, or is to take, from one provider:
// one candidate's share of a provider, a claim's write, a consumer's
// holding as the API answers it. It is the one type of this concept from
// the engine to the HTTP answer. Resources hold each class once.
type Allocation struct {
	ProviderUUID string
	Resources    []ResourceAmount
}

// Amount is how much of class a takes, and whether it takes any.
func (a Allocation) Amount(class string) (int64, bool) {
	for _, r := range a.Resources {
		if r.Class == class {
			return r.Amount, true
		}
	}
	return 0, false
}

// GroupMapping names the providers that satisfied one request group.
type GroupMapping struct {
	Suffix        string
	ProviderUUIDs []string
}

// ProviderSummary describes a provider of a candidate's tree: the
// provider (its CreatedAt and UpdatedAt zero in a summary the ledger
// reads from the database), its inventories, traits and aggregates.
type ProviderSummary struct {
	Provider
	// Resources lists every inventory with its usage, in resource class
	// id order (UpdatedAt zero).
	Resources []InventoryUsage
	// Traits in trait id order.
	Traits []string
	// Aggregates are the uuids of the provider's aggregates, in id order.
	Aggregates []string
	// Evacuated is the provider's ProviderRecord.Evacuated.
	Evacuated bool
	// Version identifies what the summary was made from: two summaries
	// of one provider with equal Versions are equal in every field, so a
	// caller may keep what it derives from a summary until the Version
	// changes.
	Version ProviderVersion
}

// ProviderVersion is an opaque, comparable identity of one provider's
// state in a snapshot (see ProviderSummary.Version). The zero value
// matches no provider.
type ProviderVersion struct {
	p *ProviderRecord
	i int32 // the provider's index in its snapshot
}

// UUID is the uuid of the provider v is a version of ("" for the zero
// value).
func (v ProviderVersion) UUID() string {
	if v.p == nil {
		return ""
	}
	return v.p.UUID
}

// ParamsNames lists the resource class and trait names p mentions, which
// a snapshot must have right before it answers p (see
// Snapshot.UnsureNames).
func ParamsNames(p *CandidatesParams) (classes, traits []string) {
	// Counted first: one allocation for each list (none for an empty one).
	nc, nt := 0, len(p.RootRequired)+len(p.RootForbidden)
	for i := range p.Groups {
		g := &p.Groups[i]
		nc += len(g.Resources)
		for _, any := range g.RequiredTraits {
			nt += len(any)
		}
		nt += len(g.ForbiddenTraits)
	}
	if nc > 0 {
		classes = make([]string, 0, nc)
	}
	if nt > 0 {
		traits = make([]string, 0, nt)
	}
	traits = append(append(traits, p.RootRequired...), p.RootForbidden...)
	for i := range p.Groups {
		classes, traits = appendGroupNames(classes, traits, &p.Groups[i])
	}
	return classes, traits
}

// Candidates computes the allocation candidates for p. Unknown resource
// classes and traits are reported as *UnknownNameError; anything else that
// cannot match (an unknown aggregate, an in_tree provider that does not
// exist) yields no candidates. Groups are resolved in request order; as in
// Placement, a group that can match nothing makes the answer empty, and an
// unknown name in a later group is then not reported. The snapshot's
// names must be right for the names p uses (see ParamsNames).
func (s *Snapshot) Candidates(ctx context.Context, p *CandidatesParams) (*Candidates, error) {
	e, err := s.newSearch(ctx, p)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return &Candidates{Requests: []AllocationRequest{}, Summaries: []ProviderSummary{}, Roots: len(s.idx.roots)}, nil
	}
	anchors := e.candidateAnchors()
	e.scratch = searchScratches.Get().(*searchScratch)
	if p.Randomize {
		anchors = slices.Clone(anchors) // may be the snapshot's
		rand.Shuffle(len(anchors), func(i, j int) { anchors[i], anchors[j] = anchors[j], anchors[i] })
	}
	want := p.Max
	if want <= 0 {
		want = DefaultMaxCandidates
	}
	if p.Limit > 0 && p.Limit < want {
		want = p.Limit
	}
	var found vectors
	var complete bool
	if p.Sample && !p.Randomize {
		// Draw from the roots in random order; if that finds every
		// candidate, there were no more than want: take them again in the
		// deterministic order (cheap, since there are few).
		found, complete = e.roundRobin(anchors, want, true)
		if complete {
			e.seen, e.steps = nil, 0
			found, complete = e.roundRobin(anchors, want, false)
		}
	} else {
		found, complete = e.roundRobin(anchors, want, false)
	}
	out := e.result(found, p.VersionsOnly, p.VersionsOnly && p.DeferRequests && !p.Randomize)
	e.releaseScratch()
	out.Truncated, out.Roots = !complete, len(s.idx.roots)
	if p.Randomize {
		out.shuffle()
	}
	return out, nil
}

// shuffle puts c's candidates in random order, and with them the index
// AllocationRecord reads (VersionsOnly), so that Requests[i]'s
// allocations stay read from their own providers' records. Not for an
// answer whose requests are deferred.
func (c *Candidates) shuffle() {
	perm := rand.Perm(len(c.Requests))
	reqs := make([]AllocationRequest, len(c.Requests))
	for k, i := range perm {
		reqs[k] = c.Requests[i]
	}
	c.Requests = reqs
	if c.allocStart == nil {
		return
	}
	start, prov := make([]int32, len(c.allocStart)), make([]int32, 0, len(c.allocProv))
	for k, i := range perm {
		prov = append(prov, c.allocProv[c.allocStart[i]:c.allocStart[i+1]]...)
		start[k+1] = int32(len(prov))
	}
	c.allocStart, c.allocProv = start, prov
}
