package load

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// InventoryBody is one resource class's inventory on a provider, as
// Placement's inventories API reads and writes it: an element of
// InventoriesBody.
type InventoryBody struct {
	Total           int     `json:"total"`
	Reserved        int     `json:"reserved"`
	MinUnit         int     `json:"min_unit"`
	MaxUnit         int     `json:"max_unit"`
	StepSize        int     `json:"step_size"`
	AllocationRatio float64 `json:"allocation_ratio"`
}

// Capacity is what can be allocated: (total - reserved) * allocation_ratio,
// the bound Placement checks usage against.
func (i InventoryBody) Capacity() float64 {
	return float64(i.Total-i.Reserved) * i.AllocationRatio
}

// NewInventory returns an inventory of total units with the given reserved
// units and ratio, min_unit and step_size 1 and max_unit total.
func NewInventory(total, reserved int, ratio float64) InventoryBody {
	return InventoryBody{Total: total, Reserved: reserved, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: ratio}
}

// ComputeNodeInventory is the inventory of every flat benchmark node:
// 64 VCPU at ratio 4, 256 GiB of memory with 4 GiB reserved, 4,000 GB of
// disk with 100 reserved.
func ComputeNodeInventory() map[string]InventoryBody {
	return map[string]InventoryBody{
		"VCPU":      NewInventory(64, 0, 4),
		"MEMORY_MB": NewInventory(262144, 4096, 1),
		"DISK_GB":   NewInventory(4000, 100, 1),
	}
}

// InventoriesBody is the body of PUT /resource_providers/{uuid}/inventories
// and of its answer.
type InventoriesBody struct {
	ResourceProviderGeneration int                      `json:"resource_provider_generation"`
	Inventories                map[string]InventoryBody `json:"inventories"`
}

// ProviderBody is the body of POST /resource_providers and (from 1.20) of
// its answer, and an element of GET /resource_providers.
type ProviderBody struct {
	UUID       string `json:"uuid"`
	Name       string `json:"name"`
	ParentUUID string `json:"parent_provider_uuid,omitempty"`
	RootUUID   string `json:"root_provider_uuid,omitempty"`
	Generation int    `json:"generation,omitempty"`
}

// AggregatesBody is the body of PUT /resource_providers/{uuid}/aggregates
// (1.19+) and of its answer.
type AggregatesBody struct {
	Aggregates                 []string `json:"aggregates"`
	ResourceProviderGeneration int      `json:"resource_provider_generation"`
}

// TraitsBody is the body of PUT /resource_providers/{uuid}/traits and of its
// answer.
type TraitsBody struct {
	Traits                     []string `json:"traits"`
	ResourceProviderGeneration int      `json:"resource_provider_generation"`
}

// UsagesBody is the answer of GET /resource_providers/{uuid}/usages.
type UsagesBody struct {
	Usages                     map[string]int `json:"usages"`
	ResourceProviderGeneration int            `json:"resource_provider_generation"`
}

// Amount is a number of units of one resource class.
type Amount struct {
	Class string
	Units int
}

// ParseResources parses Placement's "CLASS:N,CLASS:N" syntax, keeping order.
func ParseResources(s string) ([]Amount, error) {
	var out []Amount
	for _, part := range strings.Split(s, ",") {
		class, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || class == "" {
			return nil, fmt.Errorf("resources %q: want CLASS:N[,CLASS:N...]", s)
		}
		units, err := strconv.Atoi(n)
		if err != nil || units < 1 {
			return nil, fmt.Errorf("resources %q: %q is not a positive amount", s, n)
		}
		out = append(out, Amount{class, units})
	}
	return out, nil
}

func formatResources(r []Amount) string {
	parts := make([]string, len(r))
	for i, a := range r {
		parts[i] = a.Class + ":" + strconv.Itoa(a.Units)
	}
	return strings.Join(parts, ",")
}

// Group is one request group of an allocation candidates query. Suffix ""
// is the unsuffixed group (resources=, required=, member_of=); otherwise it
// is the granular suffix without the leading underscore rules applied, e.g.
// "1" or "_COMPUTE" ("resources_COMPUTE=").
type Group struct {
	Suffix    string
	Resources []Amount
	Required  []string // traits; a leading "!" forbids
	MemberOf  []string // aggregate UUIDs, any of them (one member_of parameter)
}

// CandidatesQuery is a GET /allocation_candidates request.
type CandidatesQuery struct {
	Groups      []Group
	GroupPolicy string   // "none" or "isolate"; required by Placement with 2+ granular groups
	SameSubtree []string // group suffixes, e.g. "_COMPUTE"
	Limit       int      // 0 means no limit parameter
}

// Path returns the request path with its query string. Parameters appear
// in a fixed order (groups in order, then group_policy, same_subtree,
// limit) and ':' and ',' are left unescaped, so paths read like
// Placement's documentation and are stable across runs.
func (q CandidatesQuery) Path() string {
	var kv [][2]string
	for _, g := range q.Groups {
		if len(g.Resources) > 0 {
			kv = append(kv, [2]string{"resources" + g.Suffix, formatResources(g.Resources)})
		}
		if len(g.Required) > 0 {
			kv = append(kv, [2]string{"required" + g.Suffix, strings.Join(g.Required, ",")})
		}
		switch len(g.MemberOf) {
		case 0:
		case 1:
			kv = append(kv, [2]string{"member_of" + g.Suffix, g.MemberOf[0]})
		default:
			kv = append(kv, [2]string{"member_of" + g.Suffix, "in:" + strings.Join(g.MemberOf, ",")})
		}
	}
	if q.GroupPolicy != "" {
		kv = append(kv, [2]string{"group_policy", q.GroupPolicy})
	}
	if len(q.SameSubtree) > 0 {
		kv = append(kv, [2]string{"same_subtree", strings.Join(q.SameSubtree, ",")})
	}
	if q.Limit > 0 {
		kv = append(kv, [2]string{"limit", strconv.Itoa(q.Limit)})
	}
	parts := make([]string, len(kv))
	for i, p := range kv {
		parts[i] = queryEscape(p[0]) + "=" + queryEscape(p[1])
	}
	return "/allocation_candidates?" + strings.Join(parts, "&")
}

func queryEscape(s string) string {
	return strings.NewReplacer("%3A", ":", "%2C", ",").Replace(url.QueryEscape(s))
}

// AllocationRequest is one element of allocation_requests in a GET
// /allocation_candidates answer (1.12+ shape).
type AllocationRequest struct {
	Allocations map[string]struct {
		Resources map[string]int `json:"resources"`
	} `json:"allocations"`
}

// CandidatesAnswer is the part of a GET /allocation_candidates answer the
// tool reads.
type CandidatesAnswer struct {
	AllocationRequests []AllocationRequest `json:"allocation_requests"`
	ProviderSummaries  map[string]any      `json:"provider_summaries"`
}

// ClaimBody is the body of PUT /allocations/{consumer_uuid} at 1.38+, for a
// new consumer (consumer_generation null).
type ClaimBody struct {
	Allocations        map[string]ClaimAllocation `json:"allocations"`
	ProjectID          string                     `json:"project_id"`
	UserID             string                     `json:"user_id"`
	ConsumerGeneration *int                       `json:"consumer_generation"` // always null: a new consumer
	ConsumerType       string                     `json:"consumer_type"`
}

// ClaimAllocation is one provider's part of a ClaimBody.
type ClaimAllocation struct {
	Resources map[string]int `json:"resources"`
}

// NewClaimBody turns a candidate's allocation request into the body that
// claims it for a new consumer of the given project, user and type.
func NewClaimBody(ar AllocationRequest, project, user, consumerType string) ClaimBody {
	b := ClaimBody{Allocations: map[string]ClaimAllocation{}, ProjectID: project, UserID: user, ConsumerType: consumerType}
	for rp, a := range ar.Allocations {
		b.Allocations[rp] = ClaimAllocation{Resources: a.Resources}
	}
	return b
}

// Overcommit is one resource class whose usage exceeds its capacity.
type Overcommit struct {
	Provider string  `json:"provider"`
	Class    string  `json:"class"`
	Used     int     `json:"used"`
	Capacity float64 `json:"capacity"`
}

// Overcommits lists the classes of provider rp whose usage exceeds
// (total - reserved) * allocation_ratio, and usages of a class the
// provider has no inventory of, in class order.
func Overcommits(rp string, inv map[string]InventoryBody, usages map[string]int) []Overcommit {
	var out []Overcommit
	classes := make([]string, 0, len(usages))
	for c := range usages {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	for _, c := range classes {
		used := usages[c]
		if used == 0 {
			continue
		}
		capacity := 0.0
		if i, ok := inv[c]; ok {
			capacity = i.Capacity()
		}
		if float64(used) > capacity {
			out = append(out, Overcommit{Provider: rp, Class: c, Used: used, Capacity: capacity})
		}
	}
	return out
}
