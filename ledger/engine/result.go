package engine

import "slices"

// result turns provider vectors into allocation requests and summaries.
// The many small slices of the answer are cut from a few shared backing
// arrays: a response of ten thousand candidates would otherwise cost tens
// of thousands of allocations.
func (e *search) result(found [][]int32, versionsOnly bool) *Candidates {
	s := e.snap
	out := &Candidates{Requests: make([]AllocationRequest, len(found))}
	type key struct {
		prov  int32
		class int32
	}
	var provOrder []int32
	var amounts []int64 // parallel to keys
	var keys []key
	// The request's few class names, looked up once.
	type classID struct {
		id   int32
		name string
	}
	var classes []classID
	for i := range e.slots {
		for _, r := range e.slots[i].res {
			if !slices.ContainsFunc(classes, func(c classID) bool { return c.id == r.class }) {
				classes = append(classes, classID{r.class, s.names.className[r.class]})
			}
		}
	}
	className := func(id int32) string {
		for _, c := range classes {
			if c.id == id {
				return c.name
			}
		}
		return s.names.className[id]
	}
	// summarised records the providers (or trees) already listed: a bit
	// per provider of the snapshot for a large answer, a set of those
	// listed for a small one, such as a claim's sample, whose cost must
	// not grow with the snapshot.
	var summarisedBits []uint64
	var summarisedSet map[int32]struct{}
	if len(found)*len(e.slots) < s.provs.len()/64 {
		summarisedSet = make(map[int32]struct{}, len(found))
	} else {
		summarisedBits = make([]uint64, (s.provs.len()+63)/64)
	}
	firstSummary := func(unit int32) bool {
		if summarisedSet != nil {
			if _, ok := summarisedSet[unit]; ok {
				return false
			}
			summarisedSet[unit] = struct{}{}
			return true
		}
		w, bit := unit/64, uint64(1)<<(unit%64)
		if summarisedBits[w]&bit != 0 {
			return false
		}
		summarisedBits[w] |= bit
		return true
	}
	var summaryOrder []int32
	var allocBuf []Allocation
	var resBuf []ResourceAmount
	var mapBuf []GroupMapping
	var uuidBuf []string
	// take cuts one candidate's slices; the backing arrays hold up to 1024
	// candidates like this one, but no more than are left.
	left := len(found)
	take := func(nAlloc, nRes, nMap, nUUID int) ([]Allocation, []ResourceAmount, []GroupMapping, []string) {
		chunk := min(1024, max(left, 1))
		left--
		if len(allocBuf) < nAlloc {
			allocBuf = make([]Allocation, max(chunk*nAlloc, nAlloc))
		}
		if len(resBuf) < nRes {
			resBuf = make([]ResourceAmount, max(chunk*nRes, nRes))
		}
		if len(mapBuf) < nMap {
			mapBuf = make([]GroupMapping, max(chunk*nMap, nMap))
		}
		if len(uuidBuf) < nUUID {
			uuidBuf = make([]string, max(chunk*nUUID, nUUID))
		}
		a, r, m, u := allocBuf[:nAlloc:nAlloc], resBuf[:nRes:nRes], mapBuf[:nMap:nMap], uuidBuf[:0:nUUID]
		allocBuf, resBuf, mapBuf, uuidBuf = allocBuf[nAlloc:], resBuf[nRes:], mapBuf[nMap:], uuidBuf[nUUID:]
		return a, r, m, u
	}
	for ci, vec := range found {
		provOrder, keys, amounts = provOrder[:0], keys[:0], amounts[:0]
		for si, p := range vec {
			for _, r := range e.slots[si].res {
				k := key{p, r.class}
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
		allocs, res, maps, uuids := take(len(provOrder), len(keys), len(e.groupSlots), len(vec))
		n := 0
		for pi, p := range provOrder {
			start := n
			for j, k := range keys {
				if k.prov == p {
					res[n] = ResourceAmount{Class: className(k.class), Amount: amounts[j]}
					n++
				}
			}
			allocs[pi] = Allocation{ProviderUUID: s.provs.at(p).UUID, Resources: res[start:n:n]}
			// Summaries cover whole trees from 1.29; before, only the
			// providers that allocate.
			unit := p
			if e.nestedAware && !s.idx.flat {
				// (In a flat cloud every provider is its own root: no
				// read of the root index, a cache miss per candidate in a
				// large snapshot.)
				unit = s.idx.root[p]
			}
			if firstSummary(unit) {
				summaryOrder = append(summaryOrder, unit)
			}
		}
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
		out.Requests[ci] = AllocationRequest{Allocations: allocs, Mappings: maps}
	}
	var members []int32
	for _, u := range summaryOrder {
		if e.nestedAware && !s.idx.flat {
			// (In a flat cloud a tree is its root alone.)
			members = append(members, s.idx.members.of(u)...)
		} else {
			members = append(members, u)
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
	resBuf := make([]SummaryResource, nRes)
	traitBuf := make([]string, nTraits)
	aggBuf := make([]string, nAggs)
	for k, i := range list {
		p := s.provs.at(i)
		ps := &out[k]
		ps.UUID, ps.Name, ps.Generation, ps.RootUUID = p.UUID, p.Name, p.Generation, s.provs.at(s.idx.root[i]).UUID
		ps.Version, ps.Evacuated = ProviderVersion{p, i}, p.Evacuated
		if pi := s.idx.parent[i]; pi >= 0 {
			ps.ParentUUID = s.provs.at(pi).UUID
		}
		ps.Resources, resBuf = resBuf[:len(p.Inventories):len(p.Inventories)], resBuf[len(p.Inventories):]
		for j := range p.Inventories {
			inv := &p.Inventories[j]
			ps.Resources[j] = SummaryResource{Class: s.names.className[inv.Class], Capacity: inv.Capacity(), Used: inv.Used,
				Total: inv.Total, Reserved: inv.Reserved, MinUnit: inv.MinUnit, MaxUnit: inv.MaxUnit, StepSize: inv.StepSize, AllocationRatio: inv.Ratio}
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
