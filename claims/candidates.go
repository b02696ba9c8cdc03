package claims

import (
	"slices"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// sharesViaAggregate marks a provider that shares its inventory with the
// trees of its aggregates.
const sharesViaAggregate = "MISC_SHARES_VIA_AGGREGATE"

// providerBox is a ProviderView and, in the same allocation, the
// inventories of a provider of up to three classes (a compute node's
// VCPU, MEMORY_MB and DISK_GB): a ranking that reads a view finds its
// inventories next to it.
type providerBox struct {
	p   scheduler.ProviderView
	inv [3]engine.InventoryUsage
}

// views builds the scheduler's view of every provider c.Versions stands
// for, into provs by uuid, straight from the snapshot's records, which
// the sampled search has just read: a claim's views are one allocation
// with the inventories of compute nodes (one more for their trait and
// aggregate names). Views are the claim's own, built afresh by every
// claim.
func views(c *engine.Candidates, provs map[string]*scheduler.ProviderView) {
	vb := viewBuilder{names: c.Names(), boxes: make([]providerBox, len(c.Versions))}
	for i := range c.Versions {
		rec, _, _ := c.Record(i)
		vb.count(rec)
	}
	for i := range c.Versions {
		rec, parent, root := c.Record(i)
		p := vb.view(rec, parent, root)
		provs[p.UUID] = p
	}
}

// viewBuilder builds the views of n providers' records (boxes holds n),
// cut from a few shared arrays: count every record first, then view each.
type viewBuilder struct {
	names *engine.Names
	boxes []providerBox
	strs  []string
	// The few classes of the providers, named once.
	classes [8]struct {
		id   int32
		name string
	}
	nClasses int
	nNames   int
}

// count notes that rec is to be viewed.
func (vb *viewBuilder) count(rec *engine.ProviderRecord) {
	vb.nNames += len(rec.Traits) + len(rec.Aggregates)
}

func (vb *viewBuilder) className(id int32) string {
	for _, c := range vb.classes[:vb.nClasses] {
		if c.id == id {
			return c.name
		}
	}
	n := vb.names.ClassName(id)
	if vb.nClasses < len(vb.classes) {
		vb.classes[vb.nClasses].id, vb.classes[vb.nClasses].name = id, n
		vb.nClasses++
	}
	return n
}

// view is the view of rec, whose parent and root have the uuids given;
// at most n of them, of records counted.
func (vb *viewBuilder) view(rec *engine.ProviderRecord, parent, root string) *scheduler.ProviderView {
	if vb.strs == nil {
		vb.strs = make([]string, vb.nNames)
	}
	b := &vb.boxes[0]
	vb.boxes = vb.boxes[1:]
	p := &b.p
	if n := len(rec.Inventories); n <= len(b.inv) {
		p.Resources = b.inv[:n:n]
	} else {
		p.Resources = make(scheduler.Resources, n)
	}
	p.Provider = engine.Provider{ID: rec.ID, UUID: rec.UUID, Name: rec.Name, Generation: rec.Generation,
		ParentUUID: parent, RootUUID: root, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt}
	p.Evacuated = rec.Evacuated
	vb.resources(p.Resources, rec.Inventories)
	// (Empty, not nil, when there are none: as in a summary.)
	strs := vb.strs
	p.Traits, strs = strs[:len(rec.Traits):len(rec.Traits)], strs[len(rec.Traits):]
	for j, t := range rec.Traits {
		p.Traits[j] = vb.names.TraitName(t)
	}
	p.Aggregates, strs = strs[:len(rec.Aggregates):len(rec.Aggregates)], strs[len(rec.Aggregates):]
	for j, a := range rec.Aggregates {
		p.Aggregates[j] = vb.names.AggregateUUID(a)
	}
	vb.strs = strs
	return p
}

// resources fills res with the usages of invs in class name order, as
// scheduler.SortResources orders them (a stable sort): the few
// inventories of a provider are ordered by their positions, and each
// usage is written once, in its place.
func (vb *viewBuilder) resources(res scheduler.Resources, invs []engine.InventoryRecord) {
	var names [8]string
	var order [8]uint8
	if len(invs) > len(order) {
		for j := range invs {
			res[j] = invs[j].Usage(vb.className(invs[j].Class))
		}
		scheduler.SortResources(res)
		return
	}
	for j := range invs {
		names[j] = vb.className(invs[j].Class)
		k := j
		for ; k > 0 && names[j] < names[order[k-1]]; k-- {
			order[k] = order[k-1]
		}
		order[k] = uint8(j)
	}
	for k, j := range order[:len(invs)] {
		res[k] = invs[j].Usage(names[j])
	}
}

// keptRoots sets what a direct ranking (scheduler.Policy.RankDirect)
// of an answer of a flat snapshot sets for the candidates it keeps:
// their Roots (in a flat cloud each provider is its own root, and none
// shares), as schedulerCandidates would, cut from one array. Their views
// are built only for a dry run's answer (keptViews).
func keptRoots(kept []*scheduler.Candidate) {
	n := 0
	for _, c := range kept {
		n += len(c.Allocations)
	}
	roots := make([]string, 0, n)
	for _, c := range kept {
		from := len(roots)
		for _, a := range c.Allocations {
			if !slices.Contains(roots[from:], a.ProviderUUID) {
				roots = append(roots, a.ProviderUUID)
			}
		}
		c.Roots = roots[from:len(roots):len(roots)]
	}
}

// keptViews sets the Providers of those of cands that have none yet,
// candidates of lc (an answer of a flat snapshot) a direct ranking kept
// (keptRoots): the views of their providers, in one map they share, as
// schedulerCandidates would build them. A dry run's answer builds every
// kept one's (Claimer.result: its ranking shows them); another answer
// reads only its candidates' root names (keptRootName), and builds none.
func keptViews(lc *engine.Candidates, cands []*scheduler.Candidate) {
	n := 0
	for _, c := range cands {
		if c.Providers == nil {
			n += len(c.Allocations)
		}
	}
	if n == 0 {
		return
	}
	vb := viewBuilder{names: lc.Names(), boxes: make([]providerBox, n)}
	for _, c := range cands {
		if c.Providers == nil {
			for j := range c.Allocations {
				vb.count(lc.AllocationRecord(c.Index, j))
			}
		}
	}
	provs := make(map[string]*scheduler.ProviderView, n)
	for _, c := range cands {
		if c.Providers != nil {
			continue
		}
		for j, a := range c.Allocations {
			if _, ok := provs[a.ProviderUUID]; !ok {
				rec := lc.AllocationRecord(c.Index, j)
				provs[a.ProviderUUID] = vb.view(rec, "", rec.UUID)
			}
		}
		c.Providers = provs
	}
}

// keptRootName is the name of root, the root of c, a candidate of lc
// (an answer of a flat snapshot) a direct ranking kept, as the view of
// root that keptViews would build says it: from the snapshot's record of
// c's allocation on root (in a flat snapshot each provider is its own
// root); "" if c has none there.
func keptRootName(lc *engine.Candidates, c *scheduler.Candidate, root string) string {
	for j, a := range c.Allocations {
		if a.ProviderUUID == root {
			return lc.AllocationRecord(c.Index, j).Name
		}
	}
	return ""
}

// flatRoots is how many roots the candidates of lc, an answer of a flat
// snapshot asked with VersionsOnly, are anchored on (Candidate.Root: a
// candidate's first allocation's provider): in a flat snapshot a
// candidate's providers are its root alone, and lc.Versions stand for
// the providers of the trees the candidates use, each once.
func flatRoots(lc *engine.Candidates) int {
	return len(lc.Versions)
}

// schedulerCandidates turns an engine answer asked with VersionsOnly into the
// scheduler's view. Provider views are shared between the candidates,
// and are the call's own. A candidate's Roots list the roots of its own
// tree(s) before those of sharing providers, so Root() is the tree the
// candidate is anchored on.
func schedulerCandidates(c *engine.Candidates) []*scheduler.Candidate {
	provs := make(map[string]*scheduler.ProviderView, len(c.Versions))
	views(c, provs)
	// One backing array for the candidates. Their allocations are the
	// engine's own (read-only): the scheduler sees the answer's type.
	out := make([]*scheduler.Candidate, len(c.Requests))
	cands := make([]scheduler.Candidate, len(c.Requests))
	// Most candidates have one root: their Roots are cut from one array.
	rootBuf := make([]string, 0, len(c.Requests))
	for i, ar := range c.Requests {
		sc := &cands[i]
		sc.Index, sc.Providers = i, provs
		sc.Allocations = ar.Allocations
		var rootArr, sharedArr [4]string
		roots, shared := rootArr[:0], sharedArr[:0]
		for _, a := range ar.Allocations {
			root, sharing := a.ProviderUUID, false
			// In a flat cloud a provider is its own root and none shares:
			// no lookup of the provider (a hash of its uuid) nor read of
			// its traits (a cache miss each in a large cloud).
			if !c.Flat {
				if p := provs[a.ProviderUUID]; p != nil {
					if p.RootUUID != "" {
						root = p.RootUUID
					}
					sharing = slices.Contains(p.Traits, sharesViaAggregate)
				}
			}
			switch {
			case slices.Contains(roots, root) || slices.Contains(shared, root):
			case sharing:
				shared = append(shared, root)
			default:
				roots = append(roots, root)
			}
		}
		if n := len(roots) + len(shared); n > cap(rootBuf)-len(rootBuf) {
			sc.Roots = slices.Concat(roots, shared)
		} else if n > 0 {
			from := len(rootBuf)
			rootBuf = append(append(rootBuf, roots...), shared...)
			sc.Roots = rootBuf[from:len(rootBuf):len(rootBuf)]
		}
		out[i] = sc
	}
	return out
}

// mappings is an engine candidate's request group suffix -> providers.
func mappings(ar engine.AllocationRequest) map[string][]string {
	m := make(map[string][]string, len(ar.Mappings))
	for _, g := range ar.Mappings {
		m[g.Suffix] = g.ProviderUUIDs
	}
	return m
}
