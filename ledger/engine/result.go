package engine

import "slices"

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
