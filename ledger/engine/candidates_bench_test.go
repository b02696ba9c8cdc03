package engine

import (
	"context"
	"fmt"
	"testing"
)

// benchComputes builds the benchmark's flat cloud: n compute nodes with
// VCPU 64 (ratio 4), MEMORY_MB 262144 (4096 reserved) and DISK_GB 4000
// (100 reserved); one node in ten has CUSTOM_BENCH; nodes are spread over
// ten aggregates.
func benchComputes(n int) *Snapshot {
	b := newSnapBuilder()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%08d-0000-0000-0000-000000000000", i)
		b.rp(name, "").inv(name, "VCPU", 64, 0, 1, 64, 1, 400).
			inv(name, "MEMORY_MB", 262144, 4096).inv(name, "DISK_GB", 4000, 100).
			aggs(name, fmt.Sprintf("agg%d", i%10))
		if i%10 == 0 {
			b.traits(name, "CUSTOM_BENCH")
		}
	}
	return b.build()
}

// benchPerfload builds Placement's perfload nested shape: n trees of a
// compute node with DISK_GB, two NUMA children with VCPU and MEMORY_MB,
// and an FPGA and a VGPU provider under each NUMA node.
func benchPerfload(n int) *Snapshot {
	b := newSnapBuilder()
	for i := 0; i < n; i++ {
		cn := fmt.Sprintf("cn%d", i)
		b.rp(cn, "").inv(cn, "DISK_GB", 4000)
		for k := 0; k < 2; k++ {
			numa := fmt.Sprintf("%s_numa%d", cn, k)
			b.rp(numa, cn).inv(numa, "VCPU", 32).inv(numa, "MEMORY_MB", 131072).traits(numa, "HW_NUMA_ROOT")
			b.rp(numa+"_fpga", numa).inv(numa+"_fpga", "FPGA", 2)
			b.rp(numa+"_vgpu", numa).inv(numa+"_vgpu", "VGPU", 8)
		}
	}
	return b.build()
}

func benchRun(b *testing.B, s *Snapshot, p CandidatesParams, wantAtLeast int) {
	b.Helper()
	b.ReportAllocs()
	ctx := context.Background()
	var c *Candidates
	var err error
	for b.Loop() {
		if c, err = s.Candidates(ctx, &p); err != nil {
			b.Fatal(err)
		}
	}
	if c.Len() < wantAtLeast {
		b.Fatalf("got %d candidates, want at least %d", c.Len(), wantAtLeast)
	}
	b.ReportMetric(float64(c.Len()), "candidates")
}

// benchSizes are the flat clouds the benchmarks run on, in providers.
var benchSizes = []int{1000, 10000, 100000}

// benchCloud builds each size once for all the benchmarks of a run.
var benchCloud = map[int]*Snapshot{}

func cloud(n int) *Snapshot {
	if benchCloud[n] == nil {
		benchCloud[n] = benchComputes(n)
	}
	return benchCloud[n]
}

func BenchmarkCandidates(b *testing.B) {
	for _, n := range benchSizes {
		s := cloud(n)
		flavor := func() []RequestGroup {
			return []RequestGroup{{Resources: res("VCPU:2,MEMORY_MB:4096,DISK_GB:20")}}
		}
		b.Run(fmt.Sprintf("N=%d/unlimited", n), func(b *testing.B) {
			benchRun(b, s, CandidatesParams{NestedAware: true, Groups: flavor()}, min(n, DefaultMaxCandidates))
		})
		b.Run(fmt.Sprintf("N=%d/limit=1000", n), func(b *testing.B) {
			benchRun(b, s, CandidatesParams{NestedAware: true, Limit: 1000, Groups: flavor()}, 1000)
		})
		b.Run(fmt.Sprintf("N=%d/sample=100", n), func(b *testing.B) {
			// What a claim asks (claims.Config.ClaimCandidates).
			benchRun(b, s, CandidatesParams{NestedAware: true, Max: 100, Sample: true, Groups: flavor()}, 100)
		})
		b.Run(fmt.Sprintf("N=%d/trait", n), func(b *testing.B) {
			g := []RequestGroup{{Resources: res("VCPU:2,MEMORY_MB:4096"), RequiredTraits: [][]string{{"CUSTOM_BENCH"}}}}
			benchRun(b, s, CandidatesParams{NestedAware: true, Groups: g}, n/10)
		})
		b.Run(fmt.Sprintf("N=%d/member_of", n), func(b *testing.B) {
			g := []RequestGroup{{Resources: res("VCPU:2"), MemberOf: [][]string{{"agg3"}}}}
			benchRun(b, s, CandidatesParams{NestedAware: true, Groups: g}, n/10)
		})
	}
	b.Run("perfload=1000x7/same_subtree", func(b *testing.B) {
		s := benchPerfload(1000)
		g := []RequestGroup{
			{Resources: res("DISK_GB:10")},
			{Suffix: "_COMPUTE", Resources: res("VCPU:2,MEMORY_MB:4096")},
			{Suffix: "_ACCEL", Resources: res("FPGA:1")},
		}
		benchRun(b, s, CandidatesParams{NestedAware: true, Groups: g, SameSubtrees: [][]string{{"_COMPUTE", "_ACCEL"}}}, 2000)
	})
	b.Run("wide=21x1/groups=8", func(b *testing.B) {
		benchRun(b, wideTree(21), CandidatesParams{NestedAware: true, Groups: wideGroups(8)}, DefaultMaxCandidates)
	})
	b.Run("wide=21x1/groups=8/isolate", func(b *testing.B) {
		benchRun(b, wideTree(21), CandidatesParams{NestedAware: true, Isolate: true, Groups: wideGroups(8)}, DefaultMaxCandidates)
	})
}

// BenchmarkClaimInput is what a claim asks of the engine before it ranks
// (claims.selectCandidates): a sample of 100 candidates drawn across the
// roots, as provider versions. "versions" is the search alone;
// "records" also reads every provider's record, as claims' views of the
// providers do; "claim" asks exactly as claims.selectCandidates does
// (requests deferred, evacuated roots avoided) and builds one request,
// as a direct ranking that keeps one candidate does.
func BenchmarkClaimInput(b *testing.B) {
	flavor := []RequestGroup{{Resources: res("VCPU:2,MEMORY_MB:4096,DISK_GB:20")}}
	for _, n := range benchSizes {
		s := cloud(n)
		for _, mode := range []string{"versions", "records", "claim"} {
			p := CandidatesParams{NestedAware: true, Max: 100, Sample: true, VersionsOnly: true, Groups: flavor}
			if mode == "claim" {
				p.DeferRequests, p.AvoidEvacuated = true, true
			}
			b.Run(fmt.Sprintf("N=%d/%s", n, mode), func(b *testing.B) {
				b.ReportAllocs()
				ctx := context.Background()
				var c *Candidates
				var err error
				invs := 0
				for b.Loop() {
					if c, err = s.Candidates(ctx, &p); err != nil {
						b.Fatal(err)
					}
					switch mode {
					case "records":
						for i := range c.Versions {
							rec, _, _ := c.Record(i)
							invs += len(rec.Inventories)
						}
					case "claim":
						c.BuildRequests([]int{0})
						invs += len(c.Request(0).Allocations[0].Resources)
					}
				}
				if c.Len() != 100 || len(c.Versions) != 100 || mode != "versions" && invs == 0 {
					b.Fatalf("%d candidates, %d versions, want 100 of each; %d inventories read", c.Len(), len(c.Versions), invs)
				}
				b.ReportMetric(float64(c.Len()), "candidates")
			})
		}
	}
}

// BenchmarkAllocationResources reads what every candidate of a claim's
// sample takes, its request not built, as a ranking does
// (scheduler.recordTakes): a hundred candidates on a nested cloud, where
// each candidate's amounts are summed from the search's slots.
func BenchmarkAllocationResources(b *testing.B) {
	s := benchPerfload(1000)
	p := CandidatesParams{NestedAware: true, Max: 100, Sample: true, VersionsOnly: true,
		DeferRequests: true, AvoidEvacuated: true, Groups: []RequestGroup{{Resources: res("VCPU:2,MEMORY_MB:4096,DISK_GB:20")}}}
	c, err := s.Candidates(context.Background(), &p)
	if err != nil {
		b.Fatal(err)
	}
	if c.Len() != 100 {
		b.Fatalf("%d candidates, want 100", c.Len())
	}
	b.ReportAllocs()
	var buf [8]ResourceAmount
	total := 0
	for b.Loop() {
		for i := range c.Len() {
			for j := range c.AllocationCount(i) {
				total += len(c.AllocationResources(i, j, buf[:0]))
			}
		}
	}
	if total == 0 {
		b.Fatal("no resources read")
	}
}
