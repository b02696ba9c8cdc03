package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// AggregatesName names the aggregates filter.
const AggregatesName = "aggregates"

var aggregatesUnit = Unit{
	Info: UnitInfo{Name: AggregatesName, Kind: KindFilter,
		Description: "Keeps candidates whose root provider is a member of any (or all) of the listed aggregates.",
		Parameters: []ParamInfo{
			{Name: "aggregates", Type: "[]string", Required: true, Description: "aggregate uuids"},
			{Name: "match", Type: "string", Default: "any", Description: `"any" or "all"`},
		}},
	Cost:      costTraits,
	NewFilter: NewAggregates,
}

// Aggregates keeps candidates whose root is in any (Match "any") or every
// (Match "all") one of Aggregates.
type Aggregates struct {
	Aggregates []string `json:"aggregates"`
	Match      string   `json:"match"`
}

var _ Filter = (*Aggregates)(nil)

// NewAggregates builds the filter from {"aggregates": [...], "match": "any"}.
func NewAggregates(params json.RawMessage) (Filter, error) {
	f := &Aggregates{Match: "any"}
	if err := decodeParams(AggregatesName, params, f); err != nil {
		return nil, err
	}
	if len(f.Aggregates) == 0 {
		return nil, errors.New(AggregatesName + ": aggregates must list at least one aggregate")
	}
	if f.Match != "any" && f.Match != "all" {
		return nil, errors.New(AggregatesName + `: match must be "any" or "all"`)
	}
	for i, a := range f.Aggregates {
		f.Aggregates[i] = strings.ToLower(a)
	}
	return f, nil
}

// Name implements Filter.
func (*Aggregates) Name() string { return AggregatesName }

// Filter implements Filter.
func (f *Aggregates) Filter(_ context.Context, _ *Request, c *Candidate) *Status {
	var have []string
	if p := c.RootProvider(); p != nil {
		have = p.Aggregates
	}
	in := func(a string) bool {
		return slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, a) })
	}
	if f.Match == "all" {
		for _, a := range f.Aggregates {
			if !in(a) {
				return Reject("not in aggregate " + a)
			}
		}
		return nil
	}
	if slices.ContainsFunc(f.Aggregates, in) {
		return nil
	}
	return Reject("in none of the aggregates")
}
