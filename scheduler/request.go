package scheduler

import (
	"context"
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
	// by unit; scripts is the Rank's scriptlet run. Rank works on a copy
	// of the caller's Request.
	prepared map[any]any
	scripts  ScriptletRun
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
	Member(ctx context.Context, nameOrUUID string) (*ProviderView, error)
	// Members lists the root providers, only those in aggregate (a uuid)
	// when it is not empty.
	Members(ctx context.Context, aggregate string) ([]*ProviderView, error)
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
	States(ctx context.Context, uuids []string) (map[string]*engine.ProviderState, error)
	// PreemptibleUsage returns what preemptible consumers hold on each
	// of the providers named (uuids) that has any
	// (ProviderView.Preemptible). Scriptlets call it at most once per
	// Rank, when they read a candidate's preemptible usage.
	PreemptibleUsage(ctx context.Context, uuids []string) (map[string][]engine.PreemptibleUsage, error)
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
