package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
)

// PreferTraitsName names the prefer_traits weigher.
const PreferTraitsName = "prefer_traits"

var preferTraitsUnit = Unit{
	Info: UnitInfo{Name: PreferTraitsName, Kind: KindWeigher,
		Description: "Prefers candidates with more of the listed traits (on the root or a provider allocated from).",
		Parameters:  []ParamInfo{{Name: "traits", Type: "[]string", Required: true, Description: "trait names"}}},
	NewWeigher: NewPreferTraits,
}

// PreferTraits is a soft trait preference: a candidate scores the number
// of listed traits that some provider it allocates from, or its root,
// has. Required traits belong in the request; this is for "nice to have".
type PreferTraits struct {
	Traits []string `json:"traits"`
}

var _ Weigher = (*PreferTraits)(nil)

// NewPreferTraits builds the weigher from {"traits": ["CUSTOM_X", ...]}.
func NewPreferTraits(params json.RawMessage) (Weigher, error) {
	w := &PreferTraits{}
	if err := decodeParams(PreferTraitsName, params, w); err != nil {
		return nil, err
	}
	if len(w.Traits) == 0 {
		return nil, errors.New(PreferTraitsName + ": traits must list at least one trait")
	}
	return w, nil
}

// Name implements Weigher.
func (w *PreferTraits) Name() string { return PreferTraitsName }

// Weigh implements Weigher.
func (w *PreferTraits) Weigh(_ context.Context, _ *Request, c *Candidate) (float64, *Status) {
	n := 0
	for _, t := range w.Traits {
		if c.hasTrait(t) {
			n++
		}
	}
	return float64(n), nil
}

// hasTrait reports whether a provider the candidate allocates from, or
// one of its roots, has trait t.
func (c *Candidate) hasTrait(t string) bool {
	check := func(uuid string) bool {
		p := c.Providers[uuid]
		return p != nil && slices.Contains(p.Traits, t)
	}
	for _, a := range c.Allocations {
		if check(a.ProviderUUID) {
			return true
		}
	}
	return slices.ContainsFunc(c.Roots, check)
}
