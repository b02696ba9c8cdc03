package scheduler

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
)

// benchCands builds n single-root candidates with VCPU, MEMORY_MB and
// DISK_GB, consumer counts, a placement key and a trait on every tenth.
func benchCands(n int) []*Candidate {
	cands := make([]*Candidate, n)
	for i := range cands {
		r := fmt.Sprintf("rp%05d", i)
		p := &ProviderView{Provider: engine.Provider{UUID: r, Name: r, RootUUID: r}, Consumers: i % 17,
			Keys: []PlacementKey{{Name: "zone", Value: float64(i%10) / 10}},
			Resources: ResourcesOf(map[string]engine.InventoryUsage{
				"VCPU":      {Capacity: 64, Used: int64(i % 60), Inventory: engine.Inventory{Total: 32}},
				"MEMORY_MB": {Capacity: 262144, Used: int64(i%200) * 1024, Inventory: engine.Inventory{Total: 262144}},
				"DISK_GB":   {Capacity: 2000, Used: int64(i % 1500), Inventory: engine.Inventory{Total: 2000}},
			})}
		if i%10 == 0 {
			p.Traits = []string{"CUSTOM_OLD"}
		}
		cands[i] = &Candidate{Index: i, Roots: []string{r}, Providers: map[string]*ProviderView{r: p},
			Allocations: []engine.Allocation{{ProviderUUID: r, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 2}, {Class: "MEMORY_MB", Amount: 4096}, {Class: "DISK_GB", Amount: 20}}}}}
	}
	return cands
}

// cpuTime is the CPU time the process used so far (user and system, all
// threads): on a shared machine it measures the work where wall time
// measures the neighbours too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRank ranks 1,000 candidates with a policy of five units
// (capacity, forbidden_traits, anti_affinity, spread by free RAM,
// affinity_keys). It reports the median wall time per Rank (the
// selection's cost in a claim) as p50-ms, and the CPU time per Rank
// (cpu-ms/op, GC included), which a busy machine does not inflate.
// scheduler/scriptlet's BenchmarkRank adds scriptlets to it.
func BenchmarkRank(b *testing.B) {
	cands := benchCands(1000)
	data := &fakeData{groups: map[string]map[string]int{"group=web": {"rp00001": 1, "rp00002": 1}}}
	req := &Request{ConsumerUUID: "c", Name: "web-3", Data: data, Properties: map[string]any{"group": "web"},
		Resources: map[string]int64{"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20},
		Keys:      []KeyRequest{{Name: "zone", Value: 0.5, Weight: 1, System: true}}}
	policy := `{"filters": [{"name": "capacity"}, {"name": "forbidden_traits", "params": {"traits": ["CUSTOM_OLD"]}},
		{"name": "anti_affinity"}],
		"weighers": [{"name": "spread", "params": {"class": "MEMORY_MB"}}, {"name": "affinity_keys", "params": {"seed": 1}}]}`
	pc, err := ParsePolicyConfig([]byte(policy))
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPolicy(pc, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("5units", func(b *testing.B) {
		var times []time.Duration
		cpu0 := cpuTime()
		for b.Loop() {
			start := time.Now()
			r, err := p.Rank(context.Background(), req, cands)
			times = append(times, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if len(r.Ranked) == 0 {
				b.Fatalf("ranked %d", len(r.Ranked))
			}
		}
		cpu := cpuTime() - cpu0
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2])/1e6, "p50-ms")
		b.ReportMetric(float64(cpu)/float64(len(times))/1e6, "cpu-ms/op")
	})
}

// BenchmarkRankClaim ranks what a claim ranks: a hundred candidates, the
// default policy (capacity, spread).
func BenchmarkRankClaim(b *testing.B) {
	cands := benchCands(100)
	req := &Request{ConsumerUUID: "c", Resources: map[string]int64{"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20}}
	p, err := NewPolicy(DefaultPolicyConfig(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Rank(context.Background(), req, cands); err != nil {
			b.Fatal(err)
		}
	}
}
