package scheduler

import (
	"context"
	"encoding/json"
	"slices"
)

// PackName and SpreadName name the bin-packing and spreading weighers.
const (
	PackName   = "pack"
	SpreadName = "spread"
)

// usageWeigher scores a candidate by the mean fraction of capacity its
// providers would have in use after the claim, over the classes it
// allocates (or those listed). pack prefers fuller providers (fewer hosts
// in use); spread prefers emptier ones (less contention).
type usageWeigher struct {
	name    string
	spread  bool
	Classes []string `json:"classes"`
}

var _ Weigher = (*usageWeigher)(nil)

// NewPack builds the pack weigher from {"classes": [...]} (optional).
func NewPack(params json.RawMessage) (Weigher, error) {
	return newUsageWeigher(PackName, false, params)
}

// NewSpread builds the spread weigher from {"classes": [...]} (optional).
func NewSpread(params json.RawMessage) (Weigher, error) {
	return newUsageWeigher(SpreadName, true, params)
}

func newUsageWeigher(name string, spread bool, params json.RawMessage) (Weigher, error) {
	w := &usageWeigher{name: name, spread: spread}
	if err := decodeParams(name, params, w); err != nil {
		return nil, err
	}
	return w, nil
}

// Name implements Weigher.
func (w *usageWeigher) Name() string { return w.name }

// Weigh implements Weigher: the mean used/capacity after the claim, or
// its complement for spread. A candidate with nothing to measure scores 0.
func (w *usageWeigher) Weigh(_ context.Context, _ *Request, c *Candidate) (float64, *Status) {
	var sum float64
	n := 0
	c.usage(func(_, class string, inv Inventory, amount int64) {
		if (len(w.Classes) > 0 && !slices.Contains(w.Classes, class)) || inv.Capacity <= 0 {
			return
		}
		sum += float64(inv.Used+amount) / float64(inv.Capacity)
		n++
	})
	if n == 0 {
		return 0, nil
	}
	mean := sum / float64(n)
	if w.spread {
		return 1 - mean, nil
	}
	return mean, nil
}
