package scheduler

import (
	"slices"
	"strings"

	"github.com/berthd/berth/ledger/engine"
)

// Candidate is one way to satisfy a request: what to allocate from which
// provider, and the providers involved. Candidates must not be changed by
// plugins; several goroutines may read them.
type Candidate struct {
	// Index is the candidate's position in the ledger's answer: the
	// tie-break of the ranking, so equal scores keep the ledger's order.
	Index int
	// Allocations are what the candidate takes, provider by provider.
	// Candidates may share an Allocation's Resources map.
	Allocations []engine.Allocation
	// Roots are the distinct roots of the allocated providers, the first
	// allocation's first. A candidate using a sharing provider has more
	// than one.
	Roots []string
	// Providers holds the view of every provider of the candidate's
	// trees, by uuid. It is shared between candidates, and the views in
	// it may be shared with other requests' candidates.
	Providers map[string]*ProviderView
}

// ProviderView is the scheduler's view of one provider: the provider,
// its inventories with their usage, its traits and aggregates, and what
// a policy's Needs ask for (state, keys, consumer count).
type ProviderView struct {
	engine.Provider
	// Resources are the provider's inventories with their usage.
	Resources  Resources
	Traits     []string
	Aggregates []string
	// The fields below are filled only when the policy's Needs asks for
	// them (they cost a database read per claim).
	//
	// State is the agent's last report, nil if none.
	State *engine.ProviderState
	// Keys are the provider's placement keys.
	Keys []PlacementKey
	// Consumers is how many consumers hold allocations on the provider.
	Consumers int
	// Preemptible is what preemptible consumers (docs/preemption.md)
	// hold on the provider, per resource class in class name order, with
	// their lowest priority; empty when they hold nothing.
	Preemptible []engine.PreemptibleUsage
	// Evacuated is set for a root provider an operator evacuated (POST
	// /resource_providers/{uuid}/evacuate): claims do not place on it.
	Evacuated bool
}

// Resources are a provider's inventories with their usage, one per
// class, in class name order. A provider has a handful: a slice read
// from the start finds a class as fast as a map would, and costs one
// small object instead of a map's three.
type Resources []engine.InventoryUsage

// Get returns the inventory of class, and whether the provider has one.
func (r Resources) Get(class string) (engine.InventoryUsage, bool) {
	if inv := r.Find(class); inv != nil {
		return *inv, true
	}
	return engine.InventoryUsage{}, false
}

// Find is the inventory of class in place, nil if the provider has none:
// Get without the copy, for the units that read every candidate.
func (r Resources) Find(class string) *engine.InventoryUsage {
	for i := range r {
		if r[i].ResourceClass == class {
			return &r[i]
		}
	}
	return nil
}

// Of returns the inventory of class, the zero InventoryUsage if none.
func (r Resources) Of(class string) engine.InventoryUsage {
	inv, _ := r.Get(class)
	return inv
}

// Classes returns the classes of r, sorted.
func (r Resources) Classes() []string {
	out := make([]string, len(r))
	for i := range r {
		out[i] = r[i].ResourceClass
	}
	slices.Sort(out)
	return out
}

// SortResources sorts r by class name, in place, and returns it.
func SortResources(r Resources) Resources {
	// Insertion sort: a provider has a handful of classes, and this
	// allocates nothing.
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].ResourceClass < r[j-1].ResourceClass; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
	return r
}

// With returns a copy of r in which class has inventory inv (whose
// ResourceClass is set to class).
func (r Resources) With(class string, inv engine.InventoryUsage) Resources {
	out := make(Resources, 0, len(r)+1)
	for _, ci := range r {
		if ci.ResourceClass != class {
			out = append(out, ci)
		}
	}
	inv.ResourceClass = class
	return SortResources(append(out, inv))
}

// ResourcesOf returns the entries of m as Resources (each one's
// ResourceClass set to its key), in class name order.
func ResourcesOf(m map[string]engine.InventoryUsage) Resources {
	r := make(Resources, 0, len(m))
	for class, inv := range m {
		inv.ResourceClass = class
		r = append(r, inv)
	}
	return SortResources(r)
}

// Needs says which of a ProviderView's costly fields a policy reads.
type Needs struct {
	State     bool
	Keys      bool
	Consumers bool
	// Preemptible fills ProviderView.Preemptible.
	Preemptible bool
	// GroupMembers and ConsumerKeys say the policy calls those methods
	// of Request.Data (the affinity filters, the affinity_keys weigher).
	GroupMembers bool
	ConsumerKeys bool
}

// merge returns the union of n and o.
func (n Needs) merge(o Needs) Needs {
	return Needs{State: n.State || o.State, Keys: n.Keys || o.Keys, Consumers: n.Consumers || o.Consumers,
		Preemptible:  n.Preemptible || o.Preemptible,
		GroupMembers: n.GroupMembers || o.GroupMembers, ConsumerKeys: n.ConsumerKeys || o.ConsumerKeys}
}

// Root is the first of the candidate's roots.
func (c *Candidate) Root() string {
	if len(c.Roots) == 0 {
		return ""
	}
	return c.Roots[0]
}

// Uses reports whether the candidate allocates from provider uuid, or from
// a provider whose root is uuid.
func (c *Candidate) Uses(uuid string) bool {
	if slices.Contains(c.Roots, uuid) {
		return true
	}
	for _, a := range c.Allocations {
		if a.ProviderUUID == uuid {
			return true
		}
	}
	return false
}

// usage calls fn for every class the candidate allocates, with the
// provider's inventory and the amount taken, in provider then class name
// order. A provider missing from the
// views (it should not be) is skipped.
func (c *Candidate) usage(fn func(provider, class string, inv *engine.InventoryUsage, amount int64)) {
	for _, a := range c.Allocations {
		p := c.Providers[a.ProviderUUID]
		if p == nil {
			continue
		}
		var buf [8]engine.ResourceAmount
		for _, ca := range sortedAmounts(buf[:0], a.Resources) {
			if inv := p.Resources.Find(ca.Class); inv != nil {
				fn(a.ProviderUUID, ca.Class, inv, ca.Amount)
			}
		}
	}
}

// AllocationsByName is the candidate's allocations with each provider's
// classes in name order: what a claim writes and answers.
func (c *Candidate) AllocationsByName() []engine.Allocation {
	out := make([]engine.Allocation, len(c.Allocations))
	for i, a := range c.Allocations {
		out[i] = engine.Allocation{ProviderUUID: a.ProviderUUID, Resources: sortedAmounts(nil, a.Resources)}
	}
	return out
}

// sortedAmounts appends the entries of res to buf in class name order (the
// engine gives them in class id order), so reasons and scores are worded
// the same whatever the ids; a caller passes a small array's slice to keep
// the common case off the heap.
func sortedAmounts(buf, res []engine.ResourceAmount) []engine.ResourceAmount {
	buf = append(buf, res...)
	slices.SortFunc(buf, func(a, b engine.ResourceAmount) int { return strings.Compare(a.Class, b.Class) })
	return buf
}

// RootProvider is the view of the candidate's first root, nil if the
// views lack it.
func (c *Candidate) RootProvider() *ProviderView {
	return c.Providers[c.Root()]
}

// RootIs reports whether the candidate's root is nameOrUUID: its uuid
// (even without a view) or its name.
func (c *Candidate) RootIs(nameOrUUID string) bool {
	return c.Root() == nameOrUUID || c.RootProvider().Matches(nameOrUUID)
}

// Matches reports whether p is named or has uuid nameOrUUID (the uuid in
// any case); false for a nil p.
func (p *ProviderView) Matches(nameOrUUID string) bool {
	return p != nil && (strings.EqualFold(p.UUID, nameOrUUID) || (p.Name != "" && p.Name == nameOrUUID))
}
