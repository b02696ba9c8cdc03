package scheduler

import (
	"context"
	"encoding/json"
	"errors"
)

// RequiredTraitsName and ForbiddenTraitsName name the trait filters.
const (
	RequiredTraitsName  = "required_traits"
	ForbiddenTraitsName = "forbidden_traits"
)

var traitParams = []ParamInfo{{Name: "traits", Type: "[]string", Required: true,
	Description: "trait names"}}

var requiredTraitsUnit = Unit{
	Info: UnitInfo{Name: RequiredTraitsName, Kind: KindFilter, Parameters: traitParams,
		Description: "Keeps candidates where every listed trait is on the root provider or on a provider the candidate allocates from."},
	Cost:      costTraits,
	NewFilter: func(p json.RawMessage) (Filter, error) { return newTraitFilter(RequiredTraitsName, false, p) },
}

var forbiddenTraitsUnit = Unit{
	Info: UnitInfo{Name: ForbiddenTraitsName, Kind: KindFilter, Parameters: traitParams,
		Description: "Removes candidates where a listed trait is on the root provider or on a provider the candidate allocates from."},
	Cost:      costTraits,
	NewFilter: func(p json.RawMessage) (Filter, error) { return newTraitFilter(ForbiddenTraitsName, true, p) },
}

// TraitFilter is required_traits (every trait present) or
// forbidden_traits (none present). The request's own required traits
// are the ledger's business; these are the operator's.
type TraitFilter struct {
	name      string
	forbidden bool
	Traits    []string `json:"traits"`
}

var _ Filter = (*TraitFilter)(nil)

func newTraitFilter(name string, forbidden bool, params json.RawMessage) (Filter, error) {
	f := &TraitFilter{name: name, forbidden: forbidden}
	if err := decodeParams(name, params, f); err != nil {
		return nil, err
	}
	if len(f.Traits) == 0 {
		return nil, errors.New(name + ": traits must list at least one trait")
	}
	return f, nil
}

// Name implements Filter.
func (f *TraitFilter) Name() string { return f.name }

// Filter implements Filter.
func (f *TraitFilter) Filter(_ context.Context, _ *Request, c *Candidate) *Status {
	for _, t := range f.Traits {
		has := c.hasTrait(t)
		if f.forbidden && has {
			return Reject("has forbidden trait " + t)
		}
		if !f.forbidden && !has {
			return Reject("lacked trait " + t)
		}
	}
	return nil
}
