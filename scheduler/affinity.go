package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// AffinityName and AntiAffinityName name the consumer group filters.
const (
	AffinityName     = "affinity"
	AntiAffinityName = "anti_affinity"
)

var affinityUnit = Unit{
	Info: UnitInfo{Name: AffinityName, Kind: KindFilter,
		Description: "Consumer groups: when the claim's properties[key] names a group that already has members, " +
			"keeps only candidates rooted where members are. The first member goes anywhere.",
		Parameters: []ParamInfo{{Name: "key", Type: "string", Default: "group",
			Description: "the properties key that names the group"}}},
	Cost:      costGroup,
	Needs:     Needs{GroupMembers: true},
	NewFilter: func(p json.RawMessage) (Filter, error) { return newGroupFilter(AffinityName, false, p) },
}

var antiAffinityUnit = Unit{
	Info: UnitInfo{Name: AntiAffinityName, Kind: KindFilter,
		Description: "Consumer groups: removes candidates rooted at a provider that already holds max members of " +
			"the group named by the claim's properties[key].",
		Parameters: []ParamInfo{
			{Name: "key", Type: "string", Default: "group", Description: "the properties key that names the group"},
			{Name: "max", Type: "int", Default: 1, Description: "members of the group a provider may hold before it is removed"},
		}},
	Cost:      costGroup,
	Needs:     Needs{GroupMembers: true},
	NewFilter: func(p json.RawMessage) (Filter, error) { return newGroupFilter(AntiAffinityName, true, p) },
}

// GroupFilter is affinity or anti_affinity over the consumers that share
// the claim's properties[Key]. A claim without that property passes. The
// members are asked of Request.Data once per Rank (Prepare).
type GroupFilter struct {
	name string
	anti bool
	Key  string `json:"key"`
	Max  int    `json:"max"`
}

var (
	_ Filter   = (*GroupFilter)(nil)
	_ Preparer = (*GroupFilter)(nil)
)

func newGroupFilter(name string, anti bool, params json.RawMessage) (Filter, error) {
	f := &GroupFilter{name: name, anti: anti, Key: "group", Max: 1}
	if err := decodeParams(name, params, f); err != nil {
		return nil, err
	}
	if f.Key == "" {
		return nil, errors.New(name + ": key must not be empty")
	}
	if f.Max < 1 || (!anti && f.Max != 1) {
		return nil, errors.New(name + ": max must be at least 1 (anti_affinity only)")
	}
	return f, nil
}

// Name implements Filter.
func (f *GroupFilter) Name() string { return f.name }

// groupValue is the claim's group name, "" when it has none.
func (f *GroupFilter) groupValue(req *Request) string {
	v, ok := req.Properties[f.Key]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// groupMembers is what Prepare found: the claim's group and its members
// per root provider.
type groupMembers struct {
	value   string
	members map[string]int
}

// Prepare implements Preparer: the claim's group and its members per root
// provider (a *groupMembers), or nil when the claim names no group.
func (f *GroupFilter) Prepare(ctx context.Context, req *Request) (any, *Status) {
	value := f.groupValue(req)
	if value == "" {
		return nil, nil
	}
	if req.Data == nil {
		return nil, AsError(errors.New("no cloud data to find the group's members"))
	}
	m, err := req.Data.GroupMembers(ctx, f.Key, value)
	if err != nil {
		return nil, AsError(err)
	}
	return &groupMembers{value: value, members: m}, nil
}

// Filter implements Filter.
func (f *GroupFilter) Filter(_ context.Context, req *Request, c *Candidate) *Status {
	g, _ := req.Prepared(f).(*groupMembers)
	if g == nil {
		return nil
	}
	n := g.members[c.Root()]
	switch {
	case f.anti && n >= f.Max:
		return Reject(fmt.Sprintf("holds %d of group %s", n, g.value))
	case !f.anti && len(g.members) > 0 && n == 0:
		return Reject("holds none of group " + g.value)
	}
	return nil
}
