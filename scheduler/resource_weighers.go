package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
)

// SpreadName and PackName name the resource weighers.
const (
	SpreadName = "spread"
	PackName   = "pack"
)

var resourceParams = []ParamInfo{
	{Name: "class", Type: "string", Default: "",
		Description: "one resource class (MEMORY_MB, VCPU, DISK_GB, ...): score by the amount of it left free; " +
			"empty: by the mean fraction free over the classes the candidate takes"},
	{Name: "classes", Type: "[]string", Default: []string{},
		Description: "with no class: limit the mean to these classes"},
}

var spreadUnit = Unit{
	Info: UnitInfo{Name: SpreadName, Kind: KindWeigher, Parameters: resourceParams,
		Description: "Prefers the candidates that leave the most capacity free (spread load; least contention)."},
	NewWeigher: func(p json.RawMessage) (Weigher, error) { return newResourceWeigher(SpreadName, true, p) },
}

var packUnit = Unit{
	Info: UnitInfo{Name: PackName, Kind: KindWeigher, Parameters: resourceParams,
		Description: "Prefers the candidates that leave the least capacity free (bin packing; fewer hosts in use)."},
	NewWeigher: func(p json.RawMessage) (Weigher, error) { return newResourceWeigher(PackName, false, p) },
}

// ResourceWeigher is spread or pack. With Class it scores the amount of
// that class left free after the claim, summed over the providers the
// candidate takes it from (spread: more is better; pack: less). Without
// Class it scores the mean fraction free after the claim over the classes
// the candidate takes (or those in Classes).
type ResourceWeigher struct {
	name    string
	spread  bool
	Class   string   `json:"class"`
	Classes []string `json:"classes"`
}

var _ Weigher = (*ResourceWeigher)(nil)

func newResourceWeigher(name string, spread bool, params json.RawMessage) (Weigher, error) {
	w := &ResourceWeigher{name: name, spread: spread}
	if err := decodeParams(name, params, w); err != nil {
		return nil, err
	}
	if w.Class != "" && len(w.Classes) > 0 {
		return nil, errors.New(name + ": give class or classes, not both")
	}
	return w, nil
}

// Name implements Weigher.
func (w *ResourceWeigher) Name() string { return w.name }

// Weigh implements Weigher.
func (w *ResourceWeigher) Weigh(_ context.Context, _ *Request, c *Candidate) (float64, *Status) {
	var buf [8]take
	return w.raw(c.takes(buf[:0])), nil
}

// raw is the weigher's raw value of what a candidate takes (its takes,
// in the order Candidate.takes lists them; a class the provider lacks
// counts for nothing). RankDirect weighs the engine's records with it.
func (w *ResourceWeigher) raw(ts []take) float64 {
	if w.Class != "" {
		var free float64
		for i := range ts {
			if t := &ts[i]; t.found && t.class == w.Class {
				free += float64(t.capacity - t.used - t.amount)
			}
		}
		if w.spread {
			return free
		}
		return -free
	}
	var sum float64
	n := 0
	for i := range ts {
		t := &ts[i]
		if !t.found || (len(w.Classes) > 0 && !slices.Contains(w.Classes, t.class)) || t.capacity <= 0 {
			continue
		}
		sum += float64(t.capacity-t.used-t.amount) / float64(t.capacity)
		n++
	}
	if n == 0 {
		return 0
	}
	mean := sum / float64(n)
	if w.spread {
		return mean
	}
	return -mean
}
