package scheduler

import "slices"

// Request is what a claim asks for, as plugins see it.
type Request struct {
	ConsumerUUID string
	ProjectID    string
	UserID       string
	ConsumerType string
	// Resources is the total asked for per resource class, over every
	// request group.
	Resources map[string]int64
	// Avoid lists provider uuids the request refuses: a candidate that
	// allocates from one of them, or from a provider in a tree rooted at
	// one of them, is rejected (counted under AvoidFilterName). Used to
	// reschedule away from a provider.
	Avoid []string
}

// Candidate is one way to satisfy a request: what to allocate from which
// provider, and the providers involved. Candidates must not be changed by
// plugins; several goroutines may read them.
type Candidate struct {
	// Index is the candidate's position in the ledger's answer: the
	// tie-break of the ranking, so equal scores keep the ledger's order.
	Index int
	// Allocations are what the candidate takes, provider by provider.
	Allocations []Allocation
	// Mappings are request group suffix -> providers that satisfied it.
	Mappings map[string][]string
	// Roots are the distinct roots of the allocated providers, the first
	// allocation's first. A candidate using a sharing provider has more
	// than one.
	Roots []string
	// Providers holds the summary of every provider of the candidate's
	// trees, by uuid. It is shared between candidates.
	Providers map[string]*Provider
}

// Allocation is what a candidate takes from one provider.
type Allocation struct {
	ProviderUUID string
	Resources    map[string]int64
}

// Provider is a snapshot of one provider.
type Provider struct {
	UUID       string
	ParentUUID string // empty for a root
	RootUUID   string
	// Resources is capacity and current usage per class of inventory.
	Resources map[string]Inventory
	Traits    []string
}

// Inventory is a provider's capacity of one class and what is used of it.
// Capacity is (total - reserved) * allocation_ratio, rounded down.
type Inventory struct {
	Capacity int64
	Used     int64
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
// summaries (it should not be) is skipped.
func (c *Candidate) usage(fn func(provider, class string, inv Inventory, amount int64)) {
	for _, a := range c.Allocations {
		p := c.Providers[a.ProviderUUID]
		if p == nil {
			continue
		}
		classes := make([]string, 0, len(a.Resources))
		for class := range a.Resources {
			classes = append(classes, class)
		}
		slices.Sort(classes)
		for _, class := range classes {
			if inv, ok := p.Resources[class]; ok {
				fn(a.ProviderUUID, class, inv, a.Resources[class])
			}
		}
	}
}
