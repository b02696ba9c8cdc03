package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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

// FilterFactory builds a filter from its JSON parameters (nil or "null"
// when the policy gives none). It validates them.
type FilterFactory func(params json.RawMessage) (Filter, error)

// WeigherFactory builds a weigher from its JSON parameters.
type WeigherFactory func(params json.RawMessage) (Weigher, error)

// Registry is the one map from plugin name to factory. A Registry is read
// only after construction.
type Registry struct {
	Filters  map[string]FilterFactory
	Weighers map[string]WeigherFactory
}

// DefaultRegistry returns the built-in plugins.
func DefaultRegistry() *Registry {
	return &Registry{
		Filters: map[string]FilterFactory{
			MaxUsageRatioName:  NewMaxUsageRatio,
			AvoidProvidersName: NewAvoidProviders,
		},
		Weighers: map[string]WeigherFactory{
			PackName:         NewPack,
			SpreadName:       NewSpread,
			PreferTraitsName: NewPreferTraits,
		},
	}
}

// Names lists the registered filters and weighers, sorted.
func (r *Registry) Names() (filters, weighers []string) {
	for n := range r.Filters {
		filters = append(filters, n)
	}
	for n := range r.Weighers {
		weighers = append(weighers, n)
	}
	slices.Sort(filters)
	slices.Sort(weighers)
	return filters, weighers
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
		return fmt.Errorf("%s: params: %w", name, err)
	}
	return nil
}
