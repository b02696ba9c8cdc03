package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// cand builds a candidate on root r taking amounts of VCPU from a provider
// with capacity cap and used in use.
func cand(index int, r string, capacity, used, amount int64, traits ...string) *Candidate {
	p := &Provider{UUID: r, RootUUID: r, Traits: traits,
		Resources: map[string]Inventory{"VCPU": {Capacity: capacity, Used: used}}}
	return &Candidate{
		Index:       index,
		Roots:       []string{r},
		Allocations: []Allocation{{ProviderUUID: r, Resources: map[string]int64{"VCPU": amount}}},
		Providers:   map[string]*Provider{r: p},
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want []float64
	}{
		{nil, []float64{}},
		{[]float64{5}, []float64{0}},
		{[]float64{3, 3, 3}, []float64{0, 0, 0}},
		{[]float64{0, 5, 10}, []float64{0, 0.5, 1}},
		{[]float64{-2, 2}, []float64{0, 1}},
	}
	for _, tt := range tests {
		got := Normalize(tt.in)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Normalize(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFilters(t *testing.T) {
	ctx := context.Background()
	mur, err := NewMaxUsageRatio(json.RawMessage(`{"max": 0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	murMem, err := NewMaxUsageRatio(json.RawMessage(`{"max": 0.5, "classes": ["MEMORY_MB"]}`))
	if err != nil {
		t.Fatal(err)
	}
	avoid, err := NewAvoidProviders(json.RawMessage(`{"providers": ["AAAAAAAA-0000-0000-0000-000000000001"]}`))
	if err != nil {
		t.Fatal(err)
	}
	a := "aaaaaaaa-0000-0000-0000-000000000001"
	tests := []struct {
		name   string
		f      Filter
		c      *Candidate
		reject bool
	}{
		{"under ratio", mur, cand(0, "r", 10, 2, 3), false},
		{"exactly at ratio", mur, cand(0, "r", 10, 2, 3), false},
		{"over ratio after claim", mur, cand(0, "r", 10, 4, 2), true},
		{"zero capacity", mur, cand(0, "r", 0, 0, 1), true},
		{"other class ignored", murMem, cand(0, "r", 10, 9, 1), false},
		{"avoided root, canonical uuid", avoid, cand(0, a, 10, 0, 1), true},
		{"not avoided", avoid, cand(0, "b", 10, 0, 1), false},
	}
	for _, tt := range tests {
		st := tt.f.Filter(ctx, &Request{}, tt.c)
		if st.IsRejected() != tt.reject || (!tt.reject && !st.IsSuccess()) {
			t.Errorf("%s: status %+v, want reject=%v", tt.name, st, tt.reject)
		}
	}
}

func TestPluginParams(t *testing.T) {
	reg := DefaultRegistry()
	bad := []struct{ kind, name, params string }{
		{"f", MaxUsageRatioName, `{"max": 0}`},
		{"f", MaxUsageRatioName, `{"max": 1.5}`},
		{"f", MaxUsageRatioName, `{"maximum": 0.5}`},
		{"f", AvoidProvidersName, `{"providers": ["nope"]}`},
		{"w", PreferTraitsName, `{}`},
		{"w", PackName, `{"classes": "VCPU"}`},
	}
	for _, b := range bad {
		var err error
		if b.kind == "f" {
			_, err = reg.Filters[b.name](json.RawMessage(b.params))
		} else {
			_, err = reg.Weighers[b.name](json.RawMessage(b.params))
		}
		if err == nil {
			t.Errorf("%s %s: accepted", b.name, b.params)
		}
	}
	if _, err := NewPolicy(PolicyConfig{Filters: []PluginConfig{{Name: "nope"}}}, nil, nil); err == nil ||
		!strings.Contains(err.Error(), `unknown filter "nope"`) {
		t.Errorf("unknown filter: %v", err)
	}
	if _, err := ParsePolicyConfig([]byte(`{"filter": []}`)); err == nil {
		t.Error("unknown policy field accepted")
	}
}

func TestWeighers(t *testing.T) {
	ctx := context.Background()
	pack, _ := NewPack(nil)
	spread, _ := NewSpread(nil)
	pref, _ := NewPreferTraits(json.RawMessage(`{"traits": ["CUSTOM_A", "CUSTOM_B"]}`))
	c := cand(0, "r", 10, 3, 2, "CUSTOM_B")
	for _, tt := range []struct {
		w    Weigher
		want float64
	}{{pack, 0.5}, {spread, 0.5}, {pref, 1}} {
		got, st := tt.w.Weigh(ctx, &Request{}, c)
		if !st.IsSuccess() || got != tt.want {
			t.Errorf("%s: %v %v, want %v", tt.w.Name(), got, st, tt.want)
		}
	}
}

func ptr(f float64) *float64 { return &f }

func TestRank(t *testing.T) {
	ctx := context.Background()
	cands := func() []*Candidate {
		return []*Candidate{
			cand(0, "empty", 10, 0, 1),
			cand(1, "half", 10, 5, 1, "CUSTOM_GOLD"),
			cand(2, "full", 10, 9, 1),
			cand(3, "half2", 10, 5, 1),
		}
	}
	roots := func(r *Ranking) string {
		var out []string
		for _, s := range r.Ranked {
			out = append(out, s.Cand.Root())
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name   string
		cfg    string
		avoid  []string
		want   string
		reject map[string]int
	}{
		{"no plugins keeps ledger order", `{}`, nil, "empty,half,full,half2", nil},
		{"pack", `{"weighers": [{"name": "pack"}]}`, nil, "full,half,half2,empty", nil},
		{"spread", `{"weighers": [{"name": "spread"}]}`, nil, "empty,half,half2,full", nil},
		{"negative factor inverts", `{"weighers": [{"name": "pack", "factor": -1}]}`, nil, "empty,half,half2,full", nil},
		{"filter then pack", `{"filters": [{"name": "max_usage_ratio", "params": {"max": 0.8}}], "weighers": [{"name": "pack"}]}`,
			nil, "half,half2,empty", map[string]int{"max_usage_ratio": 1}},
		{"factors combine", `{"weighers": [{"name": "spread", "factor": 1}, {"name": "prefer_traits", "params": {"traits": ["CUSTOM_GOLD"]}, "factor": 2}]}`,
			nil, "half,empty,half2,full", nil},
		{"request avoid runs first", `{"filters": [{"name": "max_usage_ratio", "params": {"max": 0.6}}]}`, []string{"full", "empty"},
			"half,half2", map[string]int{AvoidFilterName: 2, "max_usage_ratio": 0}},
	}
	for _, tt := range tests {
		cfg, err := ParsePolicyConfig([]byte(tt.cfg))
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPolicy(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Rank(ctx, &Request{Avoid: tt.avoid}, cands())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := roots(r); got != tt.want {
			t.Errorf("%s: ranked %s, want %s", tt.name, got, tt.want)
		}
		for f, n := range tt.reject {
			found := false
			for _, fc := range r.Rejections {
				if fc.Filter == f {
					found = true
					if fc.Rejected != n {
						t.Errorf("%s: %s rejected %d, want %d (%v)", tt.name, f, fc.Rejected, n, fc.Reasons)
					}
				}
			}
			if !found {
				t.Errorf("%s: no count for %s", tt.name, f)
			}
		}
		if r.Considered != 4 {
			t.Errorf("%s: considered %d", tt.name, r.Considered)
		}
	}
	_ = ptr
}

// failing is a filter that fails.
type failing struct{}

func (failing) Name() string { return "failing" }
func (failing) Filter(context.Context, *Request, *Candidate) *Status {
	return AsError(errors.New("backend down"))
}

func TestRankPluginError(t *testing.T) {
	reg := DefaultRegistry()
	reg.Filters["failing"] = func(json.RawMessage) (Filter, error) { return failing{}, nil }
	p, err := NewPolicy(PolicyConfig{Filters: []PluginConfig{{Name: "failing"}}}, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Rank(context.Background(), &Request{}, []*Candidate{cand(0, "r", 1, 0, 1)})
	var pe *PluginError
	if !errors.As(err, &pe) || pe.Plugin != "failing" {
		t.Fatalf("got %v, want a PluginError from failing", err)
	}
}
