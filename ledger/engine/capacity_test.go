package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func mustCapacity(t *testing.T, s *Snapshot, p CapacityParams) *Capacity {
	t.Helper()
	c, err := s.Capacity(context.Background(), &p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// renderCapacity describes an answer as "root=fits[*][/LIMITING+...]" in
// the answer's order, * marking a capped count.
func renderCapacity(c *Capacity) string {
	var parts []string
	for _, r := range c.Roots {
		s := fmt.Sprintf("%s=%d", r.Name, r.Fits)
		if r.Capped {
			s += "*"
		}
		if len(r.Limiting) > 0 {
			s += "/" + strings.Join(r.Limiting, "+")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestCapacityTable(t *testing.T) {
	unsuffixed := func(r string) []RequestGroup { return []RequestGroup{{Resources: res(r)}} }
	tests := []struct {
		name   string
		snap   func() *Snapshot
		p      CapacityParams
		want   string
		total  int64
		capped bool
	}{{
		name: "simple node: the scarcer class limits",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn", "").inv("cn", "VCPU", 16, 0, 1, 16, 1, 400). // 64 VCPU
										inv("cn", "MEMORY_MB", 16384, 512).used("cn", "MEMORY_MB", 1024) // 14848 free
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:4,MEMORY_MB:2048")}},
		want: "cn=7/MEMORY_MB", total: 7,
	}, {
		name: "allocation ratio below one and reserved",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn", "").inv("cn", "VCPU", 10, 2, 1, 10, 1, 50) // (10-2)*0.5 = 4
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:1")}},
		want: "cn=4/VCPU", total: 4,
	}, {
		name: "max_unit below the amount: nothing fits",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn", "").inv("cn", "VCPU", 64, 0, 1, 4)
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:8")}},
		want: "", total: 0,
	}, {
		name: "step size not dividing the amount: nothing fits",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn", "").inv("cn", "DISK_GB", 1000, 0, 1, 1000, 100)
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("DISK_GB:150")}},
		want: "", total: 0,
	}, {
		name: "step size and min_unit respected",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn", "").inv("cn", "DISK_GB", 1000, 50, 200, 1000, 100).used("cn", "DISK_GB", 100)
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("DISK_GB:200")}},
		want: "cn=4/DISK_GB", total: 4, // 850 free
	}, {
		name: "several roots, most first, then creation order",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("a", "").inv("a", "VCPU", 2).rp("b", "").inv("b", "VCPU", 5).
				rp("c", "").inv("c", "VCPU", 5).rp("d", "").inv("d", "MEMORY_MB", 5)
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:1")}},
		want: "b=5/VCPU c=5/VCPU a=2/VCPU", total: 12,
	}, {
		name: "per-root cap",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("big", "").inv("big", "VCPU", 100).rp("small", "").inv("small", "VCPU", 3)
			return b.build()
		},
		p:    CapacityParams{MaxPerRoot: 10, Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:1")}},
		want: "big=10* small=3/VCPU", total: 13, capped: true,
	}, {
		name: "nested: a granular group uses one NUMA node at a time",
		snap: numaPair,
		p: CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: []RequestGroup{
			{Suffix: "1", Resources: res("VCPU:2,MEMORY_MB:1024")}}}},
		want: "cn=8/VCPU+MEMORY_MB", total: 8, // 4 per node, both classes run out together
	}, {
		name: "nested: unsuffixed amounts do not split across providers",
		snap: numaPair,
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:3")}},
		want: "cn=4/VCPU", total: 4, // 2 per node; 2+2 VCPU left over
	}, {
		name: "nested: isolated groups take one of each node",
		snap: numaPair,
		p: CapacityParams{Request: CandidatesParams{NestedAware: true, Isolate: true, Groups: []RequestGroup{
			{Suffix: "a", Resources: res("VCPU:2")}, {Suffix: "b", Resources: res("VCPU:2")}}}},
		want: "cn=4/VCPU", total: 4,
	}, {
		name: "nested: required trait on one node only",
		snap: numaPair,
		p: CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: []RequestGroup{
			{Suffix: "1", Resources: res("VCPU:1"), RequiredTraits: [][]string{{"CUSTOM_FAST"}}}}}},
		want: "cn=8/VCPU", total: 8,
	}, {
		name: "sharing provider: its capacity is shared between the trees",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn1", "").inv("cn1", "VCPU", 8).aggs("cn1", "agg")
			b.rp("cn2", "").inv("cn2", "VCPU", 8).aggs("cn2", "agg")
			b.rp("ss", "").inv("ss", "DISK_GB", 100).aggs("ss", "agg").traits("ss", "MISC_SHARES_VIA_AGGREGATE")
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:1,DISK_GB:30")}},
		want: "cn1=3/DISK_GB", total: 3,
	}, {
		name: "sharing provider: later trees get what is left",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn1", "").inv("cn1", "VCPU", 2).aggs("cn1", "agg")
			b.rp("cn2", "").inv("cn2", "VCPU", 8).aggs("cn2", "agg")
			b.rp("ss", "").inv("ss", "DISK_GB", 100).aggs("ss", "agg").traits("ss", "MISC_SHARES_VIA_AGGREGATE")
			return b.build()
		},
		p:    CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: unsuffixed("VCPU:1,DISK_GB:30")}},
		want: "cn1=2/VCPU cn2=1/DISK_GB", total: 3,
	}, {
		name: "nested: same_subtree pairs VCPU with an accelerator under it",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("cn", "").inv("cn", "DISK_GB", 100)
			b.rp("numa0", "cn").inv("numa0", "VCPU", 4).rp("fpga0", "numa0").inv("fpga0", "FPGA", 1)
			b.rp("numa1", "cn").inv("numa1", "VCPU", 4).rp("fpga1", "numa1").inv("fpga1", "FPGA", 2)
			return b.build()
		},
		p: CapacityParams{Request: CandidatesParams{NestedAware: true, Isolate: true, Groups: []RequestGroup{
			{Resources: res("DISK_GB:10")},
			{Suffix: "_C", Resources: res("VCPU:2")},
			{Suffix: "_A", Resources: res("FPGA:1")},
		}, SameSubtrees: [][]string{{"_C", "_A"}}}},
		want: "cn=3/FPGA", total: 3, // numa0 1 (one FPGA), numa1 2
	}, {
		name: "member_of",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("a", "").inv("a", "VCPU", 2).aggs("a", "az1").rp("b", "").inv("b", "VCPU", 5).aggs("b", "az2")
			return b.build()
		},
		p: CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: []RequestGroup{
			{Resources: res("VCPU:1"), MemberOf: [][]string{{"az2"}}}}}},
		want: "b=5/VCPU", total: 5,
	}, {
		name: "root_required",
		snap: func() *Snapshot {
			b := newSnapBuilder()
			b.rp("a", "").inv("a", "VCPU", 2).rp("b", "").inv("b", "VCPU", 5).traits("b", "CUSTOM_GOLD")
			return b.build()
		},
		p: CapacityParams{Request: CandidatesParams{NestedAware: true, RootForbidden: []string{"CUSTOM_GOLD"},
			Groups: unsuffixed("VCPU:1")}},
		want: "a=2/VCPU", total: 2,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCapacity(t, tc.snap(), tc.p)
			if got := renderCapacity(c); got != tc.want {
				t.Errorf("roots: got %q, want %q", got, tc.want)
			}
			if c.Total != tc.total || c.Capped != tc.capped || c.Truncated {
				t.Errorf("got total %d capped %v truncated %v, want %d %v false", c.Total, c.Capped, c.Truncated, tc.total, tc.capped)
			}
		})
	}
}

// numaPair is a compute node with two NUMA children of 8 VCPU and 4096
// MEMORY_MB each; the second has CUSTOM_FAST.
func numaPair() *Snapshot {
	b := newSnapBuilder()
	b.rp("cn", "").rp("numa0", "cn").rp("numa1", "cn")
	for _, n := range []string{"numa0", "numa1"} {
		b.inv(n, "VCPU", 8).inv(n, "MEMORY_MB", 4096)
	}
	b.traits("numa1", "CUSTOM_FAST")
	return b.build()
}

// TestCapacitySingleNodeFormula checks random single-provider inventories
// against the closed form: for each class, 0 if the amount breaks min_unit,
// max_unit or step_size, else floor((capacity - used) / amount); the
// answer is the least of them.
func TestCapacitySingleNodeFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	classes := []string{"VCPU", "MEMORY_MB", "DISK_GB"}
	for i := 0; i < 300; i++ {
		b := newSnapBuilder()
		b.rp("cn", "")
		var req []string
		want := math.MaxInt
		for _, class := range classes[:1+rng.IntN(3)] {
			total := int64(1 + rng.IntN(200))
			reserved := int64(rng.IntN(int(total)/4 + 1))
			minUnit := int64(1 + rng.IntN(3))
			maxUnit := int64(1 + rng.IntN(int(total)))
			step := int64(1 + rng.IntN(3))
			ratio := int64([]int{50, 100, 150, 400}[rng.IntN(4)])
			b.inv("cn", class, total, reserved, minUnit, maxUnit, step, ratio)
			capacity := float64(total-reserved) * float64(ratio) / 100
			used := int64(rng.IntN(int(capacity)/2 + 1))
			b.used("cn", class, used)
			amount := int64(1 + rng.IntN(12))
			req = append(req, fmt.Sprintf("%s:%d", class, amount))
			n := 0
			if amount >= minUnit && amount <= maxUnit && amount%step == 0 {
				n = int((capacity - float64(used)) / float64(amount))
			}
			want = min(want, n)
		}
		want = min(want, 1000)
		c := mustCapacity(t, b.build(), CapacityParams{Request: CandidatesParams{NestedAware: true,
			Groups: []RequestGroup{{Resources: res(strings.Join(req, ","))}}}})
		if c.Total != int64(want) {
			t.Fatalf("case %d (%s): got %d, want %d", i, strings.Join(req, ","), c.Total, want)
		}
	}
}

func TestCapacityLeavesSnapshotAlone(t *testing.T) {
	s := sharedStorage()
	p := CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("VCPU:1,DISK_GB:100")}}}
	before := render(mustCandidates(t, s, p))
	c := mustCapacity(t, s, CapacityParams{Request: p})
	if c.Total == 0 {
		t.Fatal("nothing fits")
	}
	if after := render(mustCandidates(t, s, p)); !slices.Equal(before, after) {
		t.Errorf("candidates changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestCapacityBudget(t *testing.T) {
	b := newSnapBuilder()
	for i := 0; i < 50; i++ {
		n := fmt.Sprintf("cn%d", i)
		b.rp(n, "").inv(n, "VCPU", 100)
	}
	s := b.build()
	req := CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("VCPU:1")}}}
	c := mustCapacity(t, s, CapacityParams{Request: req, MaxSteps: 250})
	if !c.Truncated || c.Total >= 250 || c.Total < 100 {
		t.Errorf("step budget: truncated %v total %d", c.Truncated, c.Total)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Capacity(ctx, &CapacityParams{Request: req}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}

func TestCapacityUnknownNames(t *testing.T) {
	s := numaPair()
	var ue *UnknownNameError
	_, err := s.Capacity(context.Background(), &CapacityParams{Request: CandidatesParams{NestedAware: true,
		Groups: []RequestGroup{{Resources: res("CUSTOM_NOPE:1")}}}})
	if !errors.As(err, &ue) || ue.Name != "CUSTOM_NOPE" {
		t.Errorf("got %v", err)
	}
}

// BenchmarkCapacity counts a flat cloud: 63 instances per node, limited
// by memory.
func BenchmarkCapacity(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		s := benchComputes(n)
		p := CapacityParams{Request: CandidatesParams{NestedAware: true,
			Groups: []RequestGroup{{Resources: res("VCPU:2,MEMORY_MB:4096,DISK_GB:20")}}}}
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var c *Capacity
			for b.Loop() {
				var err error
				if c, err = s.Capacity(context.Background(), &p); err != nil {
					b.Fatal(err)
				}
			}
			if c.Truncated || c.Total != int64(63*n) {
				b.Fatalf("total %d truncated %v", c.Total, c.Truncated)
			}
		})
	}
	// The expensive shape: a small flavor, 256 instances per node.
	b.Run("N=10000/VCPU:1", func(b *testing.B) {
		s := benchComputes(10000)
		p := CapacityParams{Request: CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("VCPU:1")}}}}
		var c *Capacity
		for b.Loop() {
			var err error
			if c, err = s.Capacity(context.Background(), &p); err != nil {
				b.Fatal(err)
			}
		}
		if c.Truncated || c.Total != 256*10000 {
			b.Fatalf("total %d truncated %v", c.Total, c.Truncated)
		}
	})
}

func TestOverCapacity(t *testing.T) {
	b := newSnapBuilder()
	b.rp("full", "").inv("full", "VCPU", 8).used("full", "VCPU", 8)
	b.rp("over", "").inv("over", "VCPU", 8).inv("over", "MEMORY_MB", 1024, 512).used("over", "MEMORY_MB", 513)
	b.rp("ratio", "").inv("ratio", "VCPU", 8, 0, 1, 8, 1, 150).used("ratio", "VCPU", 12)
	b.rp("child", "over").inv("child", "VCPU", 2, 0, 1, 2, 1, 50).used("child", "VCPU", 2)
	// Provider ids follow creation: full 1, over 2, ratio 3, child 4.
	if got := b.build().OverCapacity(); !slices.Equal(got, []int64{2, 4}) {
		t.Errorf("OverCapacity = %v, want [2 4]", got)
	}
}
