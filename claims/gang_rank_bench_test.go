package claims

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/engine/enginetest"
	"github.com/berthd/berth/scheduler"
)

// BenchmarkGangRanked is engine's BenchmarkGang (a gang of 64, one host
// each, in one of 100 racks of 100 hosts, a third in use) with what a
// gang ranked by a policy adds: the members of every complete domain
// kept (MaxGangRanked), each placement's hosts viewed and weighed by
// pack. It reports the CPU time of one choice (cpu-ms/op: the process's
// user and system time, the collector's included).
func BenchmarkGangRanked(b *testing.B) {
	snap := enginetest.RackCloud(100, 100)
	gp := engine.GangParams{Spread: true, Keep: MaxGangRanked}
	p := &GangParams{ProjectID: "p", UserID: "u"}
	for i := range 64 {
		gp.Members = append(gp.Members, engine.CandidatesParams{NestedAware: true, Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{
			{Class: "VCPU", Amount: 64}, {Class: "MEMORY_MB", Amount: 131072}}}}})
		p.Members = append(p.Members, GangMember{ConsumerUUID: fmt.Sprintf("99999999-0000-4000-8000-%012d", i), ConsumerType: "INSTANCE"})
	}
	for r := range 100 {
		gp.Domains = append(gp.Domains, enginetest.RackAggregate(r))
	}
	pol, err := scheduler.NewPolicy(scheduler.PolicyConfig{Weighers: []scheduler.PluginConfig{{Name: scheduler.PackName}}}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start := cpuTime()
	for b.Loop() {
		g, err := snap.Gang(ctx, &gp)
		if err != nil || g.Complete == 0 {
			b.Fatalf("gang not placed: %v", err)
		}
		placements, _ := gangPlacements(p, g)
		r, err := pol.RankGang(ctx, gangRequest(p, &gp), placements)
		if err != nil || len(r.Ranked) != min(g.Complete, MaxGangRanked) {
			b.Fatalf("ranked %+v: %v", r, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
