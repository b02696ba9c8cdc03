package scheduler

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/ledger/engine"
)

// Request is what a claim asks for, as plugins see it.
type Request struct {
	ConsumerUUID string
	ProjectID    string
	UserID       string
	ConsumerType string
	// Resources is the total asked for per resource class, over every
	// request group.
	Resources map[string]int64
	// Avoid lists providers (uuids or names) the request refuses: a candidate that
	// allocates from one of them, or from a provider in a tree rooted at
	// one of them, is rejected (counted under ExcludeName). Used to
	// reschedule away from a provider.
	Avoid []string
	// Name is the instance's name (the claim's "name"), Reason why it is
	// placed: "new", "evacuation", "relocation", "rebalance" or "reschedule".
	Name   string
	Reason string
	// Required and Forbidden are the traits the request asked for, over
	// every group (forbidden without the "!").
	Required  []string
	Forbidden []string
	// Properties is the claim's free-form "properties" object.
	Properties map[string]any
	// Target, when set, pins the claim to one root provider (uuid).
	Target string
	// Keys are the claim's affinity placement keys.
	Keys []KeyRequest
	// Instance is the claim's "instance" object: LXD's instance placement
	// request (name, project, type, config, devices, ...) as the caller
	// sent it, decoded from JSON; nil when the claim carries none.
	// Scriptlets see its fields in request and get_instance_resources;
	// nothing in it changes what is claimed.
	Instance map[string]any
	// Data answers a scriptlet's questions about the cloud (instances,
	// members); nil when the caller offers none.
	Data CloudData

	// prepared holds what units computed once per Rank (Preparer), keyed
	// by unit. Rank works on a copy of the caller's Request.
	prepared map[any]any
}

// Prepared returns what unit u's Prepare returned in this Rank, or nil.
func (r *Request) Prepared(u any) any { return r.prepared[u] }

// CloudData is the live view of the cloud a scriptlet may query.
type CloudData interface {
	// Instances lists the consumers with allocations that q selects.
	Instances(ctx context.Context, q InstancesQuery) ([]Instance, error)
	// InstancesCount counts them (q's Documents and Max aside).
	InstancesCount(ctx context.Context, q InstancesQuery) (int, error)
	// Member returns a provider by name or uuid, nil if there is none.
	Member(ctx context.Context, nameOrUUID string) (*Provider, error)
	// Members lists the root providers, only those in aggregate (a uuid)
	// when it is not empty.
	Members(ctx context.Context, aggregate string) ([]*Provider, error)
	// GroupMembers counts, per root provider uuid, the consumers whose
	// properties[key] equals value (as a string). Providers with none are
	// absent. The affinity filters call it once per Rank.
	GroupMembers(ctx context.Context, key, value string) (map[string]int, error)
	// ConsumerKeys returns the placement keys consumerUUID kept from the
	// sticky keys of a provider it was placed on; none for a new consumer.
	// The affinity_keys weigher calls it once per Rank.
	ConsumerKeys(ctx context.Context, consumerUUID string) ([]PlacementKey, error)
	// States returns the last report of each of the providers named
	// (uuids) that has one. Scriptlets call it at most once per Rank,
	// when they read a member's status and the policy did not fetch
	// states.
	States(ctx context.Context, uuids []string) (map[string]*ProviderState, error)
}

// InstancesQuery selects consumers for CloudData.Instances.
type InstancesQuery struct {
	// Location, when not empty, selects the consumers with allocations
	// in the tree of that root provider (name or uuid); Project, when not
	// empty, those of that project.
	Location, Project string
	// Documents fills each Instance's Instance document.
	Documents bool
	// Max, when positive, bounds the listing: at most Max+1 consumers
	// are read, so a caller that gets more than Max knows there are more.
	Max int
}

// Instance is a consumer as a scriptlet sees it.
type Instance struct {
	UUID      string           `json:"uuid"`
	Name      string           `json:"name"`
	ProjectID string           `json:"project_id"`
	UserID    string           `json:"user_id"`
	Type      string           `json:"consumer_type"`
	Location  string           `json:"location"` // root provider name
	Resources map[string]int64 `json:"resources"`
	// Instance is LXD's instance placement request the consumer's claim
	// carried (its "instance"), nil without one: what get_instances
	// answers as the instance's config, devices, type and the like.
	Instance map[string]any `json:"instance,omitempty"`
	// CreatedAt and UpdatedAt are the consumer's.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// KeyRequest is one placement key a claim carries: the value it wants,
// how much it matters, and whether the operator (System) or the project
// set it.
type KeyRequest struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Weight float64 `json:"weight"`
	System bool    `json:"system"`
}

// PlacementKey is a key a provider carries. Sticky keys are copied to the
// consumers placed on the provider.
type PlacementKey struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Sticky bool    `json:"sticky"`
}

// ProviderState is what a provider's agent last reported. The fields
// after ReportedAt are optional in a report (zero when not reported): the
// rest of LXD's ClusterMemberState, which get_cluster_member_state
// answers.
type ProviderState struct {
	Load1      float64   `json:"load_1"`
	Load5      float64   `json:"load_5"`
	Load15     float64   `json:"load_15"`
	MemFreeMB  int64     `json:"memory_free_mb"`
	CPUUtil    float64   `json:"cpu_utilization"`
	ReportedAt time.Time `json:"reported_at"`
	// SysInfo is the rest of LXD's sysinfo: uptime in seconds, sizes in
	// bytes.
	SysInfo SysInfo `json:"sysinfo"`
	// StoragePools are LXD's storage pool states, by pool name.
	StoragePools map[string]StoragePoolState `json:"storage_pools"`
}

// SysInfo is what a report may add to LXD's ClusterMemberSysInfo beyond
// the load averages and free memory Berth's own fields carry.
type SysInfo struct {
	Uptime      int64 `json:"uptime"`
	TotalRAM    int64 `json:"total_ram"`
	SharedRAM   int64 `json:"shared_ram"`
	BufferedRAM int64 `json:"buffered_ram"`
	TotalSwap   int64 `json:"total_swap"`
	FreeSwap    int64 `json:"free_swap"`
	Processes   int64 `json:"processes"`
	LogicalCPUs int64 `json:"logical_cpus"`
}

// StoragePoolState is one storage pool's space and inodes, as LXD's
// StoragePoolState (space in bytes).
type StoragePoolState struct {
	SpaceUsed   int64 `json:"space_used"`
	SpaceTotal  int64 `json:"space_total"`
	InodesUsed  int64 `json:"inodes_used"`
	InodesTotal int64 `json:"inodes_total"`
}

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
	// Providers holds the summary of every provider of the candidate's
	// trees, by uuid. It is shared between candidates, and the Providers
	// in it may be shared with other requests' candidates.
	Providers map[string]*Provider
}

// Provider is a snapshot of one provider.
type Provider struct {
	UUID       string
	Name       string
	ParentUUID string // empty for a root
	RootUUID   string
	// Resources is capacity and current usage per class of inventory.
	Resources  Inventories
	Traits     []string
	Aggregates []string
	// The fields below are filled only when the policy's Needs asks for
	// them (they cost a database read per claim).
	//
	// State is the agent's last report, nil if none.
	State *ProviderState
	// Keys are the provider's placement keys.
	Keys []PlacementKey
	// Consumers is how many consumers hold allocations on the provider.
	Consumers int
	// Evacuated is set for a root provider an operator evacuated (POST
	// /resource_providers/{uuid}/evacuate): claims do not place on it.
	Evacuated bool
}

// Inventories are a provider's inventories, one per class, in class name
// order. A provider has a handful: a slice read from the start finds a
// class as fast as a map would, and costs one small object instead of a
// map's three (claims build and cache a hundred Providers each; in a
// cloud of 100,000 the cached ones are most of the heap the garbage
// collector marks).
type Inventories []ClassInventory

// ClassInventory is the inventory of one class.
type ClassInventory struct {
	Class string
	Inventory
}

// Get returns the inventory of class, and whether the provider has one.
func (r Inventories) Get(class string) (Inventory, bool) {
	for i := range r {
		if r[i].Class == class {
			return r[i].Inventory, true
		}
	}
	return Inventory{}, false
}

// Of returns the inventory of class, the zero Inventory if none.
func (r Inventories) Of(class string) Inventory {
	inv, _ := r.Get(class)
	return inv
}

// Classes returns the classes of r, sorted.
func (r Inventories) Classes() []string {
	out := make([]string, len(r))
	for i := range r {
		out[i] = r[i].Class
	}
	slices.Sort(out)
	return out
}

// SortInventories sorts r by class name, in place, and returns it.
func SortInventories(r Inventories) Inventories {
	// Insertion sort: a provider has a handful of classes, and this
	// allocates nothing.
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].Class < r[j-1].Class; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
	return r
}

// With returns a copy of r in which class has inventory inv.
func (r Inventories) With(class string, inv Inventory) Inventories {
	out := make(Inventories, 0, len(r)+1)
	for _, ci := range r {
		if ci.Class != class {
			out = append(out, ci)
		}
	}
	return SortInventories(append(out, ClassInventory{Class: class, Inventory: inv}))
}

// InventoriesOf returns the entries of m as Inventories, in class name
// order.
func InventoriesOf(m map[string]Inventory) Inventories {
	r := make(Inventories, 0, len(m))
	for class, inv := range m {
		r = append(r, ClassInventory{Class: class, Inventory: inv})
	}
	return SortInventories(r)
}

// Inventory is a provider's capacity of one class and what is used of it.
// Capacity is (total - reserved) * allocation_ratio, rounded down.
type Inventory struct {
	Capacity int64
	Used     int64
	// Total, Reserved and AllocationRatio are the inventory record.
	Total           int64
	Reserved        int64
	AllocationRatio float64
	// MinUnit, MaxUnit and StepSize bound one allocation of the class;
	// zero means unbounded (the caller did not fill them).
	MinUnit  int64
	MaxUnit  int64
	StepSize int64
}

// free is what is left of the capacity: Capacity - Used.
func (inv Inventory) free() int64 { return inv.Capacity - inv.Used }

// Needs says which of a Provider's costly fields a policy reads.
type Needs struct {
	State     bool
	Keys      bool
	Consumers bool
	// GroupMembers and ConsumerKeys say the policy calls those methods
	// of Request.Data (the affinity filters, the affinity_keys weigher).
	GroupMembers bool
	ConsumerKeys bool
}

// merge returns the union of n and o.
func (n Needs) merge(o Needs) Needs {
	return Needs{State: n.State || o.State, Keys: n.Keys || o.Keys, Consumers: n.Consumers || o.Consumers,
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
// summaries (it should not be) is skipped.
func (c *Candidate) usage(fn func(provider, class string, inv Inventory, amount int64)) {
	for _, a := range c.Allocations {
		p := c.Providers[a.ProviderUUID]
		if p == nil {
			continue
		}
		var buf [8]engine.ResourceAmount
		for _, ca := range sortedAmounts(buf[:0], a.Resources) {
			if inv, ok := p.Resources.Get(ca.Class); ok {
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

// RootProvider is the summary of the candidate's first root, nil if the
// summaries lack it.
func (c *Candidate) RootProvider() *Provider {
	return c.Providers[c.Root()]
}

// rootIs reports whether the candidate's root is nameOrUUID: its uuid
// (even without a summary) or its name.
func (c *Candidate) rootIs(nameOrUUID string) bool {
	return c.Root() == nameOrUUID || c.RootProvider().matches(nameOrUUID)
}

// matches reports whether p is named or has uuid nameOrUUID.
func (p *Provider) matches(nameOrUUID string) bool {
	return p != nil && (strings.EqualFold(p.UUID, nameOrUUID) || (p.Name != "" && p.Name == nameOrUUID))
}
