package engine

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rackCloud builds racks r0..r(racks-1) of hosts h<r>-<i>, each with
// VCPU vcpu (ratio 1) and MEMORY_MB 65536, in aggregate "rack<r>".
func rackCloud(racks, hosts int, vcpu int64) *snapBuilder {
	b := newSnapBuilder()
	for r := range racks {
		for i := range hosts {
			name := fmt.Sprintf("h%d-%d", r, i)
			b.rp(name, "").inv(name, "VCPU", vcpu, 0, 1, vcpu, 1, 100).inv(name, "MEMORY_MB", 65536).aggs(name, fmt.Sprintf("rack%d", r))
		}
	}
	return b
}

func members(n int, r string) []CandidatesParams {
	out := make([]CandidatesParams, n)
	for i := range out {
		out[i] = CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res(r)}}}
	}
	return out
}

func mustGang(t *testing.T, s *Snapshot, p GangParams) *Gang {
	t.Helper()
	g, err := s.Gang(context.Background(), &p)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// renderGang describes an answer as "agg=placed/roots[reasons]" per
// domain, in the answer's order.
func renderGang(g *Gang) string {
	var parts []string
	for _, d := range g.Domains {
		s := fmt.Sprintf("%s=%d/%d", d.Aggregate, d.Placed, d.Roots)
		if d.FirstUnplaced >= 0 {
			var rs []string
			for _, k := range slices.Sorted(maps.Keys(d.Reasons)) {
				rs = append(rs, fmt.Sprintf("%s:%d", k, d.Reasons[k]))
			}
			s += "[" + strings.Join(rs, ",") + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func memberRoots(d GangDomain) []string {
	var out []string
	for _, m := range d.Members {
		out = append(out, m.Root)
	}
	return out
}

func TestGangSpreadOneRootEach(t *testing.T) {
	b := rackCloud(2, 4, 16)
	b.used("h0-2", "VCPU", 12) // rack0 has three hosts with room for 8
	s := b.build()
	g := mustGang(t, s, GangParams{Members: members(4, "VCPU:8"), Spread: true, Domains: []string{"rack0", "rack1"}})
	if got, want := renderGang(g), "rack1=4/4 rack0=3/4[lacked VCPU 8:1,used by another member (spread hosts):3]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if g.Complete != 1 {
		t.Fatalf("complete %d, want 1", g.Complete)
	}
	roots := memberRoots(g.Domains[0])
	if got := len(slices.Compact(slices.Sorted(slices.Values(roots)))); got != 4 {
		t.Fatalf("spread members on %d roots (%v), want 4", got, roots)
	}
	for _, r := range roots {
		if !strings.HasPrefix(r, "h1-") {
			t.Fatalf("member on %s, outside rack1", r)
		}
	}
	// Nothing of the real snapshot changed.
	if got := s.provs.at(0).Inventory(0).Used; got != 0 {
		t.Fatalf("snapshot changed: h0-0 VCPU used %d", got)
	}
}

func TestGangWithoutSpreadPacksAndCountsEarlierMembers(t *testing.T) {
	s := rackCloud(1, 2, 16).build()
	g := mustGang(t, s, GangParams{Members: members(5, "VCPU:8"), Domains: []string{"rack0"}})
	if got, want := renderGang(g), "rack0=4/2[capacity taken by the gang's earlier members:2]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	g = mustGang(t, s, GangParams{Members: members(4, "VCPU:8"), Domains: []string{"rack0"}})
	if g.Complete != 1 {
		t.Fatalf("got %s, want the gang placed", renderGang(g))
	}
	if got, want := strings.Join(memberRoots(g.Domains[0]), ","), "h0-0,h0-0,h0-1,h0-1"; got != want {
		t.Fatalf("members on %s, want packed %s", got, want)
	}
	for _, m := range g.Domains[0].Members {
		if a := m.Request.Allocations; len(a) != 1 || a[0].ProviderUUID != m.Root {
			t.Fatalf("member allocations %+v on root %s", a, m.Root)
		}
	}
}

func TestGangPrefersFewestEmptyHostsStarted(t *testing.T) {
	b := rackCloud(3, 3, 16)
	b.used("h1-0", "VCPU", 4).used("h1-1", "VCPU", 4) // rack1: two hosts in use
	b.used("h2-0", "VCPU", 4)                         // rack2: one
	s := b.build()
	g := mustGang(t, s, GangParams{Members: members(2, "VCPU:8"), Spread: true, Domains: []string{"rack0", "rack2", "rack1"}, Keep: 3})
	var order []string
	for _, d := range g.Domains {
		order = append(order, fmt.Sprintf("%s:%d", d.Aggregate, d.EmptyStarted))
	}
	if got, want := strings.Join(order, " "), "rack1:0 rack2:1 rack0:2"; got != want {
		t.Fatalf("domains %s, want %s", got, want)
	}
	if got, want := strings.Join(memberRoots(g.Domains[0]), ","), "h1-0,h1-1"; got != want {
		t.Fatalf("members on %s, want the hosts in use %s", got, want)
	}
	if g.Complete != 3 || len(g.Domains[2].Members) != 2 {
		t.Fatalf("complete %d, kept members of the third %d", g.Complete, len(g.Domains[2].Members))
	}
}

// TestGangKeepsWhatAPolicyRanks: the first Keep complete domains, in
// the engine's order, keep their members' places, each with its
// one-candidate answer, whose records are the snapshot's before the
// gang (a policy ranks the placements over them); the others keep none.
func TestGangKeepsWhatAPolicyRanks(t *testing.T) {
	b := rackCloud(4, 2, 16)
	b.used("h2-0", "VCPU", 4)
	s := b.build()
	g := mustGang(t, s, GangParams{Members: members(2, "VCPU:4"), Domains: []string{"rack0", "rack1", "rack2", "rack3"}, Keep: 3})
	var kept []string
	for _, d := range g.Domains {
		if d.Members != nil {
			kept = append(kept, d.Aggregate)
		}
	}
	if got, want := strings.Join(kept, ","), "rack2,rack0,rack1"; got != want || g.Complete != 4 {
		t.Fatalf("kept %s, want %s (complete %d)", got, want, g.Complete)
	}
	vcpu, _ := s.names.ClassID("VCPU")
	// The members' one request: one answer, each member's request in it.
	ms := g.Domains[0].Members
	for i, m := range ms {
		c := m.Candidate
		if c == nil || c != ms[0].Candidate || len(c.Requests) != 2 || !reflect.DeepEqual(c.Requests[i], m.Request) ||
			len(c.Versions) != 1 || m.Root != "h2-0" {
			t.Fatalf("member %+v", m)
		}
		rec, parent, root := c.Record(0)
		if rec.UUID != "h2-0" || parent != "" || root != "h2-0" || rec.Inventory(vcpu).Used != 4 {
			t.Fatalf("record %+v (parent %q, root %q), want h2-0 with 4 VCPU used, as before the gang", rec, parent, root)
		}
	}
}

func TestGangPerMemberConstraints(t *testing.T) {
	b := rackCloud(1, 3, 16)
	b.traits("h0-2", "HW_GPU_API_CUDA")
	s := b.build()
	m := members(3, "VCPU:4")
	m[0].Groups[0].RequiredTraits = [][]string{{"HW_GPU_API_CUDA"}}
	g := mustGang(t, s, GangParams{Members: m, Spread: true, Domains: []string{"rack0"}})
	if g.Complete != 1 {
		t.Fatalf("got %s, want the gang placed", renderGang(g))
	}
	if got := g.Domains[0].Members[0].Root; got != "h0-2" {
		t.Fatalf("the member requiring CUDA is on %s, want h0-2", got)
	}
	// Two members needing the one CUDA host, spread: one fits.
	m[1].Groups[0].RequiredTraits = [][]string{{"HW_GPU_API_CUDA"}}
	g = mustGang(t, s, GangParams{Members: m, Spread: true, Domains: []string{"rack0"}})
	if got, want := renderGang(g), "rack0=2/3[lacked required traits or aggregates:2,used by another member (spread hosts):1]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if g.Domains[0].FirstUnplaced != 1 {
		t.Fatalf("first unplaced %d, want 1", g.Domains[0].FirstUnplaced)
	}
}

func TestGangDomains(t *testing.T) {
	s := rackCloud(2, 2, 16).build()
	g := mustGang(t, s, GangParams{Members: members(3, "VCPU:16"), Spread: true})
	if got, want := renderGang(g), "=3/4"; got != want {
		t.Fatalf("no domain: got %s, want the whole cloud %s", got, want)
	}
	g = mustGang(t, s, GangParams{Members: members(3, "VCPU:16"), Spread: true, Domains: []string{"nowhere", "rack0", "rack0"}})
	if got, want := renderGang(g), "rack0=2/2[used by another member (spread hosts):2] nowhere=0/0[no root provider in the aggregate:0]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := s.Gang(context.Background(), &GangParams{Members: members(1, "CUSTOM_NOPE:1")}); err == nil {
		t.Fatal("an unknown class placed a gang")
	}
}

// BenchmarkGang chooses a gang of 64 (one host each) among 10,000 hosts
// in 100 racks of 100, a third of each rack's hosts in use, and reports
// the CPU time of one choice (cpu-ms/op, the process's user and system
// time: the collector's included).
func BenchmarkGang(b *testing.B) {
	sb := newSnapBuilder()
	var racks []string
	for r := range 100 {
		racks = append(racks, fmt.Sprintf("rack%d", r))
		for i := range 100 {
			name := fmt.Sprintf("h%d-%d", r, i)
			sb.rp(name, "").inv(name, "VCPU", 64, 0, 1, 64, 1, 400).inv(name, "MEMORY_MB", 262144, 4096).aggs(name, racks[r])
			if (r+i)%3 == 0 {
				sb.used(name, "VCPU", 160).used(name, "MEMORY_MB", 131072)
			}
		}
	}
	s := sb.build()
	p := GangParams{Members: members(64, "VCPU:64,MEMORY_MB:131072"), Spread: true, Domains: racks, Keep: 100}
	start := cpuTime()
	for b.Loop() {
		g, err := s.Gang(context.Background(), &p)
		if err != nil || g.Complete == 0 {
			b.Fatalf("gang not placed: %v", err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestGangMinCount: with a MinCount, a domain that holds at least that
// many members is acceptable and gets the placed members, each with its
// index; complete domains still come first.
func TestGangMinCount(t *testing.T) {
	b := rackCloud(2, 4, 16)
	b.used("h0-2", "VCPU", 12)
	b.used("h1-0", "VCPU", 12)
	b.used("h1-1", "VCPU", 12)
	s := b.build()
	p := GangParams{Members: members(4, "VCPU:8"), Spread: true, Domains: []string{"rack0", "rack1"}, Keep: 2}
	if g := mustGang(t, s, p); g.Complete != 0 || g.Acceptable != 0 || g.Domains[0].Members != nil {
		t.Fatalf("without a min count: %s, complete %d, acceptable %d", renderGang(g), g.Complete, g.Acceptable)
	}
	p.MinCount = 2
	g := mustGang(t, s, p)
	if got, want := renderGang(g), "rack0=3/4[lacked VCPU 8:1,used by another member (spread hosts):3] rack1=2/4[lacked VCPU 8:2,used by another member (spread hosts):2]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if g.Complete != 0 || g.Acceptable != 2 {
		t.Fatalf("complete %d, acceptable %d", g.Complete, g.Acceptable)
	}
	d := g.Domains[0]
	if len(d.Members) != 3 || d.Members[0].Member != 0 || d.Members[2].Member != 2 || slices.Contains(memberRoots(d), "h0-2") {
		t.Fatalf("rack0's members: %+v", d.Members)
	}
	p.MinCount = 4
	if g := mustGang(t, s, p); g.Acceptable != 0 {
		t.Fatalf("min count of every member: acceptable %d", g.Acceptable)
	}
}
