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

// result turns provider vectors into allocation requests and summaries,
// in two stages: one request per vector, each provider's amounts summed
// over the slots; then the providers the requests cover (answer), as
// versions or as summaries. With deferRequests (and versionsOnly) the
// requests are left to Candidates.BuildRequests, which keeps a copy of
// the vectors.
func (e *search) result(found vectors, versionsOnly, deferRequests bool) *Candidates {
	nFound := found.len()
	deferred := versionsOnly && deferRequests
	out := &Candidates{}
	if !deferred {
		out.Requests = make([]AllocationRequest, nFound)
	}
	b := newResultBuilder(e, nFound)
	// The slices that grow start in result's own arrays, on the stack,
	// so a claim's answer allocates nothing for them (in b they would
	// live on the heap). provOrder, keys and
	// amounts are one candidate's, reused; units lists the providers (or
	// trees) to summarise, in the order met.
	var provArr [8]int32
	var keyArr [16]provClass
	var amountArr [16]int64
	provOrder, keys, amounts := provArr[:0], keyArr[:0], amountArr[:0] // amounts parallel to keys
	units := out.cutIndex(e, found, versionsOnly, deferred)
	// With one candidate per anchor every slot of a candidate uses its
	// one provider, which providers names if a slot takes anything.
	oneTakes := false
	for si := range e.slots {
		oneTakes = oneTakes || e.oneEach && len(e.slots[si].res) > 0
	}
	for ci := range nFound {
		vec := found.at(ci)
		if deferred && oneTakes {
			provOrder = append(provOrder[:0], vec[0])
		} else if deferred {
			provOrder = e.providers(provOrder[:0], vec)
		} else {
			provOrder, keys, amounts = e.amounts(provOrder[:0], keys[:0], amounts[:0], vec)
			b.request(&out.Requests[ci], vec, provOrder, keys, amounts)
		}
		if versionsOnly {
			for _, p := range provOrder { // (a few: no call to copy them)
				out.allocProv = append(out.allocProv, p)
			}
			out.allocStart[ci+1] = int32(len(out.allocProv))
		}
		for _, p := range provOrder {
			if unit := b.summaryUnit(p); b.firstSummary(unit) {
				units = append(units, unit)
			}
		}
	}
	b.release(units)
	if deferred && e.oneEach && nFound > 0 {
		// Every candidate takes the same of its one provider: worked out
		// once, from the first.
		out.snap = e.snap
		out.deferred.oneRes = out.AllocationResources(0, 0, out.deferred.oneResArr[:0])
	}
	return b.answer(out, units, versionsOnly)
}

// cutIndex cuts from one array units (the providers or trees to
// summarise, in the order met; returned empty), and with versionsOnly the
// index AllocationRecord reads (each candidate's providers, in its
// allocations' order, at most one per slot, and where each candidate's
// start), and with deferred a copy of found's vectors (the search
// scratch's). With one candidate per anchor the vectors are not kept:
// the index says them (Candidates.vec).
func (out *Candidates) cutIndex(e *search, found vectors, versionsOnly, deferred bool) (units []int32) {
	nFound := found.len()
	size := nFound
	if versionsOnly {
		size += nFound + 1 + len(found.provs)
	}
	keepVecs := deferred && !e.oneEach
	if keepVecs {
		size += len(found.provs)
	}
	buf := make([]int32, size)
	units, buf = buf[:0:nFound], buf[nFound:]
	if versionsOnly {
		n := nFound + 1
		out.allocStart, out.allocProv, buf = buf[:n:n], buf[n:n:n+len(found.provs)], buf[n+len(found.provs):]
	}
	if deferred {
		d := &out.deferred
		d.e, d.n = e, nFound
		if words := (nFound + 63) / 64; words <= len(d.builtArr) {
			d.built = d.builtArr[:words]
		} else {
			d.built = make([]uint64, words)
		}
	}
	if keepVecs {
		out.deferred.vecs = buf[:len(found.provs):len(found.provs)]
		copy(out.deferred.vecs, found.provs)
	}
	return units
}

// providers appends to provOrder the providers of vec, in the order its
// slots name them: amounts' provOrder.
func (e *search) providers(provOrder []int32, vec []int32) []int32 {
	for si, p := range vec {
		if len(e.slots[si].res) > 0 && !slices.Contains(provOrder, p) {
			provOrder = append(provOrder, p)
		}
	}
	return provOrder
}

// amounts appends to provOrder the providers of vec, in the order its
// slots name them, and to keys and amounts (in parallel) what vec takes
// of each provider and class, summed over the slots, in the order the
// slots name them.
func (e *search) amounts(provOrder []int32, keys []provClass, amounts []int64, vec []int32) ([]int32, []provClass, []int64) {
	for si, p := range vec {
		for _, r := range e.slots[si].res {
			k := provClass{p, r.class}
			j := slices.Index(keys, k)
			if j < 0 {
				keys = append(keys, k)
				amounts = append(amounts, r.amount)
			} else {
				amounts[j] += r.amount
			}
			if !slices.Contains(provOrder, p) {
				provOrder = append(provOrder, p)
			}
		}
	}
	return provOrder, keys, amounts
}

// resultBuilder is the state of one search.result. The many small slices
// of the answer are cut from a few shared backing arrays: a response of
// ten thousand candidates would otherwise cost tens of thousands of
// allocations.
type resultBuilder struct {
	e       *search
	s       *Snapshot
	classes requestClasses
	// summarisedBits or summarisedSet records the providers (or trees)
	// already listed: a bit per provider of the snapshot for a large
	// answer, a set of those listed for a small one, such as a claim's
	// sample, whose cost must not grow with the snapshot.
	summarisedBits []uint64
	summarisedSet  map[int32]struct{}
	// pooled: summarisedBits are the search scratch's, to be cleared
	// (release) for the next search.
	pooled bool
	// left is how many candidates are still to be cut from the backing
	// arrays.
	left int
	// oneRes, when not nil, is what a request of one allocation takes,
	// shared by every such request (deferredRequests.oneRes); ones are
	// the pieces of those of one group.
	oneRes   []ResourceAmount
	ones     []oneRequest
	allocBuf []Allocation
	resBuf   []ResourceAmount
	mapBuf   []GroupMapping
	uuidBuf  []string
}

// oneRequest is what a request of one allocation and one group is cut
// from: its allocation, its mapping and the mapping's provider.
type oneRequest struct {
	alloc   [1]Allocation
	mapping [1]GroupMapping
	uuid    [1]string
}

// provClass is one provider's amount of one class in a candidate.
type provClass struct {
	prov  int32
	class int32
}

// namedClass is a class id with its name.
type namedClass struct {
	id   int32
	name string
}

// requestClasses are the names of a search's classes (its first
// len(known), a few), as its slots hold them; name reads others from the
// snapshot's names. An array, so that it allocates nothing.
type requestClasses struct {
	known [8]namedClass
	n     int
}

// classesOf returns the names of e's classes.
func classesOf(e *search) requestClasses {
	var rc requestClasses
	for i := range e.slots {
		for _, r := range e.slots[i].res {
			known := rc.known[:rc.n]
			if rc.n < len(rc.known) && !slices.ContainsFunc(known, func(c namedClass) bool { return c.id == r.class }) {
				rc.known[rc.n] = namedClass{r.class, r.name}
				rc.n++
			}
		}
	}
	return rc
}

// name is the name of class id in s's names.
func (rc *requestClasses) name(s *Snapshot, id int32) string {
	for _, c := range rc.known[:rc.n] {
		if c.id == id {
			return c.name
		}
	}
	return s.names.className[id]
}

// newRequestBuilder prepares the allocation requests of n candidates of
// e, and nothing of their summaries.
func newRequestBuilder(e *search, n int) resultBuilder {
	return resultBuilder{e: e, s: e.snap, left: n, classes: classesOf(e)}
}

// newResultBuilder prepares the answer of n candidates of e.
func newResultBuilder(e *search, n int) resultBuilder {
	s := e.snap
	b := newRequestBuilder(e, n)
	words := (s.provs.len() + 63) / 64
	switch sc := e.scratch; {
	case sc != nil && words <= maxPooledScratch:
		// The scratch's bits, all clear: a claim's sample marks a
		// hundred and clears them again, whatever the snapshot's size.
		if len(sc.summarised) < words {
			sc.summarised = make([]uint64, words)
		}
		b.summarisedBits, b.pooled = sc.summarised[:words], true
	case n*len(e.slots) < s.provs.len()/64:
		b.summarisedSet = make(map[int32]struct{}, n)
	default:
		b.summarisedBits = make([]uint64, words)
	}
	return b
}

// release clears the bits of units, the units summarised, when the
// bits are the search scratch's.
func (b *resultBuilder) release(units []int32) {
	if b.pooled {
		for _, u := range units {
			b.summarisedBits[u/64] &^= uint64(1) << (u % 64)
		}
	}
}

// request fills ar, the allocation request of vec, whose providers are
// provOrder and whose amounts are keys and amounts (in parallel): its
// allocations, one per provider, and its mappings, one per group (the
// providers of vec the group's slots use, without repeats), cut from
// the backing arrays.
func (b *resultBuilder) request(ar *AllocationRequest, vec, provOrder []int32, keys []provClass, amounts []int64) {
	s, e := b.s, b.e
	if b.oneRes != nil && len(provOrder) == 1 {
		var allocs []Allocation
		var maps []GroupMapping
		var uuids []string
		if len(e.groupSlots) == 1 {
			if len(b.ones) == 0 {
				b.ones = make([]oneRequest, max(b.left, 1))
			}
			o := &b.ones[0]
			b.ones, b.left = b.ones[1:], b.left-1
			allocs, maps, uuids = o.alloc[:], o.mapping[:], o.uuid[:0]
		} else {
			allocs, _, maps, uuids = b.take(1, 0, len(e.groupSlots), len(vec))
		}
		allocs[0] = Allocation{ProviderUUID: s.provs.at(provOrder[0]).UUID, Resources: b.oneRes}
		b.mappings(ar, vec, allocs, maps, uuids)
		return
	}
	allocs, res, maps, uuids := b.take(len(provOrder), len(keys), len(e.groupSlots), len(vec))
	n := 0
	for pi, p := range provOrder {
		start := n
		for j, k := range keys {
			if k.prov == p {
				res[n] = ResourceAmount{Class: b.className(k.class), Amount: amounts[j]}
				n++
			}
		}
		allocs[pi] = Allocation{ProviderUUID: s.provs.at(p).UUID, Resources: res[start:n:n]}
	}
	b.mappings(ar, vec, allocs, maps, uuids)
}

// mappings completes ar, the allocation request of vec, with allocs and
// its mappings, cut from maps and uuids (request).
func (b *resultBuilder) mappings(ar *AllocationRequest, vec []int32, allocs []Allocation, maps []GroupMapping, uuids []string) {
	s, e := b.s, b.e
	for gi, slotsOf := range e.groupSlots {
		from := len(uuids)
		for _, si := range slotsOf {
			u := s.provs.at(vec[si]).UUID
			if !slices.Contains(uuids[from:], u) {
				uuids = append(uuids, u)
			}
		}
		maps[gi] = GroupMapping{Suffix: e.suffixes[gi], ProviderUUIDs: uuids[from:len(uuids):len(uuids)]}
	}
	ar.Allocations, ar.Mappings = allocs, maps
}

// summaryUnit is what the summaries of provider p's answer cover: from
// 1.29 (nested aware) p's whole tree, named by its root; before, p.
func (b *resultBuilder) summaryUnit(p int32) int32 {
	if b.e.nestedAware && !b.s.idx.flat {
		// (In a flat cloud every provider is its own root: no read of
		// the root index, a cache miss per candidate in a large
		// snapshot.)
		return b.s.idx.root[p]
	}
	return p
}

// className is the name of class id.
func (b *resultBuilder) className(id int32) string { return b.classes.name(b.s, id) }

// firstSummary records unit as listed and reports whether it was not
// listed before.
func (b *resultBuilder) firstSummary(unit int32) bool {
	if b.summarisedSet != nil {
		if _, ok := b.summarisedSet[unit]; ok {
			return false
		}
		b.summarisedSet[unit] = struct{}{}
		return true
	}
	w, bit := unit/64, uint64(1)<<(unit%64)
	if b.summarisedBits[w]&bit != 0 {
		return false
	}
	b.summarisedBits[w] |= bit
	return true
}

// take cuts one candidate's slices; the backing arrays hold up to 1024
// candidates like this one, but no more than are left.
func (b *resultBuilder) take(nAlloc, nRes, nMap, nUUID int) ([]Allocation, []ResourceAmount, []GroupMapping, []string) {
	chunk := min(1024, max(b.left, 1))
	b.left--
	if len(b.allocBuf) < nAlloc {
		b.allocBuf = make([]Allocation, max(chunk*nAlloc, nAlloc))
	}
	if len(b.resBuf) < nRes {
		b.resBuf = make([]ResourceAmount, max(chunk*nRes, nRes))
	}
	if len(b.mapBuf) < nMap {
		b.mapBuf = make([]GroupMapping, max(chunk*nMap, nMap))
	}
	if len(b.uuidBuf) < nUUID {
		b.uuidBuf = make([]string, max(chunk*nUUID, nUUID))
	}
	a, r, m, u := b.allocBuf[:nAlloc:nAlloc], b.resBuf[:nRes:nRes], b.mapBuf[:nMap:nMap], b.uuidBuf[:0:nUUID]
	b.allocBuf, b.resBuf, b.mapBuf, b.uuidBuf = b.allocBuf[nAlloc:], b.resBuf[nRes:], b.mapBuf[nMap:], b.uuidBuf[nUUID:]
	return a, r, m, u
}

// answer completes out with the providers units name (each a provider,
// or from 1.29 a tree): as versions with versionsOnly, as summaries
// otherwise.
func (b *resultBuilder) answer(out *Candidates, units []int32, versionsOnly bool) *Candidates {
	s := b.s
	// Below 1.29 the units are providers; in a flat cloud a tree is its
	// root alone: either way the members are the units.
	members := units
	if b.e.nestedAware && !s.idx.flat {
		members = make([]int32, 0, len(units))
		for _, u := range units {
			members = append(members, s.idx.members.of(u)...)
		}
	}
	out.snap, out.summaryList, out.Flat = s, members, s.idx.flat
	if versionsOnly {
		out.Versions = make([]ProviderVersion, len(members))
		for k, i := range members {
			out.Versions[k] = ProviderVersion{s.provs.at(i), i}
		}
		return out
	}
	out.Summaries = s.summaries(members)
	return out
}

// summaries describes the providers in list.
func (s *Snapshot) summaries(list []int32) []ProviderSummary {
	out := make([]ProviderSummary, len(list))
	nRes, nTraits, nAggs := 0, 0, 0
	for _, i := range list {
		nRes += len(s.provs.at(i).Inventories)
		nTraits += len(s.provs.at(i).Traits)
		nAggs += len(s.provs.at(i).Aggregates)
	}
	resBuf := make([]InventoryUsage, nRes)
	traitBuf := make([]string, nTraits)
	aggBuf := make([]string, nAggs)
	for k, i := range list {
		p := s.provs.at(i)
		ps := &out[k]
		ps.Provider = Provider{ID: p.ID, UUID: p.UUID, Name: p.Name, Generation: p.Generation,
			RootUUID: s.provs.at(s.idx.root[i]).UUID, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
		ps.Version, ps.Evacuated = ProviderVersion{p, i}, p.Evacuated
		if pi := s.idx.parent[i]; pi >= 0 {
			ps.ParentUUID = s.provs.at(pi).UUID
		}
		ps.Resources, resBuf = resBuf[:len(p.Inventories):len(p.Inventories)], resBuf[len(p.Inventories):]
		for j := range p.Inventories {
			inv := &p.Inventories[j]
			ps.Resources[j] = inv.Usage(s.names.className[inv.Class])
		}
		ps.Aggregates, aggBuf = aggBuf[:len(p.Aggregates):len(p.Aggregates)], aggBuf[len(p.Aggregates):]
		for j, a := range p.Aggregates {
			ps.Aggregates[j] = s.names.aggUUID[a]
		}
		ps.Traits, traitBuf = traitBuf[:len(p.Traits):len(p.Traits)], traitBuf[len(p.Traits):]
		for j, t := range p.Traits {
			ps.Traits[j] = s.names.traitName[t]
		}
	}
	return out
}
