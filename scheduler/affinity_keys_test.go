package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/berthd/berth/ledger/engine"
)

func keyed(index int, r string, keys ...PlacementKey) *Candidate {
	return with(cand(index, r, 10, 0, 1), func(p *ProviderView) { p.Keys = keys })
}

func TestProximity(t *testing.T) {
	have := map[string]float64{"a": 0.5, "b": 2}
	tests := []struct {
		keys []KeyRequest
		prox float64
		sys  float64
	}{
		{[]KeyRequest{{Name: "a", Value: 0.5, Weight: 1}}, 1, 100},
		{[]KeyRequest{{Name: "a", Value: 0.25, Weight: 2}}, 1.5, 75},
		{[]KeyRequest{{Name: "a", Value: 0.5, Weight: 1}, {Name: "b", Value: 0, Weight: 3}}, 1, 25},
		{[]KeyRequest{{Name: "missing", Value: 1, Weight: 1}}, 0, 0},
		{nil, 0, 0},
	}
	for _, tt := range tests {
		if got := Proximity(tt.keys, have); math.Abs(got-tt.prox) > 1e-9 {
			t.Errorf("Proximity(%v) = %v, want %v", tt.keys, got, tt.prox)
		}
		if got := SystemScore(tt.keys, have); math.Abs(got-tt.sys) > 1e-9 {
			t.Errorf("SystemScore(%v) = %v, want %v", tt.keys, got, tt.sys)
		}
	}
	w, _ := NewAffinityKeys(nil)
	var th []float64
	for i := range 10 {
		th = append(th, w.(*AffinityKeys).Threshold(i))
	}
	if fmt.Sprint(th) != "[80 70 60 50 40 30 20 10 0 -10]" {
		t.Errorf("thresholds %v", th)
	}
}

func TestProviderKeys(t *testing.T) {
	c := cand(0, "r", 16, 4, 4)
	p := c.RootProvider()
	p.Keys = []PlacementKey{{Name: "zone", Value: 0.3}}
	p.Resources = p.Resources.With("VCPU", engine.InventoryUsage{Capacity: 16, Used: 4, Inventory: engine.Inventory{Total: 8}})
	p.Resources = p.Resources.With("MEMORY_MB", engine.InventoryUsage{Capacity: 1000, Used: 250})
	c.Allocations[0].Resources = append(c.Allocations[0].Resources, engine.ResourceAmount{Class: "MEMORY_MB", Amount: 250})
	p.State = &engine.ProviderState{Load1: 2}
	got := ProviderKeys(c)
	want := map[string]float64{"zone": 0.3, KeyCPU: 0.5, KeyRAM: 0.5, KeyLOAD: 0.25}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	p.State = nil
	if _, ok := ProviderKeys(c)[KeyLOAD]; ok {
		t.Error("#LOAD without a report")
	}
}

func TestAffinityKeysRanking(t *testing.T) {
	ctx := context.Background()
	weigh := func(params string, req *Request, cands []*Candidate) string {
		t.Helper()
		w, err := NewAffinityKeys(json.RawMessage(params))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(cands))
		if st := w.(BatchWeigher).WeighAll(ctx, req, cands, out); !st.IsSuccess() {
			t.Fatal(st)
		}
		return fmt.Sprint(out)
	}
	// System score: a 100, b 90 (both round 0), c 75 (round 1), d 0 (last).
	cands := []*Candidate{
		keyed(0, "c", PlacementKey{Name: "zone", Value: 0.75}, PlacementKey{Name: "tier", Value: 1}),
		keyed(1, "a", PlacementKey{Name: "zone", Value: 1}),
		keyed(2, "d"),
		keyed(3, "b", PlacementKey{Name: "zone", Value: 0.9}, PlacementKey{Name: "tier", Value: 1}),
	}
	sys := []KeyRequest{{Name: "zone", Value: 1, Weight: 1, System: true}}
	if got := weigh(`{"seed": 1}`, &Request{Keys: sys}, cands); got != "[1 3 0 2]" {
		t.Errorf("system only: %s, want a > b > c > d", got)
	}
	// A customer key breaks the tie within a round (a and b are both in
	// round 0), not across rounds (c has the key too but is in round 1).
	withCust := append(sys, KeyRequest{Name: "tier", Value: 1, Weight: 5})
	if got := weigh(`{"seed": 1}`, &Request{Keys: withCust}, cands); got != "[1 2 0 3]" {
		t.Errorf("with customer key: %s, want b > a > c > d", got)
	}
	// One round at 95: only a qualifies first; the rest fall to "no round"
	// and are ordered by the customer key, then at random.
	if got := weigh(`{"seed": 1, "rounds": 1, "start": 95, "end": 95}`, &Request{Keys: withCust}, cands); got != "[2 3 0 1]" &&
		got != "[1 3 0 2]" {
		t.Errorf("one round: %s", got)
	}
	// No keys: nothing to tell apart.
	if got := weigh(`{}`, &Request{}, cands); got != "[0 0 0 0]" {
		t.Errorf("no keys: %s", got)
	}
	// A final tie is broken at random: the same seed gives the same
	// order, different seeds give both orders.
	tied := []*Candidate{keyed(0, "x", PlacementKey{Name: "zone", Value: 1}), keyed(1, "y", PlacementKey{Name: "zone", Value: 1})}
	seen := map[string]bool{}
	for seed := 1; seed <= 40; seed++ {
		params := fmt.Sprintf(`{"seed": %d}`, seed)
		a, b := weigh(params, &Request{Keys: sys}, tied), weigh(params, &Request{Keys: sys}, tied)
		if a != b {
			t.Fatalf("seed %d: %s then %s", seed, a, b)
		}
		seen[a] = true
	}
	if len(seen) != 2 {
		t.Errorf("random tie-break over 40 seeds gave %v", seen)
	}
}

func TestAffinityKeysSticky(t *testing.T) {
	data := &fakeData{keys: map[string][]PlacementKey{"c1": {{Name: "_home", Value: 0.7, Sticky: true}}}}
	cands := []*Candidate{
		keyed(0, "other", PlacementKey{Name: "_home", Value: 0.1}),
		keyed(1, "home", PlacementKey{Name: "_home", Value: 0.7}),
	}
	cfg := `{"weighers": [{"name": "spread"}, {"name": "affinity_keys", "factor": 10, "params": {"seed": 3}}]}`
	if got := order(t, cfg, &Request{ConsumerUUID: "c1", Data: data}, cands); got != "home,other" {
		t.Errorf("sticky: %s, want home first", got)
	}
	if data.calls.Load() != 1 {
		t.Errorf("ConsumerKeys called %d times", data.calls.Load())
	}
	// A new consumer has no sticky keys: the ledger's order stands.
	if got := order(t, cfg, &Request{ConsumerUUID: "c2", Data: data}, cands); got != "other,home" {
		t.Errorf("new consumer: %s", got)
	}
	pc, _ := ParsePolicyConfig([]byte(cfg))
	p, _ := NewPolicy(pc, nil, nil)
	if n := p.Needs(); !n.Keys || !n.State || !n.ConsumerKeys || n.Consumers {
		t.Errorf("needs %+v", n)
	}
}

// TestImplicitAffinityKeys: a claim with keys under a policy without
// affinity_keys is ranked by them too.
func TestImplicitAffinityKeys(t *testing.T) {
	cands := []*Candidate{keyed(0, "far", PlacementKey{Name: "zone", Value: 0}), keyed(1, "near", PlacementKey{Name: "zone", Value: 1})}
	p, err := NewPolicy(DefaultPolicyConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Keys: []KeyRequest{{Name: "zone", Value: 1, Weight: 1, System: true}}}
	r, err := p.Rank(context.Background(), req, cands)
	if err != nil || roots(r) != "near,far" || r.Ranked[0].Weights()[AffinityKeysName] != 1 {
		t.Fatalf("%v %s %v", err, roots(r), r.Ranked[0].Weights())
	}
	if n := p.NeedsFor(req); !n.Keys || !n.ConsumerKeys || p.Needs().Keys || p.NeedsFor(&Request{}).Keys {
		t.Errorf("needs %+v", n)
	}
	r, _ = p.Rank(context.Background(), &Request{}, cands)
	if _, ok := r.Ranked[0].Weights()[AffinityKeysName]; ok || roots(r) != "far,near" {
		t.Errorf("without keys: %s %v", roots(r), r.Ranked[0].Weights())
	}
	// A policy that lists affinity_keys uses its own, and only that.
	pc, _ := ParsePolicyConfig([]byte(`{"weighers": [{"name": "affinity_keys", "factor": 3}]}`))
	p, _ = NewPolicy(pc, nil, nil)
	if r, _ = p.Rank(context.Background(), req, cands); r.Ranked[0].Weights()[AffinityKeysName] != 3 {
		t.Errorf("listed: %v", r.Ranked[0].Weights())
	}
}
