package scriptlet

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/berthd/berth/scheduler"
)

// BenchmarkRank is scheduler's BenchmarkRank (1,000 candidates, a
// policy of five units: capacity, forbidden_traits, anti_affinity,
// spread by free RAM, affinity_keys) plus an instance_placement
// scriptlet that looks at every candidate member, and then a Starlark
// filter too. It reports the median wall time per Rank (the selection's
// cost in a claim) as p50-ms, and the CPU time per Rank (cpu-ms/op, GC
// included), which a busy machine does not inflate.
func BenchmarkRank(b *testing.B) {
	cands := benchCands(1000)
	data := &fakeData{groups: map[string]map[string]int{"group=web": {"rp00001": 1, "rp00002": 1}}}
	req := &scheduler.Request{ConsumerUUID: "c", Name: "web-3", Data: data, Properties: map[string]any{"group": "web"},
		Resources: map[string]int64{"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20},
		Keys:      []scheduler.KeyRequest{{Name: "zone", Value: 0.5, Weight: 1, System: true}}}
	policy := `{"filters": [{"name": "capacity"}, {"name": "forbidden_traits", "params": {"traits": ["CUSTOM_OLD"]}},
		{"name": "anti_affinity"}],
		"weighers": [{"name": "spread", "params": {"class": "MEMORY_MB"}}, {"name": "affinity_keys", "params": {"seed": 1}}]}`
	script := `
def instance_placement(request, candidate_members):
    if request.name == "foo":
        return "Invalid name"
    best = None
    for m in candidate_members:
        if m.usage["VCPU"] + request.resources["VCPU"] > m.inventories["VCPU"].capacity * 9 // 10:
            continue
        if best == None or m.keys["zone"] > best.keys["zone"]:
            best = m
    if best != None:
        log_info("chose", best.name)
        set_target(best.name)
`
	starFilter := "def filter(request, candidate):\n    return candidate.usage[\"VCPU\"] < 58\n"
	pc, err := scheduler.ParsePolicyConfig([]byte(policy))
	if err != nil {
		b.Fatal(err)
	}
	res := Static{Named: map[string]*Program{}}
	for name, src := range map[string]string{"placement": script, "filter": starFilter} {
		if res.Named[name], err = Compile(name, []byte(src)); err != nil {
			b.Fatal(err)
		}
	}
	withFilter := pc
	withFilter.Filters = append(slices.Clone(pc.Filters), scheduler.PluginConfig{Name: "starlark:filter"})
	for _, bc := range []struct {
		name      string
		cfg       scheduler.PolicyConfig
		scriptlet string
	}{
		{"5units+scriptlet", pc, "placement"},
		{"5units+scriptlet+starlark_filter", withFilter, "placement"},
	} {
		cfg := bc.cfg
		cfg.Scriptlet = bc.scriptlet
		p, err := scheduler.NewPolicy(cfg, nil, NewRuntime(res, Limits{}))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			var times []time.Duration
			cpu0 := cpuTime()
			for b.Loop() {
				start := time.Now()
				r, err := p.Rank(context.Background(), req, cands)
				times = append(times, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Ranked) == 0 || !r.Chosen {
					b.Fatalf("ranked %d, chosen %v", len(r.Ranked), r.Chosen)
				}
			}
			cpu := cpuTime() - cpu0
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(cpu)/float64(len(times))/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkRankClaimScriptlet is BenchmarkRankClaim with a default
// scriptlet that reads the request, the instance resources and the
// members: in Berth's own object model, in LXD's, and in LXD's with each
// member's status (one CloudData.States call per Rank; here answered in
// memory). docs/performance.md, "Scriptlets in LXD's object model".
func BenchmarkRankClaimScriptlet(b *testing.B) {
	cands := benchCands(100)
	req := &scheduler.Request{ConsumerUUID: "c", Reason: "new", Resources: map[string]int64{"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20},
		Data: &fakeData{}}
	for _, bc := range []struct{ name, script string }{
		{"berth", `
def instance_placement(request, candidate_members):
    if request.reason != "new":
        return "only new instances"
    want = get_instance_resources()["VCPU"]
    for m in candidate_members:
        if m.inventories["VCPU"].free >= want + 64 and m.name != "":
            set_target(m.name)
            return None
`},
		{"lxd", `
def instance_placement(request, candidate_members):
    if request.reason != "new" or request.type != "container":
        return "only new containers"
    want = get_instance_resources().cpu_cores
    for m in candidate_members:
        if m["server_name"] != "" and m.inventories["VCPU"].free >= want + 64:
            set_target(m.server_name)
            return
`},
		{"lxd_status", `
def instance_placement(request, candidate_members):
    if request.reason != "new" or request.type != "container":
        return "only new containers"
    want = get_instance_resources().cpu_cores
    for m in candidate_members:
        if m["status"] == "Online" and m.inventories["VCPU"].free >= want + 64:
            set_target(m.server_name)
            return
`},
	} {
		prog, err := Compile(bc.name, []byte(bc.script))
		if err != nil {
			b.Fatal(err)
		}
		p, err := scheduler.NewPolicy(scheduler.DefaultPolicyConfig(), nil, NewRuntime(Static{Default: prog}, Limits{}))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0, n := cpuTime(), 0
			for b.Loop() {
				if _, err := p.Rank(context.Background(), req, cands); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/1e3, "cpu-us/op")
		})
	}
}
