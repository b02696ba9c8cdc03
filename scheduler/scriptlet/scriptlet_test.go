package scriptlet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

func compile(t *testing.T, src string) *Program {
	t.Helper()
	p, err := Compile("test.star", []byte(src))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// scripts is a Resolver whose programs tests change between
// ranks.
type scripts struct {
	mu    sync.Mutex
	def   *Program
	named map[string]*Program
}

func (s *scripts) Scriptlet(name string) (*Program, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.named[name]
	return p, ok
}

func (s *scripts) DefaultScriptlet() *Program {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.def
}

// rankWith ranks cands under a policy cfg whose default scriptlet is src.
func rankWith(t *testing.T, cfg string, src string, limits Limits, req *scheduler.Request, cands []*scheduler.Candidate) (*scheduler.Ranking, error) {
	t.Helper()
	pc, err := scheduler.ParsePolicyConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	res := &scripts{named: map[string]*Program{}}
	if src != "" {
		res.def = compile(t, src)
		res.named["s"] = res.def
	}
	p, err := scheduler.NewPolicy(pc, nil, NewRuntime(res, limits))
	if err != nil {
		t.Fatal(err)
	}
	return p.Rank(context.Background(), req, cands)
}

func threeCands() []*scheduler.Candidate {
	return []*scheduler.Candidate{
		with(cand(0, "uuid-1", 10, 0, 1), func(p *scheduler.ProviderView) {
			p.Name, p.Aggregates, p.Keys = "node1", []string{"agg-a"}, []scheduler.PlacementKey{{Name: "zone", Value: 0.5}}
		}),
		cand(1, "node2", 10, 5, 1, "CUSTOM_SSD"),
		cand(2, "node3", 10, 8, 1),
	}
}

func fixData() *fakeData {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	return &fakeData{
		members: []*scheduler.ProviderView{
			{Provider: engine.Provider{UUID: "uuid-1", Name: "node1"}, Aggregates: []string{"agg-a"}, State: &engine.ProviderState{Load1: 0.5, MemoryFreeMB: 2048, ReportedAt: now},
				Resources: scheduler.ResourcesOf(map[string]engine.InventoryUsage{"VCPU": {Inventory: engine.Inventory{Total: 8, AllocationRatio: 2}, Capacity: 16, Used: 4}})},
			{Provider: engine.Provider{UUID: "node2", Name: "node2"}, Resources: scheduler.ResourcesOf(map[string]engine.InventoryUsage{"VCPU": {Inventory: engine.Inventory{Total: 10}, Capacity: 10, Used: 5}})},
		},
		instances: []scheduler.Instance{
			{UUID: "i1", Name: "web1", ProjectID: "p1", Location: "node1", Resources: map[string]int64{"VCPU": 2}},
			{UUID: "i2", Name: "web2", ProjectID: "p2", Location: "node1", Resources: map[string]int64{"VCPU": 2}},
			{UUID: "i3", Name: "db1", ProjectID: "p1", Location: "node2", Resources: map[string]int64{"VCPU": 5}},
		},
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"syntax", "def instance_placement(request, candidate_members):\n    return (\n", 3, 1, "got outdent"},
		{"undefined name", "def instance_placement(request, candidate_members):\n    return nope\n", 2, 12, "undefined: nope"},
		{"top level fails", "x = 1\ny = x // 0\ndef filter(request, candidate):\n    return True\n", 2, 7, "division by zero"},
		{"builtin at top level", "log_info(\"hi\")\ndef filter(request, candidate):\n    return True\n", 1, 9, "only callable while placing"},
		{"wrong arity", "def instance_placement(request):\n    return None\n", 1, 1, "function of two parameters"},
		{"not a function", "weigh = 3\n", 0, 0, "function of two parameters"},
		{"nothing defined", "x = 1\n", 1, 1, "defines none of"},
	}
	for _, tt := range tests {
		_, err := Compile("t.star", []byte(tt.src))
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a CompileError", tt.name, err)
			continue
		}
		if ce.Line != tt.line || ce.Col != tt.col || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("%s: %d:%d %q, want %d:%d %q", tt.name, ce.Line, ce.Col, ce.Msg, tt.line, tt.col, tt.msg)
		}
	}
	p := compile(t, "def filter(request, candidate):\n    return True\n")
	if p.HasPlacement() || !p.HasFilter() || p.HasWeigh() || p.Name() != "test.star" || !strings.Contains(string(p.Source()), "def filter") {
		t.Errorf("program %+v", p)
	}
}

// TestSeedExample is the example: a scriptlet refusing by name.
func TestSeedExample(t *testing.T) {
	src := "def instance_placement(request, candidate_members):\n    if request.name == \"foo\":\n        return \"Invalid name\"\n"
	_, err := rankWith(t, `{}`, src, Limits{}, &scheduler.Request{Name: "foo"}, threeCands())
	var refused *scheduler.RefusedError
	if !errors.As(err, &refused) || refused.Reason != "Invalid name" || err.Error() != "Failed instance placement scriptlet: Invalid name" {
		t.Fatalf("foo: %v", err)
	}
	r, err := rankWith(t, `{}`, src, Limits{}, &scheduler.Request{Name: "bar"}, threeCands())
	if err != nil || roots(r) != "uuid-1,node2,node3" || r.Chosen || r.Scriptlet != DefaultName {
		t.Fatalf("bar: %v %+v", err, r)
	}
}

func TestScriptletRequestAndMembers(t *testing.T) {
	src := `
def instance_placement(request, candidate_members):
    log_info("request", request.consumer_uuid, request.name, request.project, request.user, request.reason)
    log_info("resources", request.resources, request.traits.required, request.traits.forbidden)
    log_info("properties", request.properties["group"], request.properties["n"], request.keys[0].name, request.keys[0].weight)
    m = candidate_members[0]
    log_warn("member", m.rank, m.name, m.uuid, m.aggregates, m.keys["zone"], m.inventories["VCPU"].capacity, m.usage["VCPU"])
    print("printed")
    log_error("second", candidate_members[1].traits, candidate_members[1].state, len(candidate_members), candidate_members[2].weights)
`
	req := &scheduler.Request{ConsumerUUID: "c1", Name: "vm", ProjectID: "p1", UserID: "u1", Reason: "new",
		Resources: map[string]int64{"VCPU": 1}, Required: []string{"HW_CPU_X86_AVX2"}, Forbidden: []string{"CUSTOM_OLD"},
		Properties: map[string]any{"group": "web", "n": float64(3)}, Keys: []scheduler.KeyRequest{{Name: "zone", Value: 0.5, Weight: 2}}}
	r, err := rankWith(t, `{"weighers": [{"name": "spread"}, {"name": "affinity_keys", "params": {"seed": 1}}]}`, src, Limits{}, req, threeCands())
	if err != nil {
		t.Fatal(err)
	}
	want := []scheduler.LogLine{
		{Level: "info", Message: "request c1 vm p1 u1 new"},
		{Level: "info", Message: `resources {"VCPU": 1} ["HW_CPU_X86_AVX2"] ["CUSTOM_OLD"]`},
		{Level: "info", Message: "properties web 3 zone 2.0"},
		{Level: "warn", Message: `member 0 node1 uuid-1 ["agg-a"] 0.5 10 0`},
		{Level: "info", Message: "printed"},
		{Level: "error", Message: `second ["CUSTOM_SSD"] None 3 {"affinity_keys": 0.0, "spread": 0.0}`},
	}
	if fmt.Sprint(r.Log) != fmt.Sprint(want) {
		t.Errorf("log\n%v\nwant\n%v", r.Log, want)
	}
}

func TestScriptletBuiltins(t *testing.T) {
	tests := []struct {
		name, body string
		log        string // the lines logged, "|"-joined
		err        string // a substring of the refusal
		order      string
	}{
		{"set_target by name", `set_target("node3")`, "", "", "node3,uuid-1,node2"},
		{"set_target by uuid", `set_target("uuid-1")`, "", "", "uuid-1,node2,node3"},
		// As LXD: a name that is not a candidate is a warning, and the
		// choice stays as it was.
		{"set_target not a candidate", `log_info(set_target("node9"))`,
			`set_target: "node9" is not a candidate member; the built-in choice stands|Invalid member name`, "", "uuid-1,node2,node3"},
		{"set_target not a candidate after one", `set_target("node2")
    set_target("node9")`, `set_target: "node9" is not a candidate member; the built-in choice stands`, "", "node2,uuid-1,node3"},
		{"get_cluster_member_state", `s = get_cluster_member_state("node1")
    n = get_cluster_member_state("node2")
    log_info(s.load_1, s.memory_free_mb, s.reported_at, s["sysinfo"]["free_ram"], s.sysinfo.load_averages)
    log_info(bool(n), n.reported_at, n.sysinfo.free_ram, n["load_1"])`,
			"0.5 2048 2026-11-22T12:00:00Z 2147483648 [0.5, 0.0, 0.0]|False None 0 0.0", "", "uuid-1,node2,node3"},
		{"get_cluster_member_state unknown", `log_info(get_cluster_member_state("nope"), get_cluster_member_resources("nope"))`,
			"Invalid member name Invalid member name", "", "uuid-1,node2,node3"},
		{"get_cluster_member_resources", `r = get_cluster_member_resources("node1")["VCPU"]
    log_info(r.total, r.capacity, r.used, r.free, r.allocation_ratio)`, "8 16 4 12 2.0", "", "uuid-1,node2,node3"},
		{"get_instance_resources", `r = get_instance_resources()
    log_info(r["VCPU"], r.get("DISK_GB", 0), r.items(), len(r), [k for k in r], r.cpu_cores, r["memory_size"])`,
			`1 0 [("VCPU", 1)] 1 ["VCPU"] 1 0`, "", "uuid-1,node2,node3"},
		{"get_instances", `log_info([i.name for i in get_instances()])
    log_info([i.name for i in get_instances(location="node1")])
    log_info([i.name for i in get_instances(project="p1")])
    log_info([i.uuid for i in get_instances("p1", "node1")], get_instances(location=None)[2].resources)`,
			`["web1", "web2", "db1"]|["web1", "web2"]|["web1", "db1"]|["i1"] {"VCPU": 5}`, "", "uuid-1,node2,node3"},
		{"get_instances bad argument", `get_instances(location=3)`, "", "location must be a string or None", ""},
		{"get_instances_count", `log_info(get_instances_count(), get_instances_count(location="node2"), get_instances_count(project="p2"))`,
			"3 1 1", "", "uuid-1,node2,node3"},
		{"get_cluster_members", `log_info([m.name for m in get_cluster_members(all=True)], [m.uuid for m in get_cluster_members(aggregate="agg-a", all=True)])`,
			`["node1", "node2"] ["uuid-1"]`, "", "uuid-1,node2,node3"},
		// As Incus's: only members that may take an instance (node1's
		// last report is old: offline).
		{"get_cluster_members placeable", `log_info([m.name for m in get_cluster_members()], get_cluster_members("agg-a"))`,
			`["node2"] []`, "", "uuid-1,node2,node3"},
		{"fail", `fail("no capacity in " + "zone a")`, "", "no capacity in zone a", ""},
		{"return a non-string", `return 42`, "", "42", ""},
		{"runtime error", `x = {}["missing"]`, "", `line 3:11: key "missing" not in dict`, ""},
	}
	for _, tt := range tests {
		src := "def instance_placement(request, candidate_members):\n    pass\n    " + tt.body + "\n"
		req := &scheduler.Request{Data: fixData(), Resources: map[string]int64{"VCPU": 1}}
		r, err := rankWith(t, `{}`, src, Limits{OnError: OnErrorRefuse}, req, threeCands())
		if tt.err != "" {
			var refused *scheduler.RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want a refusal with %q", tt.name, err, tt.err)
			}
			if tt.name == "fail" || tt.name == "return a non-string" {
				continue
			}
			// Under on_error ignore a failing scriptlet is ignored: the
			// policy's ranking stands, the log says why.
			r, err = rankWith(t, `{}`, src, Limits{OnError: OnErrorIgnore}, req, threeCands())
			if err != nil || roots(r) != "uuid-1,node2,node3" || r.Chosen || len(r.Log) != 1 ||
				!strings.Contains(r.Log[0].Message, "scriptlet \"(default)\" failed and was ignored (the ranking stands as the policy made it)") ||
				!strings.Contains(r.Log[0].Message, tt.err) {
				t.Errorf("%s ignored: %v %+v", tt.name, err, r)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var lines []string
		for _, l := range r.Log {
			lines = append(lines, l.Message)
		}
		if got := strings.Join(lines, "|"); got != tt.log {
			t.Errorf("%s: log %q, want %q", tt.name, got, tt.log)
		}
		if got := roots(r); got != tt.order {
			t.Errorf("%s: order %s, want %s", tt.name, got, tt.order)
		}
		if strings.HasPrefix(tt.name, "set_target") && tt.name != "set_target not a candidate" && (!r.Chosen || r.Target != r.Ranked[0].Cand.Root()) {
			t.Errorf("%s: target %q chosen %v", tt.name, r.Target, r.Chosen)
		}
	}
	// Without cluster data the data builtins fail clearly.
	_, err := rankWith(t, `{}`, "def instance_placement(request, candidate_members):\n    get_instances()\n", Limits{OnError: OnErrorRefuse}, &scheduler.Request{}, threeCands())
	if err == nil || !strings.Contains(err.Error(), "no cloud data available") {
		t.Errorf("no data: %v", err)
	}
}

func TestScriptletLimits(t *testing.T) {
	loop := "def instance_placement(request, candidate_members):\n    n = 0\n    for i in range(1000000000):\n        n += i\n"
	var m Metrics
	var runs []RunStats
	var mu sync.Mutex
	m.OnRun = func(s RunStats) { mu.Lock(); runs = append(runs, s); mu.Unlock() }

	r, err := rankWith(t, `{}`, loop, Limits{MaxSteps: 10000, Metrics: &m, OnError: OnErrorRefuse}, &scheduler.Request{}, threeCands())
	var lim *LimitError
	var refused *scheduler.RefusedError
	if !errors.As(err, &refused) || !errors.As(err, &lim) || lim.Limit != LimitSteps || lim.Steps < 10000 {
		t.Fatalf("steps: %v", err)
	}
	if len(r.Log) != 1 || r.Log[0].Level != "error" || !strings.Contains(r.Log[0].Message, "exceeded its step budget") {
		t.Errorf("steps log %v", r.Log)
	}

	// A budget too large to reach: the deadline stops it.
	_, err = rankWith(t, `{}`, loop, Limits{MaxSteps: 1 << 62, Timeout: 20 * time.Millisecond, Metrics: &m, OnError: OnErrorRefuse},
		&scheduler.Request{}, threeCands())
	if !errors.As(err, &lim) || lim.Limit != LimitDeadline || !strings.Contains(err.Error(), "exceeded its deadline") {
		t.Fatalf("deadline: %v", err)
	}
	if m.Runs.Load() != 2 || m.StepLimit.Load() != 1 || m.DeadlineLimit.Load() != 1 || m.Steps.Load() < 10000 {
		t.Errorf("metrics runs %d steps %d deadline %d", m.Runs.Load(), m.StepLimit.Load(), m.DeadlineLimit.Load())
	}
	if len(runs) != 2 || runs[0].Outcome != "limit_steps" || runs[1].Outcome != "limit_deadline" || runs[0].Entry != "instance_placement" {
		t.Errorf("runs %+v", runs)
	}

	// A refusal and an error are counted too.
	_, _ = rankWith(t, `{}`, "def instance_placement(request, candidate_members):\n    return 'no'\n", Limits{Metrics: &m}, &scheduler.Request{}, threeCands())
	_, _ = rankWith(t, `{}`, "def instance_placement(request, candidate_members):\n    return 1 // 0\n", Limits{Metrics: &m}, &scheduler.Request{}, threeCands())
	if m.Refused.Load() != 1 || m.Errors.Load() != 1 {
		t.Errorf("refused %d errors %d", m.Refused.Load(), m.Errors.Load())
	}
}

func TestStarlarkUnits(t *testing.T) {
	src := `
def filter(request, candidate):
    if candidate.name == "node3":
        return "too full"
    return candidate.name != "node2" or request.name == "keep2"

def weigh(request, candidate):
    return {"node1": 1, "node2": 5, "node3": 3}[candidate.name]
`
	res := &scripts{named: map[string]*Program{"units": compile(t, src)}}
	buildWith := func(cfg string, limits Limits) *scheduler.Policy {
		pc, err := scheduler.ParsePolicyConfig([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		p, err := scheduler.NewPolicy(pc, nil, NewRuntime(res, limits))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	build := func(cfg string) *scheduler.Policy { return buildWith(cfg, Limits{}) }
	buildIgnoring := func(cfg string) *scheduler.Policy { return buildWith(cfg, Limits{OnError: OnErrorIgnore}) }
	p := build(`{"filters": [{"name": "starlark:units"}], "weighers": [{"name": "starlark:units", "factor": 2}]}`)
	if got := p.Scriptlets(); fmt.Sprint(got) != "[units]" {
		t.Errorf("scriptlets %v", got)
	}
	r, err := p.Rank(context.Background(), &scheduler.Request{Name: "keep2"}, threeCands())
	if err != nil {
		t.Fatal(err)
	}
	last := r.Rejections[len(r.Rejections)-1]
	if roots(r) != "node2,uuid-1" || last.Unit != "starlark:units" || last.Reasons["too full"] != 1 || r.Ranked[0].Weights()["starlark:units"] != 2 {
		t.Errorf("ranked %s, rejections %+v, weights %v", roots(r), r.Rejections, r.Ranked[0].Weights())
	}
	r, _ = p.Rank(context.Background(), &scheduler.Request{}, threeCands())
	if roots(r) != "uuid-1" || r.Rejections[len(r.Rejections)-1].Reasons["removed by starlark:units"] != 1 {
		t.Errorf("ranked %s, rejections %+v", roots(r), r.Rejections)
	}

	// Scriptlets are resolved at every Rank: a change shows at once.
	res.mu.Lock()
	res.named["units"] = compile(t, "def filter(request, candidate):\n    return True\n")
	res.mu.Unlock()
	if r, err := build(`{"filters": [{"name": "starlark:units"}]}`).Rank(context.Background(), &scheduler.Request{}, threeCands()); err != nil || len(r.Ranked) != 3 {
		t.Errorf("after change: %v %v", err, r)
	}
	// The weigher is gone from the new program; a missing scriptlet fails.
	var pe *scheduler.PluginError
	if _, err := p.Rank(context.Background(), &scheduler.Request{}, threeCands()); !errors.As(err, &pe) || !strings.Contains(err.Error(), "does not define weigh") {
		t.Errorf("no weigh: %v", err)
	}
	if _, err := build(`{"filters": [{"name": "starlark:gone"}]}`).Rank(context.Background(), &scheduler.Request{}, threeCands()); !errors.As(err, &pe) {
		t.Errorf("missing: %v", err)
	}
	if _, err := build(`{"scriptlet": "gone"}`).Rank(context.Background(), &scheduler.Request{}, threeCands()); !errors.As(err, &pe) {
		t.Errorf("missing policy scriptlet: %v", err)
	}
	// A bad return value refuses, naming the scriptlet.
	res.named["bad"] = compile(t, "def weigh(request, candidate):\n    return \"high\"\n")
	var se *RunError
	refusing := func(cfg string) *scheduler.Policy {
		pc, err := scheduler.ParsePolicyConfig([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		p, err := scheduler.NewPolicy(pc, nil, NewRuntime(res, Limits{OnError: OnErrorRefuse}))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := refusing(`{"weighers": [{"name": "starlark:bad"}]}`).Rank(context.Background(), &scheduler.Request{}, threeCands()); !errors.As(err, &se) ||
		!strings.Contains(err.Error(), "weigh returned string; want a number") {
		t.Errorf("bad weigh: %v", err)
	}
	// Under on_error ignore it weighs nothing, and the log says so once.
	r, err = buildIgnoring(`{"weighers": [{"name": "starlark:bad", "factor": 5}, {"name": "spread"}]}`).Rank(context.Background(), &scheduler.Request{}, threeCands())
	if err != nil || len(r.Log) != 1 || !strings.Contains(r.Log[0].Message, "starlark:bad failed and was ignored (it weighs nothing in this claim)") ||
		r.Ranked[0].Weights()["starlark:bad"] != 0 {
		t.Errorf("bad weigh ignored: %v %+v", err, r)
	}
}

func TestNamedAndDefaultScriptlet(t *testing.T) {
	res := &scripts{def: compile(t, "def instance_placement(request, candidate_members):\n    set_target(\"node3\")\n"),
		named: map[string]*Program{"last2": compile(t, "def instance_placement(request, candidate_members):\n    set_target(\"node2\")\n")}}
	for _, tt := range []struct{ cfg, first, name string }{{`{}`, "node3", DefaultName}, {`{"scriptlet": "last2"}`, "node2", "last2"}} {
		pc, _ := scheduler.ParsePolicyConfig([]byte(tt.cfg))
		p, err := scheduler.NewPolicy(pc, nil, NewRuntime(res, Limits{}))
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Rank(context.Background(), &scheduler.Request{}, threeCands())
		if err != nil || r.Target != tt.first || r.Scriptlet != tt.name {
			t.Errorf("%s: %v %+v", tt.cfg, err, r)
		}
	}
	// Without a default, no scriptlet runs, and keys are not needed.
	p, _ := scheduler.NewPolicy(scheduler.PolicyConfig{}, nil, NewRuntime(res, Limits{}))
	if !p.Needs().Keys {
		t.Error("a default scriptlet reads keys")
	}
	res.def = nil
	if r, err := p.Rank(context.Background(), &scheduler.Request{}, threeCands()); err != nil || r.Scriptlet != "" || r.Chosen || p.Needs().Keys {
		t.Errorf("no default: %v %+v %+v", err, r, p.Needs())
	}
}

// TestMappings checks the read-only mappings members use behave like
// frozen dicts for reading.
func TestMappings(t *testing.T) {
	src := `
def instance_placement(request, candidate_members):
    m = candidate_members[1]
    log_info("VCPU" in m.usage, "DISK_GB" in m.usage, len(m.inventories), [k for k in m.usage], m.usage.get("X", -1))
    log_info(m.usage.items(), m.usage.keys(), m.usage.values(), m.inventories["VCPU"].free, m.usage)
    log_info(type(m), m.allocations, hasattr(m, "rank"), getattr(m, "nope", "none"))
`
	r, err := rankWith(t, `{}`, src, Limits{}, &scheduler.Request{}, threeCands())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`True False 1 ["VCPU"] -1`,
		`[("VCPU", 5)] ["VCPU"] [5] 5 {"VCPU": 5}`,
		`candidate_member {"node2": {"VCPU": 1}} True none`,
	}
	for i, l := range r.Log {
		if i >= len(want) || l.Message != want[i] {
			t.Errorf("line %d: %q, want %q", i, l.Message, want[min(i, len(want)-1)])
		}
	}
	if len(r.Log) != len(want) {
		t.Errorf("log %v", r.Log)
	}
}

// TestDocExample runs the fuller example of docs/scheduling.md.
func TestDocExample(t *testing.T) {
	src := `
def instance_placement(request, candidate_members):
    if request.project != "batch":
        return None
    for m in candidate_members:            # best ranked first
        vcpu = m.inventories["VCPU"]
        if (vcpu.used + request.resources.get("VCPU", 0)) * 2 <= vcpu.capacity:
            log_info("batch goes to", m.name, "score", m.score)
            set_target(m.name)
            return None
    return "no half-empty host for batch"
`
	cfg := `{"weighers": [{"name": "pack"}]}` // node3 (8 of 10 used) first, then node2 (5), node1 (0)
	r, err := rankWith(t, cfg, src, Limits{}, &scheduler.Request{ProjectID: "batch", Resources: map[string]int64{"VCPU": 1}}, threeCands())
	if err != nil || r.Target != "uuid-1" || roots(r) != "uuid-1,node3,node2" || len(r.Log) != 1 || r.Log[0].Message != "batch goes to node1 score 0.0" {
		t.Fatalf("batch: %v %+v", err, r)
	}
	r, err = rankWith(t, cfg, src, Limits{}, &scheduler.Request{ProjectID: "web"}, threeCands())
	if err != nil || r.Chosen || roots(r) != "node3,node2,uuid-1" {
		t.Fatalf("web: %v %+v", err, r)
	}
	full := []*scheduler.Candidate{cand(0, "a", 10, 6, 1), cand(1, "b", 10, 9, 1)}
	if _, err := rankWith(t, cfg, src, Limits{}, &scheduler.Request{ProjectID: "batch", Resources: map[string]int64{"VCPU": 1}}, full); err == nil ||
		err.Error() != "Failed instance placement scriptlet: no half-empty host for batch" {
		t.Fatalf("full: %v", err)
	}
}

// TestConcurrentRanks shares one policy, its scriptlets and its
// candidates between goroutines (run with -race).
func TestConcurrentRanks(t *testing.T) {
	src := `
def filter(request, candidate):
    return candidate.usage["VCPU"] < 8
def weigh(request, candidate):
    return candidate.inventories["VCPU"].free
def instance_placement(request, candidate_members):
    log_info(request.name, len(candidate_members))
    set_target(candidate_members[-1].uuid)
`
	prog := compile(t, src)
	pc, _ := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "starlark:s"}, {"name": "anti_affinity"}],
		"weighers": [{"name": "starlark:s"}, {"name": "affinity_keys"}], "scriptlet": "s"}`))
	p, err := scheduler.NewPolicy(pc, nil, NewRuntime(Static{Named: map[string]*Program{"s": prog}}, Limits{}))
	if err != nil {
		t.Fatal(err)
	}
	cands := threeCands()
	data := fixData()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				req := &scheduler.Request{Name: fmt.Sprintf("vm-%d-%d", g, i), Data: data, Properties: map[string]any{"group": "g"},
					Keys: []scheduler.KeyRequest{{Name: "zone", Value: 0.5, Weight: 1}}}
				r, err := p.Rank(context.Background(), req, cands)
				if err == nil && (len(r.Ranked) != 2 || r.Target != "node2" || len(r.Log) != 1 || r.Log[0].Message != req.Name+" 2") {
					err = fmt.Errorf("ranking %s target %s log %v", roots(r), r.Target, r.Log)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
