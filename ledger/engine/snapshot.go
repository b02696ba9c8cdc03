package engine

import (
	"slices"
	"time"
	"unsafe"
)

// The snapshot is an immutable, in-memory copy of everything allocation
// candidates and provider listings are computed from: providers and their
// trees, inventories with current usage, traits and aggregates. A Snapshot
// is never modified once published; a change makes a new one that shares
// whatever did not change (WithProviders, WithNames). The ledger loads
// snapshots from PostgreSQL and keeps them fresh; tests and benchmarks
// build them in memory with New.
//
// Providers are addressed by a dense index (int32) into Snapshot.provs, so
// the engine works on small integers and slices instead of maps.

// sharingTraitName marks providers whose inventory other trees in the same
// aggregate may consume.
const sharingTraitName = "MISC_SHARES_VIA_AGGREGATE"

// InventoryRecord is one inventory record plus what is allocated against it.
type InventoryRecord struct {
	Class    int32
	Total    int64
	Reserved int64
	MinUnit  int64
	MaxUnit  int64
	StepSize int64
	Ratio    float64
	Used     int64
}

// capacity is (total - reserved) * allocation_ratio, as PostgreSQL and
// Placement compute it (in floating point).
func (inv *InventoryRecord) capacity() float64 {
	return float64(inv.Total-inv.Reserved) * inv.Ratio
}

// Capacity is the inventory's capacity in whole units, as summaries
// report it (InventoryUsage.Capacity).
func (inv *InventoryRecord) Capacity() int64 { return int64(inv.capacity()) }

// Usage is the record as an InventoryUsage of class (the name of
// inv.Class).
func (inv *InventoryRecord) Usage(class string) InventoryUsage {
	return InventoryUsage{Inventory: Inventory{ResourceClass: class, Total: inv.Total, Reserved: inv.Reserved,
		MinUnit: inv.MinUnit, MaxUnit: inv.MaxUnit, StepSize: inv.StepSize, AllocationRatio: inv.Ratio},
		Capacity: inv.Capacity(), Used: inv.Used}
}

// fits reports whether amount more units, requested in one piece by one
// request group, can be allocated: within min_unit, max_unit and
// step_size, and within capacity once what is already used is counted.
func (inv *InventoryRecord) fits(amount int64) bool {
	return amount >= inv.MinUnit && amount <= inv.MaxUnit &&
		(inv.StepSize <= 0 || amount%inv.StepSize == 0) &&
		float64(inv.Used+amount) <= inv.capacity()
}

// fitsTotal reports whether a consolidated amount (the sum of what several
// request groups take from this inventory) stays within capacity and
// max_unit, the checks Placement applies after merging groups.
func (inv *InventoryRecord) fitsTotal(amount int64) bool {
	return amount <= inv.MaxUnit && float64(inv.Used+amount) <= inv.capacity()
}

// ProviderRecord is one provider as the snapshot holds it: its row,
// inventories with usage, traits and aggregates as ids of the snapshot's
// Names. Once in a snapshot it is immutable; a change is a new record
// (see WithProviders).
type ProviderRecord struct {
	ID          int64
	UUID        string
	Name        string
	Generation  int64
	ParentID    int64 // 0 for a root
	RootID      int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Inventories []InventoryRecord // sorted by class id
	Traits      []int32           // sorted trait ids
	Aggregates  []int32           // sorted aggregate ids
	// Evacuated is set on a root provider an operator evacuated: claims
	// (CandidatesParams.AvoidEvacuated) do not place on its tree.
	Evacuated bool
}

// NewRecord returns a copy of p, with a copy of its inventories. A few
// inventories (a compute node's three or four) share the record's
// allocation, and so do its trait and aggregate ids when they are few
// and its uuid's bytes: a claim reads a record, its inventories, its
// aggregates and its uuid for each of the hundred providers it samples,
// which are then one stretch of memory instead of four scattered over a
// large snapshot's heap, and one object for the collector to mark
// instead of four.
func NewRecord(p *ProviderRecord) *ProviderRecord {
	var rec *ProviderRecord
	var invs []InventoryRecord
	var tail *recordTail
	switch len(p.Inventories) {
	case 1:
		rec, invs, tail = boxed(func(a *[1]InventoryRecord) []InventoryRecord { return a[:] })
	case 2:
		rec, invs, tail = boxed(func(a *[2]InventoryRecord) []InventoryRecord { return a[:] })
	case 3:
		rec, invs, tail = boxed(func(a *[3]InventoryRecord) []InventoryRecord { return a[:] })
	case 4:
		rec, invs, tail = boxed(func(a *[4]InventoryRecord) []InventoryRecord { return a[:] })
	default:
		rec, invs = new(ProviderRecord), slices.Clone(p.Inventories)
	}
	*rec = *p
	copy(invs, p.Inventories)
	rec.Inventories = invs
	if tail != nil {
		nt, na := len(p.Traits), len(p.Aggregates)
		if nt+na <= len(tail.ids) {
			copy(tail.ids[:], p.Traits)
			copy(tail.ids[nt:], p.Aggregates)
			if nt > 0 {
				rec.Traits = tail.ids[:nt:nt]
			}
			if na > 0 {
				rec.Aggregates = tail.ids[nt : nt+na : nt+na]
			}
		}
		if len(p.UUID) == len(tail.uuid) {
			copy(tail.uuid[:], p.UUID)
			// The string's bytes are the box's, never written again.
			rec.UUID = unsafe.String(&tail.uuid[0], len(tail.uuid))
		}
	}
	return rec
}

// recordTail is what a record's allocation holds after its inventories:
// room for a few trait and aggregate ids and for a uuid's 36 bytes.
type recordTail struct {
	ids  [4]int32
	uuid [36]byte
}

// boxed allocates a record and, after it in the same allocation, the
// array of inventories A, which all returns as a slice, and a tail.
func boxed[A any](all func(*A) []InventoryRecord) (*ProviderRecord, []InventoryRecord, *recordTail) {
	b := new(struct {
		rec  ProviderRecord
		inv  A
		tail recordTail
	})
	return &b.rec, all(&b.inv), &b.tail
}

// Inventory returns p's inventory of class, or nil.
func (p *ProviderRecord) Inventory(class int32) *InventoryRecord {
	for i := range p.Inventories {
		if p.Inventories[i].Class == class {
			return &p.Inventories[i]
		}
	}
	return nil
}

// InventoryFrom is Inventory, looking first at position hint (the
// providers of one cloud mostly list their classes in the same order):
// the inventory and its position, or nil and hint when p has none of
// class.
func (p *ProviderRecord) InventoryFrom(class int32, hint int) (*InventoryRecord, int) {
	if hint >= 0 && hint < len(p.Inventories) && p.Inventories[hint].Class == class {
		return &p.Inventories[hint], hint
	}
	for i := range p.Inventories {
		if p.Inventories[i].Class == class {
			return &p.Inventories[i], i
		}
	}
	return nil, hint
}

func (p *ProviderRecord) hasTrait(t int32) bool {
	_, ok := slices.BinarySearch(p.Traits, t)
	return ok
}

func (p *ProviderRecord) hasAnyTrait(ts []int32) bool {
	for _, t := range ts {
		if p.hasTrait(t) {
			return true
		}
	}
	return false
}

func (p *ProviderRecord) inAnyAgg(aggs []int32) bool {
	for _, a := range aggs {
		if _, ok := slices.BinarySearch(p.Aggregates, a); ok {
			return true
		}
	}
	return false
}

// sameShape reports whether q differs from p only in amounts (inventory
// totals, usage, generation, timestamps), so the snapshot's indexes built
// from p stay valid for q.
func (p *ProviderRecord) sameShape(q *ProviderRecord) bool {
	if p.ID != q.ID || p.UUID != q.UUID || p.Name != q.Name || p.ParentID != q.ParentID ||
		p.RootID != q.RootID || p.Evacuated != q.Evacuated || len(p.Inventories) != len(q.Inventories) ||
		!slices.Equal(p.Traits, q.Traits) || !slices.Equal(p.Aggregates, q.Aggregates) {
		return false
	}
	for i := range p.Inventories {
		if p.Inventories[i].Class != q.Inventories[i].Class {
			return false
		}
	}
	return true
}

// Names maps resource class, trait and aggregate names to ids and back.
// Once in a snapshot it is immutable: a change is made on a Clone. The
// ledger refreshes names a request uses before the request is resolved
// (see Snapshot.UnsureNames).
type Names struct {
	classByName map[string]int32
	className   map[int32]string
	traitByName map[string]int32
	traitName   map[int32]string
	aggByUUID   map[string]int32
	aggUUID     map[int32]string
}

// NewNames returns an empty Names.
func NewNames() *Names {
	return &Names{
		classByName: map[string]int32{}, className: map[int32]string{},
		traitByName: map[string]int32{}, traitName: map[int32]string{},
		aggByUUID: map[string]int32{}, aggUUID: map[int32]string{},
	}
}

// Clone returns a copy that may be modified.
func (n *Names) Clone() *Names {
	c := &Names{
		classByName: make(map[string]int32, len(n.classByName)),
		className:   make(map[int32]string, len(n.className)),
		traitByName: make(map[string]int32, len(n.traitByName)),
		traitName:   make(map[int32]string, len(n.traitName)),
		aggByUUID:   make(map[string]int32, len(n.aggByUUID)),
		aggUUID:     make(map[int32]string, len(n.aggUUID)),
	}
	for k, v := range n.classByName {
		c.classByName[k] = v
	}
	for k, v := range n.className {
		c.className[k] = v
	}
	for k, v := range n.traitByName {
		c.traitByName[k] = v
	}
	for k, v := range n.traitName {
		c.traitName[k] = v
	}
	for k, v := range n.aggByUUID {
		c.aggByUUID[k] = v
	}
	for k, v := range n.aggUUID {
		c.aggUUID[k] = v
	}
	return c
}

// AddClass records resource class id's name.
func (n *Names) AddClass(id int32, name string) {
	n.classByName[name] = id
	n.className[id] = name
}

// AddTrait records trait id's name.
func (n *Names) AddTrait(id int32, name string) {
	n.traitByName[name] = id
	n.traitName[id] = name
}

// AddAggregate records aggregate id's uuid.
func (n *Names) AddAggregate(id int32, uuid string) {
	n.aggByUUID[uuid] = id
	n.aggUUID[id] = uuid
}

// ClassID returns the id of the resource class named name.
func (n *Names) ClassID(name string) (int32, bool) {
	id, ok := n.classByName[name]
	return id, ok
}

// TraitID returns the id of the trait named name.
func (n *Names) TraitID(name string) (int32, bool) {
	id, ok := n.traitByName[name]
	return id, ok
}

// ClassName, TraitName and AggregateUUID return what id stands for, or
// "" when it is not known.
func (n *Names) ClassName(id int32) string { return n.className[id] }

// TraitName: see ClassName.
func (n *Names) TraitName(id int32) string { return n.traitName[id] }

// AggregateUUID: see ClassName.
func (n *Names) AggregateUUID(id int32) string { return n.aggUUID[id] }

// DeleteClass forgets the resource class named name.
func (n *Names) DeleteClass(name string) {
	if id, ok := n.classByName[name]; ok {
		delete(n.classByName, name)
		delete(n.className, id)
	}
}

// DeleteTrait forgets the trait named name.
func (n *Names) DeleteTrait(name string) {
	if id, ok := n.traitByName[name]; ok {
		delete(n.traitByName, name)
		delete(n.traitName, id)
	}
}

// Snapshot is a consistent, immutable view of the providers. Its methods
// are safe for concurrent use.
type Snapshot struct {
	names  *Names
	provs  provTable  // by dense index
	idx    *snapIndex // derived from provs; shared while the shape is unchanged
	newest newestCache
}

// snapIndex holds everything derived from the providers' shape (tree links,
// names, which classes, traits and aggregates each has). It is rebuilt when
// that shape changes and shared between snapshots otherwise.
type snapIndex struct {
	byID    map[int64]int32
	byUUID  stringIndex
	byName  stringIndex
	parent  []int32 // -1 for a root
	root    []int32
	depth   []int32 // 0 for a root
	members lists   // for a root index: every provider of its tree, root first
	roots   []int32 // every root, ascending
	byClass map[int32][]int32
	byTrait map[int32][]int32
	byAgg   map[int32][]int32
	sharing []bool // has MISC_SHARES_VIA_AGGREGATE
	// evacuated is ProviderRecord.Evacuated by index; hasEvacuated: some
	// provider is.
	evacuated    []bool
	hasEvacuated bool
	anchors      lists // for a sharing provider: roots of the trees it shares with, ascending
	sharedTo     lists // for a root: sharing providers of other trees it may use, ascending
	hasTrees     bool
	// hasSharing: some provider has MISC_SHARES_VIA_AGGREGATE.
	hasSharing bool
	// flat is set when every provider is the root of its own tree and none
	// shares: every provider is then an anchor, and only of itself.
	flat bool
}

// buildIndex derives a snapIndex from provs, which must not contain nil.
func buildIndex(provs []*ProviderRecord, n *Names) *snapIndex {
	ix := &snapIndex{
		byID:    make(map[int64]int32, len(provs)),
		byUUID:  newStringIndex(len(provs)),
		byName:  newStringIndex(len(provs)),
		parent:  make([]int32, len(provs)),
		root:    make([]int32, len(provs)),
		depth:   make([]int32, len(provs)),
		byClass: map[int32][]int32{},
		byTrait: map[int32][]int32{},
		byAgg:   map[int32][]int32{},
		sharing: make([]bool, len(provs)),
	}
	uuidOf := func(i int32) string { return provs[i].UUID }
	nameOf := func(i int32) string { return provs[i].Name }
	for i, p := range provs {
		ix.byID[p.ID] = int32(i)
		ix.byUUID.add(p.UUID, int32(i), uuidOf)
		ix.byName.add(p.Name, int32(i), nameOf)
	}
	sharingTrait, hasSharingTrait := n.traitByName[sharingTraitName]
	for i, p := range provs {
		i32 := int32(i)
		ix.parent[i] = -1
		if p.ParentID != 0 {
			if pi, ok := ix.byID[p.ParentID]; ok {
				ix.parent[i] = pi
				ix.hasTrees = true
			}
		}
		ix.root[i] = i32
		if ri, ok := ix.byID[p.RootID]; ok {
			ix.root[i] = ri
		}
		for _, inv := range p.Inventories {
			ix.byClass[inv.Class] = append(ix.byClass[inv.Class], i32)
		}
		for _, t := range p.Traits {
			ix.byTrait[t] = append(ix.byTrait[t], i32)
		}
		for _, a := range p.Aggregates {
			ix.byAgg[a] = append(ix.byAgg[a], i32)
		}
		ix.sharing[i] = hasSharingTrait && p.hasTrait(sharingTrait)
		ix.hasSharing = ix.hasSharing || ix.sharing[i]
		ix.markEvacuated(i, p)
	}
	members := make([]listEntry, len(provs))
	for i := range provs {
		d := int32(0)
		for j := ix.parent[i]; j >= 0 && d < int32(len(provs)); j = ix.parent[j] {
			d++
		}
		ix.depth[i] = d
		r := ix.root[i]
		if r == int32(i) {
			ix.roots = append(ix.roots, r)
		}
		members[i] = listEntry{r, int32(i)}
	}
	ix.members = newLists(len(provs), members)
	// Members of a tree: root first, then by depth, then by index, which is
	// the providers' creation order.
	for _, r := range ix.roots {
		m := ix.members.of(r)
		slices.SortStableFunc(m, func(a, b int32) int { return int(ix.depth[a] - ix.depth[b]) })
	}
	ix.flat = true
	for i := range provs {
		if ix.root[i] != int32(i) || ix.sharing[i] {
			ix.flat = false
			break
		}
	}
	var anchors, sharedTo []listEntry
	for i, p := range provs {
		if !ix.sharing[i] {
			continue
		}
		var as []int32
		for _, a := range p.Aggregates {
			for _, m := range ix.byAgg[a] {
				as = append(as, ix.root[m])
			}
		}
		slices.Sort(as)
		for _, a := range slices.Compact(as) {
			anchors = append(anchors, listEntry{int32(i), a})
			if a != ix.root[i] {
				sharedTo = append(sharedTo, listEntry{a, int32(i)})
			}
		}
	}
	ix.anchors, ix.sharedTo = newLists(len(provs), anchors), newLists(len(provs), sharedTo)
	return ix
}

// markEvacuated records provider i (p) in evacuated when it is evacuated.
func (ix *snapIndex) markEvacuated(i int, p *ProviderRecord) {
	if !p.Evacuated {
		return
	}
	if ix.evacuated == nil {
		ix.evacuated = make([]bool, len(ix.parent))
	}
	ix.evacuated[i], ix.hasEvacuated = true, true
}

// isAncestorOrSelf reports whether a is b or one of b's ancestors.
func (s *Snapshot) isAncestorOrSelf(a, b int32) bool {
	for j := b; j >= 0; j = s.idx.parent[j] {
		if j == a {
			return true
		}
	}
	return false
}

// lca returns the lowest common ancestor of a and b, or -1 when they are in
// different trees.
func (s *Snapshot) lca(a, b int32) int32 {
	ix := s.idx
	if ix.root[a] != ix.root[b] {
		return -1
	}
	for ix.depth[a] > ix.depth[b] {
		a = ix.parent[a]
	}
	for ix.depth[b] > ix.depth[a] {
		b = ix.parent[b]
	}
	for a != b {
		a, b = ix.parent[a], ix.parent[b]
	}
	return a
}

// Len is the number of providers in the snapshot.
func (s *Snapshot) Len() int { return s.provs.len() }

// Names returns the snapshot's names. They must not be changed.
func (s *Snapshot) Names() *Names { return s.names }

// WithNames returns a snapshot of s's providers with the names n, which
// must hold every id s's providers use.
func (s *Snapshot) WithNames(n *Names) *Snapshot {
	out := &Snapshot{names: n, provs: s.provs, idx: s.idx}
	out.carryNewest(s, nil)
	return out
}

// ProviderByID returns the record of the provider with row id id. It must
// not be changed.
func (s *Snapshot) ProviderByID(id int64) (*ProviderRecord, bool) {
	i, ok := s.idx.byID[id]
	if !ok {
		return nil, false
	}
	return s.provs.at(i), true
}

// UnsureNames lists, of the given resource class and trait names, those
// the snapshot's names may have wrong: names it does not know (they may
// have been created since it was loaded) and names it knows but that no
// provider uses (such a class or trait may have been deleted without any
// provider changing). A name in use cannot be deleted, so the common case
// lists none.
func (s *Snapshot) UnsureNames(classes, traits []string) (unsureClasses, unsureTraits []string) {
	for _, c := range classes {
		if id, ok := s.names.classByName[c]; !ok || len(s.idx.byClass[id]) == 0 {
			unsureClasses = append(unsureClasses, c)
		}
	}
	for _, t := range traits {
		if id, ok := s.names.traitByName[t]; !ok || len(s.idx.byTrait[id]) == 0 {
			unsureTraits = append(unsureTraits, t)
		}
	}
	return unsureClasses, unsureTraits
}

// provider converts provider i to the public Provider type.
func (s *Snapshot) provider(i int32) Provider {
	p := s.provs.at(i)
	out := Provider{
		ID: p.ID, UUID: p.UUID, Name: p.Name, Generation: p.Generation,
		RootUUID: s.provs.at(s.idx.root[i]).UUID, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
	if pi := s.idx.parent[i]; pi >= 0 {
		out.ParentUUID = s.provs.at(pi).UUID
	}
	return out
}

// WithProviders returns a snapshot in which the providers in changed
// replace or join those of s and the ids in deleted are gone. Indexes are
// shared with s when no provider changed shape, and then the cost is
// proportional to the number of changed providers, not to the snapshot's
// size (see provTable).
func (s *Snapshot) WithProviders(changed map[int64]*ProviderRecord, deleted map[int64]bool, n *Names) *Snapshot {
	gone := 0
	for id := range deleted {
		if _, ok := s.idx.byID[id]; ok {
			gone++
		}
	}
	if gone == 0 {
		// The common case, a claim batch's patch: every changed provider
		// is already known and keeps its shape.
		// (A batch's few on the stack.)
		var atArr [16]indexedRecord
		at := atArr[:0]
		for id, q := range changed {
			i, ok := s.idx.byID[id]
			if !ok || !s.provs.at(i).sameShape(q) {
				at = nil
				break
			}
			at = append(at, indexedRecord{i, q})
		}
		if at != nil {
			slices.SortFunc(at, cmpIndexed)
			out := &Snapshot{names: n, provs: s.provs.with(at), idx: s.idx}
			out.carryNewest(s, at)
			return out
		}
	}
	provs := s.provs.list()
	seen := make(map[int64]bool, len(changed))
	for i, p := range provs {
		if deleted[p.ID] {
			continue
		}
		if q, ok := changed[p.ID]; ok {
			seen[p.ID] = true
			provs[i] = q
		}
	}
	var added []*ProviderRecord
	for id, q := range changed {
		if !seen[id] {
			added = append(added, q)
		}
	}
	if len(added) > 0 {
		slices.SortFunc(added, func(a, b *ProviderRecord) int { return cmpInt64(a.ID, b.ID) })
		provs = append(provs, added...)
	}
	if gone > 0 {
		provs = slices.DeleteFunc(provs, func(p *ProviderRecord) bool { return deleted[p.ID] })
	}
	// Keep id order so dense indexes follow creation order.
	if !slices.IsSortedFunc(provs, func(a, b *ProviderRecord) int { return cmpInt64(a.ID, b.ID) }) {
		slices.SortFunc(provs, func(a, b *ProviderRecord) int { return cmpInt64(a.ID, b.ID) })
	}
	return &Snapshot{names: n, provs: newProvTable(provs), idx: buildIndex(provs, n)}
}

// cmpIndexed orders changes by index.
func cmpIndexed(a, b indexedRecord) int { return int(a.i - b.i) }

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// New builds a snapshot from a complete set of providers, whose
// inventories, traits and aggregates are sorted by id and whose ids n
// names. It takes provs over: the records must not be changed afterwards.
func New(provs []*ProviderRecord, n *Names) *Snapshot {
	slices.SortFunc(provs, func(a, b *ProviderRecord) int { return cmpInt64(a.ID, b.ID) })
	return &Snapshot{names: n, provs: newProvTable(provs), idx: buildIndex(provs, n)}
}

// provTable holds a snapshot's providers by dense index, in chunks of
// provChunk records. Snapshots derived from one another share the chunks
// nobody changed, so publishing a snapshot in which k providers changed
// copies the list of chunks and the k (at most) touched chunks, not every
// provider: a claim batch's patch costs the same at 1,000 providers as at
// 100,000 (BenchmarkPatch). A provTable is immutable once in a snapshot;
// only one being built (or a private scratch copy) is changed with set.
type provTable struct {
	chunks []*provChunkRecords
	n      int
}

const (
	provChunkBits = 8
	provChunk     = 1 << provChunkBits
	provChunkMask = provChunk - 1
)

// provChunkRecords is one chunk: the records of provChunk consecutive
// indexes (the last chunk's tail past the table's length is nil).
type provChunkRecords [provChunk]*ProviderRecord

// indexedRecord is the record p for index i: a change with applies.
type indexedRecord struct {
	i int32
	p *ProviderRecord
}

// newProvTable returns a table of list's records, in order.
func newProvTable(list []*ProviderRecord) provTable {
	t := provTable{n: len(list), chunks: make([]*provChunkRecords, 0, (len(list)+provChunkMask)/provChunk)}
	for start := 0; start < len(list); start += provChunk {
		c := new(provChunkRecords)
		copy(c[:], list[start:min(start+provChunk, len(list))])
		t.chunks = append(t.chunks, c)
	}
	return t
}

// at returns provider i.
func (t *provTable) at(i int32) *ProviderRecord {
	return t.chunks[i>>provChunkBits][i&provChunkMask]
}

// len is the number of providers.
func (t *provTable) len() int { return t.n }

// list returns every record, in order, in a new slice.
func (t *provTable) list() []*ProviderRecord {
	out := make([]*ProviderRecord, 0, t.n)
	for _, c := range t.chunks {
		out = append(out, c[:min(provChunk, t.n-len(out))]...)
	}
	return out
}

// with returns a table in which the records of changed, sorted by index
// without repeats, replace those at their indexes; t is left as it was.
// It copies the list of chunks and the chunks changed touches.
func (t *provTable) with(changed []indexedRecord) provTable {
	out := provTable{n: t.n, chunks: make([]*provChunkRecords, len(t.chunks))}
	copy(out.chunks, t.chunks)
	copied := int32(-1)
	for _, c := range changed {
		ci := c.i >> provChunkBits
		if ci != copied {
			cp := *t.chunks[ci]
			out.chunks[ci], copied = &cp, ci
		}
		out.chunks[ci][c.i&provChunkMask] = c.p
	}
	return out
}

// clone returns a deep copy of the table's chunks (not of the records),
// which may be changed with set.
func (t *provTable) clone() provTable {
	out := provTable{n: t.n, chunks: make([]*provChunkRecords, len(t.chunks))}
	for i, c := range t.chunks {
		cp := *c
		out.chunks[i] = &cp
	}
	return out
}

// set replaces provider i. Only for a table no snapshot shares (see clone).
func (t *provTable) set(i int32, p *ProviderRecord) {
	t.chunks[i>>provChunkBits][i&provChunkMask] = p
}
