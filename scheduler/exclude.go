package scheduler

import (
	"context"
	"encoding/json"
	"slices"
)

// ExcludeName names the exclude filter; AvoidProvidersName is its former
// name, still accepted.
const (
	ExcludeName        = "exclude"
	AvoidProvidersName = "avoid_providers"
)

var excludeUnit = Unit{
	Info: UnitInfo{Name: ExcludeName, Kind: KindFilter, Aliases: []string{AvoidProvidersName},
		Description: "Removes candidates that use any listed provider, or a provider in a tree rooted at one " +
			"(drained hosts), and the claim's exclude_providers. Runs on its own whenever a claim excludes providers.",
		Parameters: []ParamInfo{{Name: "providers", Type: "[]string", Default: []string{},
			Description: "provider uuids or names"}}},
	Cost:      costRequest,
	NewFilter: NewExclude,
}

// Exclude removes candidates that allocate from one of Providers or of
// the request's Avoid list (uuids or names), or from a provider whose
// root is one of them.
type Exclude struct {
	Providers []string `json:"providers"`
}

var _ Filter = (*Exclude)(nil)

// NewExclude builds the filter from {"providers": [uuid or name, ...]}.
func NewExclude(params json.RawMessage) (Filter, error) {
	f := &Exclude{}
	if err := decodeParams(ExcludeName, params, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Name implements Filter.
func (*Exclude) Name() string { return ExcludeName }

// Filter implements Filter.
func (f *Exclude) Filter(_ context.Context, req *Request, c *Candidate) *Status {
	for _, list := range [][]string{f.Providers, req.Avoid} {
		for _, x := range list {
			if c.uses(x) {
				return Reject("uses excluded provider " + x)
			}
		}
	}
	return nil
}

// uses reports whether the candidate allocates from the provider named
// or with uuid x, or from a tree rooted at it.
func (c *Candidate) uses(x string) bool {
	if c.Uses(x) {
		return true
	}
	for _, a := range c.Allocations {
		p := c.Providers[a.ProviderUUID]
		if p.Matches(x) || c.Providers[p.rootUUID()].Matches(x) {
			return true
		}
	}
	return slices.ContainsFunc(c.Roots, func(r string) bool { return c.Providers[r].Matches(x) })
}

// rootUUID is p's root, p itself for a root; "" for nil.
func (p *ProviderView) rootUUID() string {
	switch {
	case p == nil:
		return ""
	case p.RootUUID != "":
		return p.RootUUID
	}
	return p.UUID
}
