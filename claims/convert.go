package claims

import (
	"slices"
	"sync"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// sharesViaAggregate marks a provider that shares its inventory with the
// trees of its aggregates.
const sharesViaAggregate = "MISC_SHARES_VIA_AGGREGATE"

// maxCachedProviders bounds a providerCache's slots: providers whose
// indexes are equal modulo it share a slot, the last one stored keeping
// it (deleted providers would otherwise stay in it for good).
const maxCachedProviders = 100_000

// providerCache keeps the scheduler's view of providers from one claim to
// the next. Building a scheduler.Provider costs a map per provider, and a
// claim converts about a hundred of them; a provider's summary changes
// only when the provider does (a claim on it, an inventory or trait
// change), so most claims find most of theirs here. It is direct-mapped:
// a provider's slot is its index in the snapshot
// (engine.ProviderVersion.Index) modulo the bound, and an entry is valid
// while the engine summary's Version is the same. (A map by uuid cost a
// hash of 36 bytes, a probe of the map and a cache miss on the uuid's
// bytes per provider: in a large cloud, most of a claim's cache lookup.)
// The cached Providers are shared by concurrent claims and must not be
// changed: a claim that enriches providers copies them first (see
// selectCandidates). It is safe for concurrent use.
type providerCache struct {
	mu    sync.RWMutex
	slots []cachedProvider
	// max bounds slots; 0 means maxCachedProviders.
	max int
}

type cachedProvider struct {
	version engine.ProviderVersion
	prov    *scheduler.Provider
}

// slot is v's slot in pc.
func (pc *providerCache) slot(v engine.ProviderVersion) int {
	bound := pc.max
	if bound <= 0 {
		bound = maxCachedProviders
	}
	return v.Index() % bound
}

// lookup fills provs with the cached providers of versions that are still
// current, and returns the indexes in versions of the others. class, when
// not empty, is a resource class the claim will read of every provider
// (see touchProviders).
func (pc *providerCache) lookup(versions []engine.ProviderVersion, provs map[string]*scheduler.Provider, class string) []int {
	var missing []int
	if pc == nil {
		for i := range versions {
			missing = append(missing, i)
		}
		return missing
	}
	// Two passes: the cache's entries first, then the map of the claim.
	// In a large cloud the providers of a sample are scattered over a
	// heap much larger than the CPU's caches; looked up in one pass, each
	// provider's misses (the cache's slot, the Provider, its uuid's bytes
	// to hash) wait for one another, while independent loads in a loop of
	// their own overlap.
	var hitsArr [128]*scheduler.Provider
	hits := hitsArr[:0]
	pc.mu.RLock()
	for i, v := range versions {
		if k := pc.slot(v); k < len(pc.slots) && v != (engine.ProviderVersion{}) && pc.slots[k].version == v {
			hits = append(hits, pc.slots[k].prov)
			continue
		}
		missing = append(missing, i)
	}
	pc.mu.RUnlock()
	touchProviders(hits, class)
	for _, p := range hits {
		provs[p.UUID] = p
	}
	return missing
}

// touchProviders reads, in loops of independent loads, what a claim
// reads first of each cached provider: the Provider, then its uuid's
// bytes and the header of its Resources map, then the map's entry for
// class (the ranking's first reads). It returns a sum only so that the
// loads are not optimised away: it must not be inlined, or the compiler
// drops the loads whose sum its caller ignores.
//
//go:noinline
func touchProviders(provs []*scheduler.Provider, class string) int {
	n := 0
	for _, p := range provs {
		n += len(p.UUID)
	}
	for _, p := range provs {
		if p.UUID != "" {
			n += int(p.UUID[0])
		}
		n += len(p.Resources)
	}
	if class != "" {
		for _, p := range provs {
			n += int(p.Resources.Of(class).Total)
		}
	}
	return n
}

// store caches the providers just built for versions, each in its slot.
// (A map by uuid used to start over when full: in a cloud of as many
// providers as the bound, the cache filled, and the next claim that
// changed a provider emptied it, so claims kept rebuilding every provider
// of their samples.)
func (pc *providerCache) store(versions []engine.ProviderVersion, built []*scheduler.Provider) {
	if pc == nil || len(versions) == 0 {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for i, v := range versions {
		if v == (engine.ProviderVersion{}) {
			continue
		}
		k := pc.slot(v)
		if k >= len(pc.slots) {
			pc.slots = append(pc.slots, make([]cachedProvider, k+1-len(pc.slots))...)
		}
		pc.slots[k] = cachedProvider{version: v, prov: built[i]}
	}
}

// providerBox is a Provider and, in the same allocation, the inventories
// of a provider of up to three classes (a compute node's VCPU, MEMORY_MB
// and DISK_GB): the cache's views are then one object each for the
// collector to mark, and a ranking that reads a Provider finds its
// inventories next to it rather than elsewhere in a large heap.
type providerBox struct {
	p   scheduler.Provider
	inv [3]scheduler.ClassInventory
}

// newProvider is the scheduler's view of one provider summary.
func newProvider(s *engine.ProviderSummary) *scheduler.Provider {
	var p *scheduler.Provider
	if n := len(s.Resources); n > 0 && n <= len(providerBox{}.inv) {
		b := new(providerBox)
		p = &b.p
		p.Resources = b.inv[:n:n]
	} else {
		p = &scheduler.Provider{Resources: make(scheduler.Inventories, n)}
	}
	p.UUID, p.Name, p.ParentUUID, p.RootUUID = s.UUID, s.Name, s.ParentUUID, s.RootUUID
	p.Traits, p.Aggregates = s.Traits, s.Aggregates
	for i, r := range s.Resources {
		p.Resources[i] = scheduler.ClassInventory{Class: r.Class, Inventory: scheduler.Inventory{Capacity: r.Capacity, Used: r.Used,
			Total: r.Total, Reserved: r.Reserved, AllocationRatio: r.AllocationRatio,
			MinUnit: r.MinUnit, MaxUnit: r.MaxUnit, StepSize: r.StepSize}}
	}
	scheduler.SortInventories(p.Resources)
	return p
}

// convert turns an engine answer into the scheduler's view, taking the
// providers it can from pc (nil: none) and leaving there those it builds.
// Provider summaries are shared between the candidates. A candidate's
// Roots list the roots of its own tree(s) before those of sharing
// providers, so Root() is the tree the candidate is anchored on. The
// Providers map is the caller's (one per call); the Providers in it may be
// shared with other calls.
func convert(c *engine.Candidates, pc *providerCache) []*scheduler.Candidate {
	versions := c.Versions
	if c.Summaries != nil {
		versions = make([]engine.ProviderVersion, len(c.Summaries))
		for i := range c.Summaries {
			versions[i] = c.Summaries[i].Version
		}
	}
	provs := make(map[string]*scheduler.Provider, len(versions))
	class := ""
	if len(c.Requests) > 0 && len(c.Requests[0].Allocations) > 0 && len(c.Requests[0].Allocations[0].Resources) > 0 {
		class = c.Requests[0].Allocations[0].Resources[0].Class
	}
	if missing := pc.lookup(versions, provs, class); len(missing) > 0 {
		fresh := make([]engine.ProviderVersion, len(missing))
		built := make([]*scheduler.Provider, len(missing))
		for k, i := range missing {
			var p *scheduler.Provider
			if c.Summaries != nil {
				p = newProvider(&c.Summaries[i])
			} else {
				s := c.Summary(i)
				p = newProvider(&s)
			}
			provs[p.UUID] = p
			fresh[k], built[k] = versions[i], p
		}
		pc.store(fresh, built)
	}
	// One backing array for the candidates and one for their allocations:
	// a claim converts every candidate (thousands), so allocations add up.
	out := make([]*scheduler.Candidate, len(c.Requests))
	cands := make([]scheduler.Candidate, len(c.Requests))
	nAllocs := 0
	for _, ar := range c.Requests {
		nAllocs += len(ar.Allocations)
	}
	allocBuf := make([]scheduler.Allocation, 0, nAllocs)
	// Allocations of the same amounts share one (read-only) map: most
	// candidates of a request take the same from their providers.
	var shapes []allocShape
	// Most candidates have one root: their Roots are cut from one array.
	rootBuf := make([]string, 0, len(c.Requests))
	for i, ar := range c.Requests {
		sc := &cands[i]
		sc.Index, sc.Providers = i, provs
		start := len(allocBuf)
		var rootArr, sharedArr [4]string
		roots, shared := rootArr[:0], sharedArr[:0]
		for _, a := range ar.Allocations {
			alloc := scheduler.Allocation{ProviderUUID: a.ProviderUUID}
			if k := slices.IndexFunc(shapes, func(sh allocShape) bool { return slices.Equal(sh.res, a.Resources) }); k >= 0 {
				alloc.Resources = shapes[k].m
			} else {
				alloc.Resources = make(map[string]int64, len(a.Resources))
				for _, r := range a.Resources {
					alloc.Resources[r.Class] += r.Amount
				}
				if len(shapes) < maxAllocShapes {
					shapes = append(shapes, allocShape{a.Resources, alloc.Resources})
				}
			}
			allocBuf = append(allocBuf, alloc)
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
		sc.Allocations = allocBuf[start:len(allocBuf):len(allocBuf)]
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

// maxAllocShapes bounds the distinct allocation amounts convert shares
// maps for; past it, allocations get maps of their own.
const maxAllocShapes = 8

// allocShape is one distinct list of amounts and its map.
type allocShape struct {
	res []engine.ResourceAmount
	m   map[string]int64
}

// mappings is an engine candidate's request group suffix -> providers.
func mappings(ar *engine.AllocationRequest) map[string][]string {
	m := make(map[string][]string, len(ar.Mappings))
	for _, g := range ar.Mappings {
		m[g.Suffix] = g.ProviderUUIDs
	}
	return m
}
