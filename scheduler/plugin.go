package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/berthd/berth/internal/jsonerror"
)

// Filter is a hard constraint: it lets a candidate through (nil) or
// rejects it (Reject, with a reason counted per filter). A Failed status
// aborts the request. Filters must be safe for concurrent use.
type Filter interface {
	Name() string
	Filter(ctx context.Context, req *Request, cand *Candidate) *Status
}

// Weigher scores a candidate. It returns a raw value in any unit, higher
// meaning better; the policy normalises raw values across the candidates
// of one request to [0, 1] and multiplies them by the weigher's factor.
// Weighers must be safe for concurrent use.
type Weigher interface {
	Name() string
	Weigh(ctx context.Context, req *Request, cand *Candidate) (float64, *Status)
}

// BatchWeigher is a Weigher that needs to see every candidate at once
// (a ranking rather than a per-candidate value, or a value relative to
// the others). When a weigher implements it, Rank calls WeighAll once
// instead of Weigh per candidate; out has len(cands) raw values to fill.
type BatchWeigher interface {
	Weigher
	WeighAll(ctx context.Context, req *Request, cands []*Candidate, out []float64) *Status
}

// Preparer is a unit that reads something once per Rank before it runs
// (the affinity filters ask the cloud for a group's members). What
// Prepare returns is handed back by req.Prepared(unit).
type Preparer interface {
	Prepare(ctx context.Context, req *Request) (any, *Status)
}

// Kind is what a unit is: a filter or a weigher.
type Kind string

// Unit kinds.
const (
	KindFilter  Kind = "filter"
	KindWeigher Kind = "weigher"
)

// ParamInfo describes one parameter of a unit, for GET /policy_units.
// Type is one of "string", "int", "number", "bool", "duration" (a Go
// duration string such as "5m"), "[]string".
type ParamInfo struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Default     any    `json:"default"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// UnitInfo describes a policy unit, for GET /policy_units.
type UnitInfo struct {
	Name        string      `json:"name"`
	Kind        Kind        `json:"kind"`
	Description string      `json:"description"`
	Parameters  []ParamInfo `json:"parameters"`
	// Aliases are other names the unit answers to (older names).
	Aliases []string `json:"aliases,omitempty"`
}

// Unit is a registered policy unit: its metadata and its factory (one of
// NewFilter, NewWeigher, after Info.Kind).
type Unit struct {
	Info UnitInfo
	// Cost orders filters: lower runs first (ties keep the policy's
	// order). Cheap checks that remove many candidates go first, as in
	// Nomad's feasibility stack; filters that call out (GroupMembers) or
	// run Starlark go last.
	Cost int
	// Needs are the costly fields the unit reads.
	Needs      Needs
	NewFilter  func(params json.RawMessage) (Filter, error)
	NewWeigher func(params json.RawMessage) (Weigher, error)
}

// Filter costs of the built-in units.
const (
	costRequest   = 0   // pin, exclude: a uuid compare
	costCapacity  = 5   // a few integer compares per allocation
	costUsage     = 10  // ratios per allocation
	costTraits    = 20  // trait and aggregate lists
	costState     = 30  // enriched fields
	costGroup     = 40  // a CloudData call per Rank
	costScriptlet = 100 // Starlark per candidate
)

// Registry is the one map from unit name (and alias) to unit. It is read
// only after construction; Register is for setup.
type Registry struct {
	units map[string]*Unit
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{units: map[string]*Unit{}} }

// Register adds u under its name and aliases. Names must be unique.
func (r *Registry) Register(u Unit) error {
	if (u.Info.Kind == KindFilter) == (u.NewFilter == nil) || (u.Info.Kind == KindWeigher) == (u.NewWeigher == nil) {
		return fmt.Errorf("unit %q: kind %q does not match its factory", u.Info.Name, u.Info.Kind)
	}
	names := append([]string{u.Info.Name}, u.Info.Aliases...)
	for _, n := range names {
		if _, dup := r.units[n]; dup || n == "" || strings.HasPrefix(n, StarlarkUnitPrefix) {
			return fmt.Errorf("unit %q: name %q taken or reserved", u.Info.Name, n)
		}
	}
	for _, n := range names {
		r.units[n] = &u
	}
	return nil
}

// Lookup returns the unit named (or aliased) name.
func (r *Registry) Lookup(name string) (*Unit, bool) {
	u, ok := r.units[name]
	return u, ok
}

// Units lists the registered units once each (not per alias), filters
// first, then by name. Starlark units ("starlark:<scriptlet>") are not
// listed: any stored scriptlet defining filter or weigh is one.
func (r *Registry) Units() []UnitInfo {
	var out []UnitInfo
	for n, u := range r.units {
		if n == u.Info.Name {
			out = append(out, u.Info)
		}
	}
	slices.SortFunc(out, func(a, b UnitInfo) int {
		if a.Kind != b.Kind {
			return cmp.Compare(a.Kind, b.Kind)
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// Names lists the registered filters and weighers (with aliases), sorted.
func (r *Registry) Names() (filters, weighers []string) {
	for n, u := range r.units {
		if u.Info.Kind == KindFilter {
			filters = append(filters, n)
		} else {
			weighers = append(weighers, n)
		}
	}
	slices.Sort(filters)
	slices.Sort(weighers)
	return filters, weighers
}

// DefaultRegistry returns the built-in units.
func DefaultRegistry() *Registry {
	r := NewRegistry()
	for _, u := range []Unit{
		capacityUnit, pinUnit, excludeUnit, requiredTraitsUnit, forbiddenTraitsUnit, aggregatesUnit,
		maxUsageRatioUnit, maxConsumersUnit, stateFreshnessUnit, affinityUnit, antiAffinityUnit,
		spreadUnit, packUnit, evenUnit, powerSavingUnit, loadUnit, affinityKeysUnit, preferTraitsUnit,
	} {
		if err := r.Register(u); err != nil {
			panic(err) // a programming error in the table above
		}
	}
	return r
}

// decodeParams decodes a plugin's parameters strictly: unknown fields are
// an error, so a typo in the policy file does not silently do nothing.
func decodeParams(name string, params json.RawMessage, dst any) error {
	if len(params) == 0 || string(params) == "null" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(params)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%s: params: %s", name, jsonerror.Message(err))
	}
	return nil
}
