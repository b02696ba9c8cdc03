package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
)

// sharedStorage mirrors Placement's SharedStorageFixture: cn1 and cn2 with
// two NUMA children each (each with a PF child), and sharing providers ss
// and ss2, all in one aggregate.
func sharedStorage() *Snapshot {
	b := newSnapBuilder()
	for _, n := range []string{"cn1", "cn2", "ss", "ss2"} {
		b.rp(n, "").aggs(n, "agg")
	}
	for _, cn := range []string{"1", "2"} {
		for _, k := range []string{"1", "2"} {
			b.rp("numa"+cn+"_"+k, "cn"+cn).rp("pf"+cn+"_"+k, "numa"+cn+"_"+k).
				inv("pf"+cn+"_"+k, "SRIOV_NET_VF", 8)
		}
		b.inv("cn"+cn, "VCPU", 24, 0, 1, 24, 1, 1600).inv("cn"+cn, "MEMORY_MB", 128*1024, 0, 1, 128*1024, 1, 150)
	}
	b.traits("cn1", "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
	b.inv("cn2", "DISK_GB", 2000, 100)
	for _, ss := range []string{"ss", "ss2"} {
		b.inv(ss, "DISK_GB", 2000, 100).traits(ss, "MISC_SHARES_VIA_AGGREGATE")
	}
	return b.build()
}

// granular mirrors Placement's GranularFixture.
func granular() *Snapshot {
	b := newSnapBuilder()
	b.rp("cn_left", "").aggs("cn_left", "aggA").
		inv("cn_left", "VCPU", 8).inv("cn_left", "MEMORY_MB", 4096).inv("cn_left", "DISK_GB", 500).
		inv("cn_left", "VGPU", 8).inv("cn_left", "SRIOV_NET_VF", 8).inv("cn_left", "CUSTOM_NET_MBPS", 4000).
		traits("cn_left", "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC", "CUSTOM_FOO")
	b.rp("cn_middle", "").aggs("cn_middle", "aggA", "aggB").
		inv("cn_middle", "VCPU", 8).inv("cn_middle", "MEMORY_MB", 4096).
		inv("cn_middle", "SRIOV_NET_VF", 8).inv("cn_middle", "CUSTOM_NET_MBPS", 4000).
		traits("cn_middle", "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS")
	b.rp("cn_right", "").aggs("cn_right", "aggB", "aggC").
		inv("cn_right", "VCPU", 8).inv("cn_right", "MEMORY_MB", 4096).inv("cn_right", "DISK_GB", 500).
		inv("cn_right", "VGPU", 8, 0, 1, 2).
		traits("cn_right", "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")
	b.rp("shr_disk_1", "").aggs("shr_disk_1", "aggA").inv("shr_disk_1", "DISK_GB", 1000).
		traits("shr_disk_1", "MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD")
	b.rp("shr_disk_2", "").aggs("shr_disk_2", "aggA", "aggB").inv("shr_disk_2", "DISK_GB", 1000).
		traits("shr_disk_2", "MISC_SHARES_VIA_AGGREGATE")
	b.rp("shr_net", "").aggs("shr_net", "aggC").inv("shr_net", "SRIOV_NET_VF", 16).
		inv("shr_net", "CUSTOM_NET_MBPS", 40000).traits("shr_net", "MISC_SHARES_VIA_AGGREGATE")
	return b.build()
}

// numaNetwork mirrors Placement's NUMANetworkFixture.
func numaNetwork() *Snapshot {
	b := newSnapBuilder()
	b.rp("ss1", "").aggs("ss1", "aggA").traits("ss1", "MISC_SHARES_VIA_AGGREGATE").inv("ss1", "DISK_GB", 2000)
	b.rp("cn1", "").aggs("cn1", "aggA").traits("cn1", "COMPUTE_VOLUME_MULTI_ATTACH")
	b.rp("numa0", "cn1").traits("numa0", "HW_NUMA_ROOT").inv("numa0", "VCPU", 4)
	b.rp("numa1", "cn1").traits("numa1", "HW_NUMA_ROOT", "CUSTOM_FOO").inv("numa1", "VCPU", 4)
	b.inv("numa0", "MEMORY_MB", 2048, 0, 512, 2048, 256).inv("numa1", "MEMORY_MB", 2048, 0, 256, 1024)
	b.used("numa0", "VCPU", 2)
	b.rp("fpga0", "numa0").inv("fpga0", "FPGA", 1).rp("pgpu0", "numa0").inv("pgpu0", "VGPU", 8)
	b.rp("fpga1_0", "numa1").inv("fpga1_0", "FPGA", 1).rp("fpga1_1", "numa1").inv("fpga1_1", "FPGA", 1)
	b.rp("sriov_agent", "cn1").traits("sriov_agent", "CUSTOM_VNIC_TYPE_DIRECT")
	b.rp("esn1", "sriov_agent").traits("esn1", "CUSTOM_PHYSNET1").inv("esn1", "NET_BW_EGR_KILOBIT_PER_SEC", 10000)
	b.rp("esn2", "sriov_agent").traits("esn2", "CUSTOM_PHYSNET2").inv("esn2", "NET_BW_EGR_KILOBIT_PER_SEC", 20000)
	b.rp("ovs_agent", "cn1").traits("ovs_agent", "CUSTOM_VNIC_TYPE_NORMAL")
	b.rp("br_int", "ovs_agent").traits("br_int", "CUSTOM_PHYSNET0").inv("br_int", "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
	b.rp("cn2", "").aggs("cn2", "aggA").inv("cn2", "VCPU", 8).used("cn2", "VCPU", 3).
		inv("cn2", "MEMORY_MB", 2048, 0, 1024, 2048, 128).inv("cn2", "DISK_GB", 1000).traits("cn2", "CUSTOM_FOO")
	for i := 1; i <= 3; i++ {
		b.rp(fmt.Sprintf("nic%d", i), "cn2").traits(fmt.Sprintf("nic%d", i), "CUSTOM_HW_NIC_ROOT")
	}
	for i := 1; i <= 2; i++ {
		n := fmt.Sprintf("pf1_%d", i)
		b.rp(n, "nic1").traits(n, fmt.Sprintf("CUSTOM_PHYSNET%d", i)).inv(n, "CUSTOM_VF", 4)
	}
	for i := 0; i < 4; i++ {
		n := fmt.Sprintf("pf2_%d", i+1)
		b.rp(n, "nic2").traits(n, fmt.Sprintf("CUSTOM_PHYSNET%d", i%2+1)).inv(n, "CUSTOM_VF", 2)
	}
	b.rp("pf3_1", "nic3").traits("pf3_1", "CUSTOM_PHYSNET1").inv("pf3_1", "CUSTOM_VF", 8)
	return b.build()
}

func TestCandidates(t *testing.T) {
	g := reqGroup
	withReq := func(rg RequestGroup, req ...[]string) RequestGroup { rg.RequiredTraits = req; return rg }
	withForbid := func(rg RequestGroup, f ...string) RequestGroup { rg.ForbiddenTraits = f; return rg }
	tests := []struct {
		name      string
		snap      *Snapshot
		params    CandidatesParams
		want      []string // nil: only count
		count     int
		summaries int
	}{
		{
			name: "sharing", snap: sharedStorage(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{g("", "VCPU:1,MEMORY_MB:1024,DISK_GB:100")}},
			want: []string{
				"cn1:MEMORY_MB=1024+VCPU=1 ss2:DISK_GB=100",
				"cn1:MEMORY_MB=1024+VCPU=1 ss:DISK_GB=100",
				"cn2:DISK_GB=100+MEMORY_MB=1024+VCPU=1",
				"cn2:MEMORY_MB=1024+VCPU=1 ss2:DISK_GB=100",
				"cn2:MEMORY_MB=1024+VCPU=1 ss:DISK_GB=100",
			},
			summaries: 12,
		},
		{
			name: "sharing below 1.29 summarises used providers only", snap: sharedStorage(),
			params:    CandidatesParams{Groups: []RequestGroup{g("", "VCPU:1,MEMORY_MB:1024,DISK_GB:100")}},
			count:     5,
			summaries: 4,
		},
		{
			name: "nested", snap: sharedStorage(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{g("", "VCPU:1,SRIOV_NET_VF:4")}},
			want: []string{
				"cn1:VCPU=1 pf1_1:SRIOV_NET_VF=4", "cn1:VCPU=1 pf1_2:SRIOV_NET_VF=4",
				"cn2:VCPU=1 pf2_1:SRIOV_NET_VF=4", "cn2:VCPU=1 pf2_2:SRIOV_NET_VF=4",
			},
			summaries: 10,
		},
		{
			name: "nested below 1.29", snap: sharedStorage(),
			params: CandidatesParams{Groups: []RequestGroup{g("", "VCPU:1,SRIOV_NET_VF:4")}},
			want:   nil, count: 0,
		},
		{
			name: "shared and nested below 1.29", snap: sharedStorage(),
			params: CandidatesParams{Groups: []RequestGroup{g("", "DISK_GB:10,SRIOV_NET_VF:4")}},
			count:  8, summaries: 6,
		},
		{
			name: "limit keeps whole trees in summaries", snap: sharedStorage(),
			params: CandidatesParams{NestedAware: true, Limit: 1, Groups: []RequestGroup{g("", "VCPU:1,SRIOV_NET_VF:4")}},
			count:  1, summaries: 5,
		},
		{
			name: "disk sharing isolated", snap: granular(),
			params: CandidatesParams{NestedAware: true, Isolate: true, Groups: []RequestGroup{g("1", "VCPU:1,MEMORY_MB:1024"), g("2", "DISK_GB:100")}},
			count:  5, summaries: 5,
		},
		{
			name: "disk sharing not isolated", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{g("1", "VCPU:1,MEMORY_MB:1024"), g("2", "DISK_GB:100")}},
			count:  7, summaries: 5,
		},
		{
			name: "disk alone granular", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{g("1", "DISK_GB:800")}},
			want:   []string{"shr_disk_1:DISK_GB=800", "shr_disk_2:DISK_GB=800"}, summaries: 2,
		},
		{
			name: "disk alone unsuffixed", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{g("", "DISK_GB:800")}},
			want:   []string{"shr_disk_1:DISK_GB=800", "shr_disk_2:DISK_GB=800"}, summaries: 2,
		},
		{
			name: "any-of and forbidden", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{withForbid(withReq(g("", "VCPU:1,DISK_GB:1"),
				[]string{"HW_GPU_API_DXVA", "HW_NIC_ACCEL_TLS"}, []string{"HW_CPU_X86_AVX"}), "CUSTOM_FOO")}},
			want: []string{"cn_middle:VCPU=1 shr_disk_1:DISK_GB=1", "cn_middle:VCPU=1 shr_disk_2:DISK_GB=1"},
		},
		{
			name: "multiple any-of collectively", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{withReq(g("", "VCPU:1,DISK_GB:1"),
				[]string{"HW_CPU_X86_MMX", "HW_NIC_ACCEL_TLS"}, []string{"CUSTOM_DISK_SSD", "CUSTOM_FOO"})}},
			want: []string{"cn_middle:VCPU=1 shr_disk_1:DISK_GB=1", "cn_right:DISK_GB=1+VCPU=1", "cn_right:VCPU=1 shr_disk_2:DISK_GB=1"},
		},
		{
			name: "many groups", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{
				g("1", "VCPU:1"), withReq(g("2", "VGPU:1"), []string{"HW_GPU_API_DXVA"}), g("3", "MEMORY_MB:1024"),
				withReq(g("4", "DISK_GB:100"), []string{"CUSTOM_DISK_SSD"}), withForbid(g("5", "DISK_GB:50"), "CUSTOM_DISK_SSD"),
				g("6", "SRIOV_NET_VF:1,CUSTOM_NET_MBPS:1000"), g("7", "SRIOV_NET_VF:2,CUSTOM_NET_MBPS:2000")}},
			want: []string{
				"cn_left:CUSTOM_NET_MBPS=3000+DISK_GB=50+MEMORY_MB=1024+SRIOV_NET_VF=3+VCPU=1+VGPU=1 shr_disk_1:DISK_GB=100",
				"cn_left:CUSTOM_NET_MBPS=3000+MEMORY_MB=1024+SRIOV_NET_VF=3+VCPU=1+VGPU=1 shr_disk_1:DISK_GB=100 shr_disk_2:DISK_GB=50",
				"cn_right:DISK_GB=100+MEMORY_MB=1024+VCPU=1+VGPU=1 shr_disk_2:DISK_GB=50 shr_net:CUSTOM_NET_MBPS=3000+SRIOV_NET_VF=3",
			},
			summaries: 5,
		},
		{
			name: "combined groups exceed capacity", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{
				g("", "VCPU:2,MEMORY_MB:2048,SRIOV_NET_VF:1,CUSTOM_NET_MBPS:2000"), g("1", "SRIOV_NET_VF:1,CUSTOM_NET_MBPS:3000")}},
			want: []string{"cn_right:MEMORY_MB=2048+VCPU=2 shr_net:CUSTOM_NET_MBPS=5000+SRIOV_NET_VF=2"},
		},
		{
			name: "combined groups exceed max_unit", snap: granular(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{g("", "VGPU:1"), g("1", "VGPU:1"), g("2", "VGPU:1")}},
			want:   []string{"cn_left:VGPU=3"},
		},
		{
			name: "root_required", snap: numaNetwork(),
			params: CandidatesParams{NestedAware: true, RootRequired: []string{"COMPUTE_VOLUME_MULTI_ATTACH"},
				Groups: []RequestGroup{g("", "VCPU:1,MEMORY_MB:1024")}},
			count: 4,
		},
		{
			name: "root_forbidden on sharing root does not filter", snap: numaNetwork(),
			params: CandidatesParams{NestedAware: true, RootForbidden: []string{"MISC_SHARES_VIA_AGGREGATE"},
				Groups: []RequestGroup{g("", "VCPU:1,MEMORY_MB:1024,DISK_GB:100")}},
			count: 6,
		},
		{
			name: "unsuffixed required ties to resource providers", snap: numaNetwork(),
			params: CandidatesParams{NestedAware: true, Groups: []RequestGroup{withReq(g("", "VCPU:1,DISK_GB:100"), []string{"CUSTOM_FOO"})}},
			want:   []string{"cn2:DISK_GB=100+VCPU=1", "cn2:VCPU=1 ss1:DISK_GB=100", "numa1:VCPU=1 ss1:DISK_GB=100"},
		},
		{
			name: "mappings isolate", snap: numaNetwork(),
			params: CandidatesParams{NestedAware: true, Isolate: true, Groups: []RequestGroup{
				withReq(g("_NET1", "NET_BW_EGR_KILOBIT_PER_SEC:10"), []string{"CUSTOM_PHYSNET1"}),
				withReq(g("_NET2", "NET_BW_EGR_KILOBIT_PER_SEC:20"), []string{"CUSTOM_PHYSNET2"}),
				g("_COMPUTE", "VCPU:1,MEMORY_MB:1024")}},
			count: 2, summaries: 12,
		},
		{
			name: "same_subtree", snap: numaNetwork(),
			params: CandidatesParams{NestedAware: true, Isolate: true, SameSubtrees: [][]string{{"_COMPUTE", "_ACCEL"}},
				Groups: []RequestGroup{g("_COMPUTE", "VCPU:1"), g("_ACCEL", "FPGA:1")}},
			want: []string{"fpga0:FPGA=1 numa0:VCPU=1", "fpga1_0:FPGA=1 numa1:VCPU=1", "fpga1_1:FPGA=1 numa1:VCPU=1"},
		},
		{
			name: "same_subtree resourceless", snap: numaNetwork(),
			params: CandidatesParams{NestedAware: true, Isolate: true, SameSubtrees: [][]string{{"_NUMA", "_ACCEL"}},
				Groups: []RequestGroup{withReq(g("_NUMA", ""), []string{"HW_NUMA_ROOT"}), g("_ACCEL", "FPGA:1")}},
			want: []string{"fpga0:FPGA=1", "fpga1_0:FPGA=1", "fpga1_1:FPGA=1"},
		},
		{
			name: "resourceless group with only forbidden traits matches nothing", snap: numaNetwork(),
			params: CandidatesParams{NestedAware: true, SameSubtrees: [][]string{{"_N", "_ACCEL"}},
				Groups: []RequestGroup{withForbid(g("_N", ""), "CUSTOM_FOO"), g("_ACCEL", "FPGA:1")}},
			want: nil, count: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCandidates(t, tt.snap, tt.params)
			got := render(c)
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("candidates:\n got %q\nwant %q", got, tt.want)
			}
			if tt.want == nil && len(got) != tt.count {
				t.Errorf("got %d candidates, want %d: %q", len(got), tt.count, got)
			}
			if tt.summaries != 0 && len(c.Summaries) != tt.summaries {
				t.Errorf("got %d summaries, want %d: %q", len(c.Summaries), tt.summaries, summaryNames(c))
			}
		})
	}
}

// wideTree is one root with n one-unit children.
func wideTree(n int) *Snapshot {
	b := newSnapBuilder()
	b.rp("root", "").inv("root", "VCPU", 64)
	for i := 0; i < n; i++ {
		c := fmt.Sprintf("c%02d", i)
		b.rp(c, "root").inv(c, "CUSTOM_ACCEL", 1)
	}
	return b.build()
}

func wideGroups(n int) []RequestGroup {
	gs := []RequestGroup{{Resources: res("VCPU:1")}}
	for i := 0; i < n; i++ {
		gs = append(gs, RequestGroup{Suffix: fmt.Sprint(i + 1), Resources: res("CUSTOM_ACCEL:1")})
	}
	return gs
}

func TestWideTreeIsBounded(t *testing.T) {
	s := wideTree(21)
	c := mustCandidates(t, s, CandidatesParams{NestedAware: true, Groups: wideGroups(8), Max: 1000})
	if len(c.Requests) != 1000 || !c.Truncated {
		t.Fatalf("got %d candidates (truncated %v), want the cap of 1000", len(c.Requests), c.Truncated)
	}
	// Infeasible: more groups than children; the search must give up
	// within its step budget rather than enumerate 21! orderings.
	c = mustCandidates(t, s, CandidatesParams{NestedAware: true, Groups: wideGroups(22), MaxSteps: 200000})
	// (Enumerating them would not end within the test's timeout; the
	// step budget is what stops it, so the answer says it is incomplete.)
	if len(c.Requests) != 0 || !c.Truncated {
		t.Fatalf("got %d candidates (truncated %v), want none, truncated", len(c.Requests), c.Truncated)
	}
}

func TestCandidatesSpreadAcrossRoots(t *testing.T) {
	b := newSnapBuilder()
	for i := 0; i < 10; i++ {
		r := fmt.Sprintf("cn%d", i)
		b.rp(r, "")
		for k := 0; k < 4; k++ {
			c := fmt.Sprintf("%s_%d", r, k)
			b.rp(c, r).inv(c, "VCPU", 4)
		}
	}
	c := mustCandidates(t, b.build(), CandidatesParams{NestedAware: true, Limit: 10, Groups: []RequestGroup{{Resources: res("VCPU:1")}}})
	roots := map[string]bool{}
	for _, ar := range c.Requests {
		roots[ar.Allocations[0].ProviderUUID[:3]] = true
	}
	if len(roots) != 10 {
		t.Fatalf("10 candidates came from %d roots, want 10", len(roots))
	}
}

func TestCandidatesRandomize(t *testing.T) {
	s := benchComputes(200)
	p := CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("VCPU:1")}}}
	ordered := mustCandidates(t, s, p)
	p.Randomize = true
	shuffled := mustCandidates(t, s, p)
	a, b := render(ordered), render(shuffled)
	if !slices.Equal(a, b) {
		t.Fatal("randomized candidates differ from the ordered ones as a set")
	}
	same := true
	for i := range ordered.Requests {
		if ordered.Requests[i].Allocations[0].ProviderUUID != shuffled.Requests[i].Allocations[0].ProviderUUID {
			same = false
		}
	}
	if same {
		t.Fatal("randomized candidates came in the deterministic order")
	}
	// Deterministic order: roots in creation order.
	for i := 1; i < len(ordered.Requests); i++ {
		if ordered.Requests[i].Allocations[0].ProviderUUID < ordered.Requests[i-1].Allocations[0].ProviderUUID {
			t.Fatal("ordered candidates are not in root order")
		}
	}
}

// TestCandidatesRandomizeRecords requires a randomized answer asked with
// VersionsOnly to read each allocation's record from its own provider
// (AllocationRecord follows the shuffle), as a claim's ranking on the
// records does under --randomize-candidates.
func TestCandidatesRandomizeRecords(t *testing.T) {
	s := benchComputes(200)
	p := CandidatesParams{NestedAware: true, Max: 100, VersionsOnly: true, Randomize: true,
		Groups: []RequestGroup{{Resources: res("VCPU:1")}}}
	c := mustCandidates(t, s, p)
	if len(c.Requests) != 100 {
		t.Fatalf("%d candidates, want 100", len(c.Requests))
	}
	for i, ar := range c.Requests {
		if n := c.AllocationCount(i); n != len(ar.Allocations) {
			t.Fatalf("candidate %d: %d allocations indexed, %d in its request", i, n, len(ar.Allocations))
		}
		for j, a := range ar.Allocations {
			if rec := c.AllocationRecord(i, j); rec.UUID != a.ProviderUUID {
				t.Fatalf("candidate %d, allocation %d: record of %s, allocation on %s", i, j, rec.UUID, a.ProviderUUID)
			}
		}
	}
}

// flatMix builds a flat cloud of n compute nodes that differ in what a
// claim checks: usage (some full), traits, aggregates, evacuation.
func flatMix(n int) *Snapshot {
	b := newSnapBuilder()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cn%03d", i)
		b.rp(name, "").inv(name, "VCPU", 8, 0, 1, 8, 1, 200).inv(name, "MEMORY_MB", 8192, 512).
			aggs(name, fmt.Sprintf("agg%d", i%3))
		if i%4 != 1 {
			b.inv(name, "DISK_GB", 100)
		}
		b.used(name, "VCPU", int64(i%17)).used(name, "MEMORY_MB", int64(i%3*1000))
		switch i % 5 {
		case 0:
			b.traits(name, "CUSTOM_A")
		case 1:
			b.traits(name, "CUSTOM_A", "CUSTOM_B")
		case 2:
			b.traits(name, "CUSTOM_C")
		}
	}
	s := b.build()
	changed := map[int64]*ProviderRecord{}
	for i := int32(3); i < int32(n); i += 7 {
		rec := *s.provs.at(i)
		rec.Evacuated = true
		changed[rec.ID] = &rec
	}
	return s.WithProviders(changed, nil, s.names)
}

// TestOneEachAsGenerators requires the search of a flat cloud's
// unsuffixed group, which checks each anchor at once (search.oneEach),
// to find what the generators find: the same candidates in the same
// order, the same completeness, steps and stop, whatever the request's
// traits, aggregates, trees, evacuation, limits and step budget.
func TestOneEachAsGenerators(t *testing.T) {
	s := flatMix(60)
	flavor := res("VCPU:4,MEMORY_MB:1024,DISK_GB:10")
	groups := []RequestGroup{
		{Resources: flavor},
		{Resources: res("MEMORY_MB:2048,VCPU:1")},
		{Resources: res("VCPU:3,VCPU:2")}, // one class twice: the amounts fit together or not at all
		{Resources: res("VCPU:1,MEMORY_MB:3000,MEMORY_MB:3000")},
		{Resources: flavor, RequiredTraits: [][]string{{"CUSTOM_A"}}},
		{Resources: flavor, RequiredTraits: [][]string{{"CUSTOM_B", "CUSTOM_C"}, {"CUSTOM_A", "CUSTOM_C"}}},
		{Resources: flavor, ForbiddenTraits: []string{"CUSTOM_B"}},
		{Resources: flavor, MemberOf: [][]string{{"agg1", "agg2"}}},
		{Resources: flavor, MemberOf: [][]string{{"agg1"}, {"agg1", "agg0"}}},
		{Resources: flavor, ForbiddenAggregates: []string{"agg0"}},
		{Resources: flavor, InTree: "cn004"},
		{Resources: flavor, InTree: "cn005"},
	}
	var params []CandidatesParams
	for _, g := range groups {
		for _, p := range []CandidatesParams{
			{NestedAware: true},
			{NestedAware: false, AvoidEvacuated: true},
			{NestedAware: true, AvoidEvacuated: true, RootRequired: []string{"CUSTOM_A"}, RootForbidden: []string{"CUSTOM_B"}},
			{NestedAware: true, Limit: 7},
			{NestedAware: true, MaxSteps: 40},
			{NestedAware: true, MaxSteps: 2},
		} {
			p.Groups = []RequestGroup{g}
			params = append(params, p)
		}
	}
	ctx := context.Background()
	found := 0
	for _, p := range params {
		name := fmt.Sprintf("%+v", p)
		one, err := s.newSearch(ctx, &p)
		if err != nil || one == nil {
			t.Fatalf("%s: search %v, %v", name, one, err)
		}
		gens, _ := s.newSearch(ctx, &p)
		if !one.oneEach {
			t.Fatalf("%s: not searched one candidate per anchor", name)
		}
		gens.oneEach = false
		want := cmp.Or(p.Limit, 1000)
		anchors := one.candidateAnchors()
		got, gotComplete := one.roundRobin(anchors, want, false)
		got.provs = slices.Clone(got.provs) // the scratch's
		exp, expComplete := gens.roundRobin(anchors, want, false)
		if got.n != exp.n || !slices.Equal(got.provs, exp.provs) || gotComplete != expComplete ||
			one.steps != gens.steps || one.stopped != gens.stopped {
			t.Errorf("%s:\none each   %v complete %v, %d steps, stopped %v\ngenerators %v complete %v, %d steps, stopped %v",
				name, got, gotComplete, one.steps, one.stopped, exp, expComplete, gens.steps, gens.stopped)
		}
		if exp.len() > 0 {
			found++
		}
	}
	if found < len(params)/2 {
		t.Errorf("only %d of %d cases have a candidate", found, len(params))
	}
}
