package claims

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/engine/enginetest"
)

// BenchmarkClaimPath is a claim's berthd-side work but the database
// write, on an n-provider snapshot held in memory: the sampled
// candidates (engine), the scheduler's views of their providers, the
// default policy's ranking, the pick, the answer and its JSON encoding.
// Nothing in it should grow with n. "still" runs on a snapshot that does
// not change; "writes" patches the snapshot after each claim with the
// claimed provider's new usage, as a claim batch does
// (ledger.applyOwnWrites), so that claims meet changed providers, as in
// berthd's steady state. cpu-ms/op is the process's CPU time per claim
// (user and system, GC included), which a busy machine inflates less
// than the wall time.
func BenchmarkClaimPath(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, n := range []int{1000, 100000} {
		snap := enginetest.FlatCloud(n)
		names := snap.Names()
		for _, mode := range []string{"still", "writes"} {
			b.Run(fmt.Sprintf("N=%d/%s", n, mode), func(b *testing.B) {
				snap := snap
				c, err := New(Deps{Logger: log}, Config{SubsetSize: 1})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					p := Params{ConsumerUUID: "c0ffee00-0000-4000-8000-000000000000", ProjectID: "p", UserID: "u",
						Alternates: 2, Candidates: engine.CandidatesParams{NestedAware: true,
							Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{
								{Class: "VCPU", Amount: 4}, {Class: "MEMORY_MB", Amount: 16384}, {Class: "DISK_GB", Amount: 100}}}}}}
					classes, traits := engine.ParamsNames(&p.Candidates)
					snap.UnsureNames(classes, traits)
					r := &resolved{snap: snap, exclude: []string{}, policy: c.policy}
					s, err := c.selectCandidates(ctx, &p, r, c.cfg.ClaimCandidates)
					if err != nil || s.rankErr != nil || len(s.ranking.Ranked) == 0 {
						b.Fatal(err, s.rankErr)
					}
					i := c.pick(s.ranking.Ranked, make([]bool, len(s.ranking.Ranked)), nil, s.ranking.Chosen)
					_ = s.ranking.Ranked[i].Cand.AllocationsByName()
					res := c.result(&p, s, i, 1, nil)
					if _, err := json.Marshal(res); err != nil {
						b.Fatal(err)
					}
					if mode == "writes" {
						snap = claimed(snap, s.ranking.Ranked[i].Cand.Allocations[0].ProviderUUID, names)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			})
		}
	}
}

// cpuTime is the CPU time the process used so far (user and system, all
// threads).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// claimed is snap after a claim of VCPU:4 on the provider of uuid u.
func claimed(snap *engine.Snapshot, u string, names *engine.Names) *engine.Snapshot {
	f := engine.ProviderFilter{UUID: u}
	provs, err := snap.ProvidersMatching(&f)
	if err != nil || len(provs) != 1 {
		panic(fmt.Sprint(u, err))
	}
	old, _ := snap.ProviderByID(provs[0].ID)
	rec := *old
	rec.Generation++
	rec.Inventories = slices.Clone(rec.Inventories)
	rec.Inventories[0].Used += 4
	return snap.WithProviders(map[int64]*engine.ProviderRecord{rec.ID: &rec}, nil, names)
}

// BenchmarkRankDirect is a claim's direct ranking alone
// (scheduler.Policy.RankDirect, the default policy, keeping the first
// attempts, alternates and subset as selectCandidates does) over the
// samples of a hundred candidates of 32 claims on a flat 1,000-provider
// cloud, taken in turn; their kept requests are built by the first
// ranking of each.
func BenchmarkRankDirect(b *testing.B) {
	snap := enginetest.FlatCloud(1000)
	c, err := New(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Config{SubsetSize: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	groups := []engine.RequestGroup{{Resources: []engine.ResourceAmount{
		{Class: "VCPU", Amount: 4}, {Class: "MEMORY_MB", Amount: 16384}, {Class: "DISK_GB", Amount: 100}}}}
	samples := make([]*engine.Candidates, 32)
	for i := range samples {
		if samples[i], err = snap.Candidates(ctx, &engine.CandidatesParams{Groups: groups, NestedAware: true,
			VersionsOnly: true, Sample: true, Max: 100, AvoidEvacuated: true, DeferRequests: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r, err := c.policy.RankDirect(ctx, samples[i%len(samples)], 1+2+1, true, keptRoots)
		if err != nil || len(r.Ranked) == 0 {
			b.Fatal(err)
		}
		i++
	}
}
