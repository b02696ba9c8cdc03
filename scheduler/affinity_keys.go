package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/berthd/berth/ledger/engine"
)

// AffinityKeysName names the affinity placement keys weigher.
const AffinityKeysName = "affinity_keys"

// Special keys, computed for every provider rather than stored.
const (
	KeyRAM  = "#RAM"  // MEMORY_MB (used + claimed) / capacity
	KeyCPU  = "#CPU"  // VCPU (used + claimed) / capacity
	KeyLOAD = "#LOAD" // reported load_1 / VCPU total
)

var affinityKeysUnit = Unit{
	Info: UnitInfo{Name: AffinityKeysName, Kind: KindWeigher,
		Description: "Affinity placement keys (Dynamic Workload Placement): ranks candidates by how close the " +
			"root provider's keys are to the claim's. System keys are evaluated in rounds with a falling " +
			"threshold; customer keys break ties; a final tie is broken at random. Keys a consumer kept " +
			"from sticky provider keys count as system keys of weight 1.",
		Parameters: []ParamInfo{
			{Name: "rounds", Type: "int", Default: 10, Description: "rounds of the system-key threshold (at least 1)"},
			{Name: "start", Type: "number", Default: 80.0, Description: "threshold of the first round, in percent of the system keys' weight"},
			{Name: "end", Type: "number", Default: -10.0, Description: "threshold of the last round"},
			{Name: "seed", Type: "int", Default: 0, Description: "seed of the random tie-break; 0: a new one per claim"},
		}},
	Needs:      Needs{Keys: true, State: true, ConsumerKeys: true},
	NewWeigher: NewAffinityKeys,
}

// AffinityKeys ranks candidates by placement keys; see docs/scheduling.md
// ("Affinity placement keys") for the exact scoring. Its raw value is
// the number of candidates it ranks below the candidate, so the best
// normalises to 1 and the worst to 0.
type AffinityKeys struct {
	Rounds int     `json:"rounds"`
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	Seed   uint64  `json:"seed"`
}

var (
	_ Weigher      = (*AffinityKeys)(nil)
	_ BatchWeigher = (*AffinityKeys)(nil)
)

// NewAffinityKeys builds the weigher from {"rounds": 10, "start": 80,
// "end": -10, "seed": 0}.
func NewAffinityKeys(params json.RawMessage) (Weigher, error) {
	w := &AffinityKeys{Rounds: 10, Start: 80, End: -10}
	if err := decodeParams(AffinityKeysName, params, w); err != nil {
		return nil, err
	}
	if w.Rounds < 1 || w.Start < w.End {
		return nil, errors.New(AffinityKeysName + ": rounds must be at least 1 and start at least end")
	}
	return w, nil
}

// Name implements Weigher.
func (*AffinityKeys) Name() string { return AffinityKeysName }

// Weigh implements Weigher for one candidate alone: its system score.
// Rank calls WeighAll.
func (w *AffinityKeys) Weigh(_ context.Context, req *Request, c *Candidate) (float64, *Status) {
	sys, _ := splitKeys(req.Keys, nil)
	return SystemScore(sys, ProviderKeys(c)), nil
}

// Threshold is the system-score threshold of round i (0-based).
func (w *AffinityKeys) Threshold(i int) float64 {
	if w.Rounds == 1 {
		return w.Start
	}
	return w.Start - float64(i)*(w.Start-w.End)/float64(w.Rounds-1)
}

// WeighAll implements BatchWeigher.
func (w *AffinityKeys) WeighAll(ctx context.Context, req *Request, cands []*Candidate, out []float64) *Status {
	var sticky []PlacementKey
	if req.Data != nil && req.ConsumerUUID != "" {
		var err error
		if sticky, err = req.Data.ConsumerKeys(ctx, req.ConsumerUUID); err != nil {
			return AsError(err)
		}
	}
	sys, cust := splitKeys(req.Keys, sticky)
	if len(sys) == 0 && len(cust) == 0 {
		return nil // nothing to tell candidates apart: every raw value 0
	}
	seed := w.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	type entry struct {
		i      int
		round  int
		cust   float64
		random uint64
	}
	sysWeight := 0.0
	for _, k := range sys {
		sysWeight += k.Weight
	}
	es := make([]entry, len(cands))
	for i, c := range cands {
		s := 0.0
		if sysWeight != 0 {
			s = 100 * proximity(sys, c) / sysWeight
		}
		round := w.Rounds
		for r := range w.Rounds {
			if s >= w.Threshold(r) {
				round = r
				break
			}
		}
		es[i] = entry{i: i, round: round, cust: proximity(cust, c), random: rng.Uint64()}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if c := cmp.Compare(a.round, b.round); c != 0 {
			return c
		}
		if c := cmp.Compare(b.cust, a.cust); c != 0 {
			return c
		}
		return cmp.Compare(a.random, b.random)
	})
	for pos, e := range es {
		out[e.i] = float64(len(es) - 1 - pos)
	}
	return nil
}

// splitKeys separates a claim's keys into system and customer keys; the
// consumer's sticky keys join the system keys with weight 1 (a key the
// claim names itself keeps the claim's value and weight).
func splitKeys(keys []KeyRequest, sticky []PlacementKey) (sys, cust []KeyRequest) {
	for _, k := range keys {
		if k.System {
			sys = append(sys, k)
		} else {
			cust = append(cust, k)
		}
	}
	for _, k := range sticky {
		if !slices.ContainsFunc(keys, func(r KeyRequest) bool { return r.Name == k.Name }) {
			sys = append(sys, KeyRequest{Name: k.Name, Value: k.Value, Weight: 1, System: true})
		}
	}
	return sys, cust
}

// Proximity is sum over keys of max(0, 1 - |want - have|) * weight; a
// key the provider lacks adds 0.
func Proximity(keys []KeyRequest, have map[string]float64) float64 {
	sum := 0.0
	for _, k := range keys {
		if v, ok := have[k.Name]; ok {
			sum += max(0, 1-math.Abs(k.Value-v)) * k.Weight
		}
	}
	return sum
}

// proximity is Proximity(keys, ProviderKeys(c)) without building the
// map: WeighAll runs it for every candidate.
func proximity(keys []KeyRequest, c *Candidate) float64 {
	sum := 0.0
	for _, k := range keys {
		if v, ok := c.Key(k.Name); ok {
			sum += max(0, 1-math.Abs(k.Value-v)) * k.Weight
		}
	}
	return sum
}

// SystemScore is Proximity of the system keys as a percentage of their
// total weight (0 to 100 for positive weights); 0 with no weight.
func SystemScore(sys []KeyRequest, have map[string]float64) float64 {
	total := 0.0
	for _, k := range sys {
		total += k.Weight
	}
	if total == 0 {
		return 0
	}
	return 100 * Proximity(sys, have) / total
}

// ProviderKeys are the keys of the candidate's root provider with the
// special keys: #RAM and #CPU are (used + what the candidate takes) /
// capacity of MEMORY_MB and VCPU, on the root when it has that
// inventory, else over the providers the candidate takes the class
// from; #LOAD is the root's reported load_1 divided by its VCPU total
// (absent without a report or VCPU inventory).
func ProviderKeys(c *Candidate) map[string]float64 {
	root := c.RootProvider()
	out := map[string]float64{}
	if root != nil {
		for _, k := range root.Keys {
			out[k.Name] = k.Value
		}
	}
	for _, name := range [...]string{KeyRAM, KeyCPU, KeyLOAD} {
		if v, ok := c.Key(name); ok {
			out[name] = v
		}
	}
	return out
}

// Key is the value of placement key name for c: its root provider's
// key, or #RAM, #CPU and #LOAD as c would leave them (see ProviderKeys);
// false when c has none of that name.
func (c *Candidate) Key(name string) (float64, bool) {
	root := c.RootProvider()
	switch name {
	case KeyRAM:
		return usageRatio(c, root, "MEMORY_MB")
	case KeyCPU:
		return usageRatio(c, root, "VCPU")
	case KeyLOAD:
		if root != nil && root.State != nil {
			if inv, ok := root.Resources.Get("VCPU"); ok && inv.Total > 0 {
				return root.State.Load1 / float64(inv.Total), true
			}
		}
		return 0, false
	}
	if root != nil {
		for _, k := range root.Keys {
			if k.Name == name {
				return k.Value, true
			}
		}
	}
	return 0, false
}

// usageRatio is (used + taken) / capacity of class for #RAM and #CPU.
func usageRatio(c *Candidate, root *ProviderView, class string) (float64, bool) {
	var used, capacity, taken int64
	rootInv, onRoot := engine.InventoryUsage{}, false
	if root != nil {
		rootInv, onRoot = root.Resources.Get(class)
	}
	for _, a := range c.Allocations {
		amount, ok := a.Amount(class)
		if !ok {
			continue
		}
		taken += amount
		if !onRoot {
			if p := c.Providers[a.ProviderUUID]; p != nil {
				inv := p.Resources.Of(class)
				used, capacity = used+inv.Used, capacity+inv.Capacity
			}
		}
	}
	if onRoot {
		used, capacity = rootInv.Used, rootInv.Capacity
	}
	if capacity <= 0 {
		return 0, false
	}
	return float64(used+taken) / float64(capacity), true
}
