package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
)

// cand builds a candidate on root r taking amount of VCPU from a provider
// with capacity cap and used in use.
func cand(index int, r string, capacity, used, amount int64, traits ...string) *Candidate {
	p := &ProviderView{Provider: engine.Provider{UUID: r, Name: r, RootUUID: r}, Traits: traits,
		Resources: ResourcesOf(map[string]engine.InventoryUsage{"VCPU": {Capacity: capacity, Used: used, Inventory: engine.Inventory{Total: capacity}}})}
	return &Candidate{
		Index:       index,
		Roots:       []string{r},
		Allocations: []engine.Allocation{{ProviderUUID: r, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: amount}}}},
		Providers:   map[string]*ProviderView{r: p},
	}
}

// with applies fn to the candidate's root provider and returns c.
func with(c *Candidate, fn func(p *ProviderView)) *Candidate {
	fn(c.RootProvider())
	return c
}

// fakeData is a CloudData over fixed values; it counts GroupMembers
// and ConsumerKeys calls.
type fakeData struct {
	members   []*ProviderView
	instances []Instance
	groups    map[string]map[string]int // "key=value" -> root -> count
	keys      map[string][]PlacementKey
	err       error
	calls     atomic.Int64
	listed    atomic.Int64 // consumers the last Instances call read
}

func (d *fakeData) Instances(_ context.Context, q InstancesQuery) ([]Instance, error) {
	var out []Instance
	for _, in := range d.instances {
		if q.Max > 0 && len(out) > q.Max {
			break
		}
		if (q.Location == "" || in.Location == q.Location) && (q.Project == "" || in.ProjectID == q.Project) {
			if !q.Documents {
				in.Instance = nil
			}
			out = append(out, in)
		}
	}
	d.listed.Store(int64(len(out)))
	return out, d.err
}

func (d *fakeData) InstancesCount(ctx context.Context, q InstancesQuery) (int, error) {
	is, err := d.Instances(ctx, InstancesQuery{Location: q.Location, Project: q.Project})
	return len(is), err
}

func (d *fakeData) Member(_ context.Context, name string) (*ProviderView, error) {
	for _, p := range d.members {
		if p.Matches(name) {
			return p, d.err
		}
	}
	return nil, d.err
}

func (d *fakeData) Members(_ context.Context, aggregate string) ([]*ProviderView, error) {
	var out []*ProviderView
	for _, p := range d.members {
		if aggregate == "" || strings.Contains(strings.Join(p.Aggregates, ","), aggregate) {
			out = append(out, p)
		}
	}
	return out, d.err
}

func (d *fakeData) GroupMembers(_ context.Context, key, value string) (map[string]int, error) {
	d.calls.Add(1)
	return d.groups[key+"="+value], d.err
}

func (d *fakeData) ConsumerKeys(_ context.Context, consumer string) ([]PlacementKey, error) {
	d.calls.Add(1)
	return d.keys[consumer], d.err
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

// runFilter runs one filter as Rank would (Prepare first).
func runFilter(t *testing.T, f Filter, req *Request, c *Candidate) *Status {
	t.Helper()
	rq := *req
	rq.prepared = map[any]any{}
	if pr, ok := f.(Preparer); ok {
		v, st := pr.Prepare(context.Background(), &rq)
		if !st.IsSuccess() {
			return st
		}
		rq.prepared[f] = v
	}
	return f.Filter(context.Background(), &rq, c)
}

func TestFilters(t *testing.T) {
	reg := DefaultRegistry()
	stepped := cand(0, "r", 100, 0, 3)
	stepped.RootProvider().Resources = stepped.RootProvider().Resources.With("VCPU", engine.InventoryUsage{Capacity: 100, Inventory: engine.Inventory{StepSize: 2, MinUnit: 2, MaxUnit: 8}})
	twoClasses := cand(0, "r", 10, 10, 1)
	twoClasses.RootProvider().Resources = twoClasses.RootProvider().Resources.With("MEMORY_MB", engine.InventoryUsage{Capacity: 10, Used: 10})
	twoClasses.Allocations[0].Resources = append(twoClasses.Allocations[0].Resources, engine.ResourceAmount{Class: "MEMORY_MB", Amount: 2})
	group := &fakeData{groups: map[string]map[string]int{"group=web": {"busy": 2, "one": 1}, "rack=r1": {"one": 1}}}
	fresh := &engine.ProviderState{ReportedAt: time.Now().Add(-time.Minute)}
	stale := &engine.ProviderState{ReportedAt: time.Now().Add(-time.Hour)}
	tests := []struct {
		name   string
		unit   string
		params string
		req    Request
		c      *Candidate
		reason string // "" passes; else a substring of the rejection
	}{
		{"capacity fits", CapacityName, ``, Request{}, cand(0, "r", 10, 7, 3), ""},
		{"capacity full", CapacityName, ``, Request{}, cand(0, "r", 10, 8, 3), "lacked VCPU 3"},
		{"capacity step", CapacityName, ``, Request{}, stepped, "not a multiple of step_size 2"},
		{"capacity min", CapacityName, ``, Request{}, with(cand(0, "r", 100, 0, 1), func(p *ProviderView) {
			p.Resources = p.Resources.With("VCPU", engine.InventoryUsage{Capacity: 100, Inventory: engine.Inventory{MinUnit: 2}})
		}), "below min_unit 2"},
		{"capacity max", CapacityName, ``, Request{}, with(cand(0, "r", 100, 0, 9), func(p *ProviderView) {
			p.Resources = p.Resources.With("VCPU", engine.InventoryUsage{Capacity: 100, Inventory: engine.Inventory{MaxUnit: 8}})
		}), "above max_unit 8"},
		{"capacity missing class", CapacityName, ``, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) {
			p.Resources = nil
		}), "lacked VCPU 1"},
		{"required trait present", RequiredTraitsName, `{"traits": ["CUSTOM_A"]}`, Request{}, cand(0, "r", 10, 0, 1, "CUSTOM_A"), ""},
		{"required trait missing", RequiredTraitsName, `{"traits": ["CUSTOM_A", "CUSTOM_B"]}`, Request{}, cand(0, "r", 10, 0, 1, "CUSTOM_A"), "lacked trait CUSTOM_B"},
		{"forbidden trait present", ForbiddenTraitsName, `{"traits": ["CUSTOM_A"]}`, Request{}, cand(0, "r", 10, 0, 1, "CUSTOM_A"), "forbidden trait CUSTOM_A"},
		{"forbidden trait absent", ForbiddenTraitsName, `{"traits": ["CUSTOM_A"]}`, Request{}, cand(0, "r", 10, 0, 1), ""},
		{"aggregates any", AggregatesName, `{"aggregates": ["A1", "a2"]}`, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.Aggregates = []string{"a2"} }), ""},
		{"aggregates none", AggregatesName, `{"aggregates": ["a1"]}`, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.Aggregates = []string{"a2"} }), "in none"},
		{"aggregates all", AggregatesName, `{"aggregates": ["a1", "a2"], "match": "all"}`, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.Aggregates = []string{"a2"} }), "not in aggregate a1"},
		{"pin by param", PinName, `{"provider": "r"}`, Request{}, cand(0, "r", 10, 0, 1), ""},
		{"pin by param, other", PinName, `{"provider": "s"}`, Request{}, cand(0, "r", 10, 0, 1), "not the target s"},
		{"pin by request target", PinName, ``, Request{Target: "s"}, cand(0, "r", 10, 0, 1), "not the target s"},
		{"pin nothing to pin", PinName, ``, Request{}, cand(0, "r", 10, 0, 1), ""},
		{"pin by param and target", PinName, `{"provider": "r"}`, Request{Target: "s"}, cand(0, "r", 10, 0, 1), "not the target s"},
		{"capacity reason in class order", CapacityName, ``, Request{}, twoClasses, "lacked MEMORY_MB 2"},
		{"exclude by param", ExcludeName, `{"providers": ["r"]}`, Request{}, cand(0, "r", 10, 0, 1), "uses excluded provider r"},
		{"exclude by request", ExcludeName, ``, Request{Avoid: []string{"r"}}, cand(0, "r", 10, 0, 1), "excluded"},
		{"exclude other", AvoidProvidersName, `{"providers": ["s"]}`, Request{Avoid: []string{"t"}}, cand(0, "r", 10, 0, 1), ""},
		{"max_consumers below", MaxConsumersName, `{"max": 3}`, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.Consumers = 2 }), ""},
		{"max_consumers reached", MaxConsumersName, `{"max": 3}`, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.Consumers = 3 }), "holds 3 consumers"},
		{"max_usage_ratio under", MaxUsageRatioName, `{"max": 0.5}`, Request{}, cand(0, "r", 10, 2, 3), ""},
		{"max_usage_ratio over", MaxUsageRatioName, `{"max": 0.5}`, Request{}, cand(0, "r", 10, 4, 2), "above 0.5"},
		{"affinity no group", AffinityName, ``, Request{Data: group}, cand(0, "r", 10, 0, 1), ""},
		{"affinity with members", AffinityName, ``, Request{Data: group, Properties: map[string]any{"group": "web"}}, cand(0, "one", 10, 0, 1), ""},
		{"affinity elsewhere", AffinityName, ``, Request{Data: group, Properties: map[string]any{"group": "web"}}, cand(0, "r", 10, 0, 1), "holds none of group web"},
		{"affinity first member", AffinityName, ``, Request{Data: group, Properties: map[string]any{"group": "new"}}, cand(0, "r", 10, 0, 1), ""},
		{"anti_affinity free", AntiAffinityName, ``, Request{Data: group, Properties: map[string]any{"group": "web"}}, cand(0, "r", 10, 0, 1), ""},
		{"anti_affinity taken", AntiAffinityName, ``, Request{Data: group, Properties: map[string]any{"group": "web"}}, cand(0, "one", 10, 0, 1), "holds 1 of group web"},
		{"anti_affinity max 2", AntiAffinityName, `{"max": 2}`, Request{Data: group, Properties: map[string]any{"group": "web"}}, cand(0, "one", 10, 0, 1), ""},
		{"anti_affinity other key", AntiAffinityName, `{"key": "rack"}`, Request{Data: group, Properties: map[string]any{"rack": "r1", "group": "web"}}, cand(0, "busy", 10, 0, 1), ""},
		{"state fresh", StateFreshnessName, ``, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.State = fresh }), ""},
		{"state stale", StateFreshnessName, ``, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.State = stale }), "older than 5m0s"},
		{"state stale, longer max", StateFreshnessName, `{"max_age": "2h"}`, Request{}, with(cand(0, "r", 10, 0, 1), func(p *ProviderView) { p.State = stale }), ""},
		{"state missing", StateFreshnessName, ``, Request{}, cand(0, "r", 10, 0, 1), "no state reported"},
		{"state missing allowed", StateFreshnessName, `{"allow_missing": true}`, Request{}, cand(0, "r", 10, 0, 1), ""},
	}
	for _, tt := range tests {
		u, ok := reg.Lookup(tt.unit)
		if !ok || u.Info.Kind != KindFilter {
			t.Fatalf("%s: no filter %s", tt.name, tt.unit)
		}
		f, err := u.NewFilter(json.RawMessage(tt.params))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		st := runFilter(t, f, &tt.req, tt.c)
		switch {
		case tt.reason == "" && !st.IsSuccess():
			t.Errorf("%s: %+v, want pass", tt.name, st)
		case tt.reason != "" && (!st.IsRejected() || !strings.Contains(st.Reason(), tt.reason)):
			t.Errorf("%s: %+v, want rejection %q", tt.name, st, tt.reason)
		}
	}
}

func TestUnitParams(t *testing.T) {
	reg := DefaultRegistry()
	bad := []struct{ name, params string }{
		{MaxUsageRatioName, `{"max": 0}`},
		{MaxUsageRatioName, `{"max": 1.5}`},
		{MaxUsageRatioName, `{"maximum": 0.5}`},
		{CapacityName, `{"x": 1}`},
		{RequiredTraitsName, `{}`},
		{ForbiddenTraitsName, `{"traits": []}`},
		{AggregatesName, `{"aggregates": ["a"], "match": "some"}`},
		{AggregatesName, `{}`},
		{MaxConsumersName, `{}`},
		{MaxConsumersName, `{"max": 0}`},
		{AffinityName, `{"key": ""}`},
		{AffinityName, `{"max": 2}`},
		{AntiAffinityName, `{"max": 0}`},
		{StateFreshnessName, `{"max_age": "soon"}`},
		{StateFreshnessName, `{"max_age": "-1s"}`},
		{PreferTraitsName, `{}`},
		{PackName, `{"classes": "VCPU"}`},
		{SpreadName, `{"class": "VCPU", "classes": ["VCPU"]}`},
		{EvenName, `{"x": 1}`},
		{LoadName, `{"metric": "temperature"}`},
		{AffinityKeysName, `{"rounds": 0}`},
		{AffinityKeysName, `{"start": -20, "end": 10}`},
	}
	for _, b := range bad {
		u, ok := reg.Lookup(b.name)
		if !ok {
			t.Fatalf("no unit %s", b.name)
		}
		var err error
		if u.Info.Kind == KindFilter {
			_, err = u.NewFilter(json.RawMessage(b.params))
		} else {
			_, err = u.NewWeigher(json.RawMessage(b.params))
		}
		if err == nil {
			t.Errorf("%s %s: accepted", b.name, b.params)
		}
	}
	for _, tt := range []struct {
		cfg, err string
	}{
		{`{"filters": [{"name": "nope"}]}`, `unknown filter "nope"`},
		{`{"filters": [{"name": "spread"}]}`, `unknown filter "spread"`},
		{`{"weighers": [{"name": "capacity"}]}`, `unknown weigher "capacity"`},
		{`{"filters": [{"name": "pin", "factor": 2}]}`, `factor only applies to weighers`},
		{`{"filters": [{"name": "starlark:x"}]}`, `no scriptlet store`},
		{`{"balancer": {"mode": "random"}}`, `balancer: mode`},
		{`{"balancer": {"mode": "even", "high": 0.1, "low": 0.5}}`, `low < high`},
	} {
		cfg, err := ParsePolicyConfig([]byte(tt.cfg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewPolicy(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want %q", tt.cfg, err, tt.err)
		}
	}
	if _, err := ParsePolicyConfig([]byte(`{"filter": []}`)); err == nil {
		t.Error("unknown policy field accepted")
	}
}

func TestRegistryUnits(t *testing.T) {
	units := DefaultRegistry().Units()
	names := map[string]UnitInfo{}
	for _, u := range units {
		names[u.Name] = u
		if u.Description == "" || u.Parameters == nil {
			t.Errorf("%s: description or parameters missing", u.Name)
		}
	}
	for _, n := range []string{CapacityName, RequiredTraitsName, ForbiddenTraitsName, AggregatesName, PinName, ExcludeName,
		MaxConsumersName, AffinityName, AntiAffinityName, StateFreshnessName, SpreadName, PackName, EvenName,
		PowerSavingName, LoadName, AffinityKeysName} {
		if _, ok := names[n]; !ok {
			t.Errorf("unit %s not listed", n)
		}
	}
	if _, ok := names[AvoidProvidersName]; ok {
		t.Error("alias listed as a unit")
	}
	if u := names[ExcludeName]; len(u.Aliases) != 1 || u.Aliases[0] != AvoidProvidersName {
		t.Errorf("exclude aliases %v", u.Aliases)
	}
	if units[0].Kind != KindFilter || units[len(units)-1].Kind != KindWeigher {
		t.Error("filters not listed first")
	}
	if err := DefaultRegistry().Register(Unit{Info: UnitInfo{Name: PinName, Kind: KindFilter}, NewFilter: NewPin}); err == nil {
		t.Error("duplicate name registered")
	}
	b, err := json.Marshal(names[StateFreshnessName])
	if err != nil || !strings.Contains(string(b), `{"name":"max_age","type":"duration","default":"5m"`) {
		t.Errorf("json %s %v", b, err)
	}
}

// order ranks cands with a policy of cfg and returns the roots, best
// first.
func order(t *testing.T, cfg string, req *Request, cands []*Candidate) string {
	t.Helper()
	pc, err := ParsePolicyConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(pc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Rank(context.Background(), req, cands)
	if err != nil {
		t.Fatal(err)
	}
	return roots(r)
}

func roots(r *Ranking) string {
	var out []string
	for _, s := range r.Ranked {
		out = append(out, s.Cand.Root())
	}
	return strings.Join(out, ",")
}

func TestWeighers(t *testing.T) {
	mem := func(c *Candidate, capacity, used, amount int64) *Candidate {
		c.RootProvider().Resources = c.RootProvider().Resources.With("MEMORY_MB", engine.InventoryUsage{Capacity: capacity, Used: used})
		c.Allocations[0].Resources = append(c.Allocations[0].Resources, engine.ResourceAmount{Class: "MEMORY_MB", Amount: amount})
		return c
	}
	consumers := func(c *Candidate, n int) *Candidate { return with(c, func(p *ProviderView) { p.Consumers = n }) }
	load := func(c *Candidate, l float64) *Candidate {
		return with(c, func(p *ProviderView) {
			p.State = &engine.ProviderState{Load1: l, Load5: l, Load15: l, CPUUtilization: l * 10, MemoryFreeMB: int64(1000 - l)}
		})
	}
	tests := []struct {
		name  string
		cfg   string
		cands []*Candidate
		want  string
	}{
		{"spread by fraction", `{"weighers": [{"name": "spread"}]}`,
			[]*Candidate{cand(0, "half", 10, 5, 1), cand(1, "empty", 10, 0, 1), cand(2, "full", 10, 9, 1)}, "empty,half,full"},
		{"pack by fraction", `{"weighers": [{"name": "pack"}]}`,
			[]*Candidate{cand(0, "half", 10, 5, 1), cand(1, "empty", 10, 0, 1), cand(2, "full", 10, 9, 1)}, "full,half,empty"},
		{"spread by free RAM, not fraction", `{"weighers": [{"name": "spread", "params": {"class": "MEMORY_MB"}}]}`,
			[]*Candidate{mem(cand(0, "small", 10, 0, 1), 1000, 0, 100), mem(cand(1, "big", 10, 9, 1), 8000, 4000, 100)}, "big,small"},
		{"pack by free RAM", `{"weighers": [{"name": "pack", "params": {"class": "MEMORY_MB"}}]}`,
			[]*Candidate{mem(cand(0, "big", 10, 0, 1), 8000, 4000, 100), mem(cand(1, "small", 10, 9, 1), 1000, 0, 100)}, "small,big"},
		{"spread, only listed classes", `{"weighers": [{"name": "spread", "params": {"classes": ["MEMORY_MB"]}}]}`,
			[]*Candidate{mem(cand(0, "a", 10, 0, 1), 100, 90, 1), mem(cand(1, "b", 10, 9, 1), 100, 0, 1)}, "b,a"},
		{"negative factor inverts", `{"weighers": [{"name": "pack", "factor": -1}]}`,
			[]*Candidate{cand(0, "half", 10, 5, 1), cand(1, "empty", 10, 0, 1), cand(2, "full", 10, 9, 1)}, "empty,half,full"},
		{"even", `{"weighers": [{"name": "even"}]}`,
			[]*Candidate{consumers(cand(0, "three", 10, 0, 1), 3), consumers(cand(1, "one", 10, 0, 1), 1), consumers(cand(2, "two", 10, 0, 1), 2)}, "one,two,three"},
		{"power_saving", `{"weighers": [{"name": "power_saving"}]}`,
			[]*Candidate{consumers(cand(0, "idle", 10, 0, 1), 0), consumers(cand(1, "light", 10, 2, 1), 1), consumers(cand(2, "busy", 10, 6, 1), 3)}, "busy,light,idle"},
		{"load", `{"weighers": [{"name": "load"}]}`,
			[]*Candidate{load(cand(0, "hot", 10, 0, 1), 8), cand(1, "silent", 10, 0, 1), load(cand(2, "cool", 10, 0, 1), 1), load(cand(3, "warm", 10, 0, 1), 4)}, "cool,warm,hot,silent"},
		{"load by free memory", `{"weighers": [{"name": "load", "params": {"metric": "memory_free_mb"}}]}`,
			[]*Candidate{load(cand(0, "hot", 10, 0, 1), 8), load(cand(1, "cool", 10, 0, 1), 1)}, "cool,hot"},
		{"prefer_traits", `{"weighers": [{"name": "prefer_traits", "params": {"traits": ["CUSTOM_A", "CUSTOM_B"]}}]}`,
			[]*Candidate{cand(0, "none", 10, 0, 1), cand(1, "both", 10, 0, 1, "CUSTOM_A", "CUSTOM_B"), cand(2, "one", 10, 0, 1, "CUSTOM_B")}, "both,one,none"},
		{"factors combine", `{"weighers": [{"name": "spread"}, {"name": "prefer_traits", "params": {"traits": ["CUSTOM_GOLD"]}, "factor": 2}]}`,
			[]*Candidate{cand(0, "empty", 10, 0, 1), cand(1, "half", 10, 5, 1, "CUSTOM_GOLD"), cand(2, "full", 10, 9, 1)}, "half,empty,full"},
	}
	for _, tt := range tests {
		if got := order(t, tt.cfg, &Request{}, tt.cands); got != tt.want {
			t.Errorf("%s: ranked %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestRankFiltersCheapestFirst(t *testing.T) {
	data := &fakeData{groups: map[string]map[string]int{"group=g": {"b": 1}}}
	cands := []*Candidate{cand(0, "a", 10, 0, 1), cand(1, "b", 10, 0, 1), cand(2, "c", 10, 9, 2), cand(3, "d", 10, 0, 1, "CUSTOM_X")}
	pc, _ := ParsePolicyConfig([]byte(`{"filters": [{"name": "anti_affinity"}, {"name": "forbidden_traits", "params": {"traits": ["CUSTOM_X"]}}]}`))
	p, err := NewPolicy(pc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Data: data, Properties: map[string]any{"group": "g"}, Avoid: []string{"a"}}
	r, err := p.Rank(context.Background(), req, cands)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rej := range r.Rejections {
		got = append(got, fmt.Sprintf("%s-%d=%d%v", rej.Unit, rej.Removed, rej.Remaining, rej.Reasons))
	}
	want := "exclude-1=3map[uses excluded provider a:1] capacity-1=2map[lacked VCPU 2:1] " +
		"forbidden_traits-1=1map[has forbidden trait CUSTOM_X:1] anti_affinity-1=0map[holds 1 of group g:1]"
	if strings.Join(got, " ") != want {
		t.Errorf("rejections\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if data.calls.Load() != 1 {
		t.Errorf("GroupMembers called %d times, want once per Rank", data.calls.Load())
	}
	if req.prepared != nil {
		t.Error("Rank changed the caller's request")
	}
	if n := p.Needs(); !n.GroupMembers || n.State || n.Keys {
		t.Errorf("needs %+v", n)
	}
	// A target runs pin first.
	r, err = p.Rank(context.Background(), &Request{Target: "b"}, cands)
	if err != nil || roots(r) != "b" || r.Rejections[0].Unit != PinName || r.Rejections[0].Removed != 3 {
		t.Errorf("target: %v %+v", err, r)
	}
}

// failing is a filter that fails.
type failing struct{}

func (failing) Name() string { return "failing" }
func (failing) Filter(context.Context, *Request, *Candidate) *Status {
	return AsError(errors.New("backend down"))
}

func TestRankPluginError(t *testing.T) {
	reg := DefaultRegistry()
	if err := reg.Register(Unit{Info: UnitInfo{Name: "failing", Kind: KindFilter},
		NewFilter: func(json.RawMessage) (Filter, error) { return failing{}, nil }}); err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(PolicyConfig{Filters: []PluginConfig{{Name: "failing"}}}, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Rank(context.Background(), &Request{}, []*Candidate{cand(0, "r", 1, 0, 1)})
	var pe *PluginError
	if !errors.As(err, &pe) || pe.Plugin != "failing" {
		t.Fatalf("got %v, want a PluginError from failing", err)
	}
	// A CloudData outage is a PluginError too.
	pc, _ := ParsePolicyConfig([]byte(`{"filters": [{"name": "affinity"}]}`))
	p, _ = NewPolicy(pc, nil, nil)
	_, err = p.Rank(context.Background(), &Request{Data: &fakeData{err: errors.New("db down")}, Properties: map[string]any{"group": "x"}},
		[]*Candidate{cand(0, "r", 1, 0, 1)})
	if !errors.As(err, &pe) || pe.Plugin != AffinityName {
		t.Fatalf("got %v, want a PluginError from affinity", err)
	}
}

func TestDefaultPolicy(t *testing.T) {
	p, err := NewPolicy(DefaultPolicyConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Rank(context.Background(), &Request{}, []*Candidate{cand(0, "full", 10, 8, 3), cand(1, "half", 10, 5, 1), cand(2, "empty", 10, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if roots(r) != "empty,half" || r.Rejections[0].Unit != CapacityName || r.Rejections[0].Removed != 1 {
		t.Errorf("default policy: %s %+v", roots(r), r.Rejections)
	}
	if w := r.Ranked[0].Weights()[SpreadName]; w != 1 {
		t.Errorf("weights %v", r.Ranked[0].Weights())
	}
}

func (d *fakeData) PreemptibleUsage(_ context.Context, uuids []string) (map[string][]engine.PreemptibleUsage, error) {
	d.calls.Add(1)
	out := map[string][]engine.PreemptibleUsage{}
	for _, p := range d.members {
		if len(p.Preemptible) > 0 && slices.Contains(uuids, p.UUID) {
			out[p.UUID] = p.Preemptible
		}
	}
	return out, d.err
}

func (d *fakeData) States(_ context.Context, uuids []string) (map[string]*engine.ProviderState, error) {
	d.calls.Add(1)
	out := map[string]*engine.ProviderState{}
	for _, p := range d.members {
		if p.State != nil && slices.Contains(uuids, p.UUID) {
			out[p.UUID] = p.State
		}
	}
	return out, d.err
}
