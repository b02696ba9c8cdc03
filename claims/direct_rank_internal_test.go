package claims

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// TestRankDirectAsRank: across random flat clouds, requests and policies
// of the capacity filter and the spread and pack weighers, a direct
// ranking of a claim's sample (scheduler.Policy.RankDirect on the
// snapshot's records, views of the kept candidates only) ranks exactly
// as Rank over every candidate's view: the same filter counts and
// reasons, the same first candidates with the same scores, weights,
// roots and views; it keeps keep of those that passed and, unless the
// candidates' order is random, cuts none that ties a kept one. Some records are changed after the search,
// as a stale snapshot would be, so that the capacity filter rejects.
func TestRankDirectAsRank(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(39, 1))
	classes := []string{"VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_GPU"}
	directs, cut, rejected := 0, 0, 0
	for trial := range 300 {
		snap := randomFlatCloud(rng, 20+rng.IntN(200), classes)
		p := randomClaimParams(rng, classes)
		lc, err := snap.Candidates(ctx, &engine.CandidatesParams{Groups: p.Groups, NestedAware: true,
			VersionsOnly: true, Sample: true, Max: 100, AvoidEvacuated: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(lc.Requests) == 0 || !lc.Flat {
			continue
		}
		// A stale snapshot: some of the sampled providers filled up, or
		// their units changed, after the search.
		for i := range lc.Requests {
			if rng.IntN(5) == 0 {
				rec := lc.AllocationRecord(i, 0)
				inv := &rec.Inventories[rng.IntN(len(rec.Inventories))]
				switch rng.IntN(3) {
				case 0:
					inv.Used = inv.Capacity() - int64(rng.IntN(3))
				case 1:
					inv.StepSize = int64(2 + rng.IntN(3))
				default:
					inv.MinUnit = int64(rng.IntN(64))
				}
			}
		}
		policy := randomDirectPolicy(t, rng, classes)
		req := &scheduler.Request{ConsumerUUID: "c", Resources: map[string]int64{}}
		if !policy.Direct(req) {
			t.Fatalf("trial %d: policy %+v is not direct", trial, policy.Config())
		}
		keep := 1 + rng.IntN(15)
		randomOrder := rng.IntN(2) == 0
		direct, err := policy.RankDirect(ctx, lc, keep, randomOrder, keptRoots)
		if err != nil {
			t.Fatal(err)
		}
		// Every kept candidate's views, built when read as a claim's
		// answer builds them: a few first, then the rest.
		kept := make([]*scheduler.Candidate, len(direct.Ranked))
		for i, d := range direct.Ranked {
			kept[i] = d.Cand
		}
		split := rng.IntN(len(kept) + 1)
		keptViews(lc, kept[:split])
		keptViews(lc, kept)
		full, err := policy.Rank(ctx, req, schedulerCandidates(lc))
		if err != nil {
			t.Fatal(err)
		}
		directs++
		where := fmt.Sprintf("trial %d (policy %s, keep %d)", trial, mustJSON(policy.Config()), keep)
		if direct.Considered != full.Considered || !reflect.DeepEqual(direct.Rejections, full.Rejections) {
			t.Fatalf("%s: considered %d, rejections %+v; Rank: %d, %+v", where,
				direct.Considered, direct.Rejections, full.Considered, full.Rejections)
		}
		rejected += full.Rejections[0].Removed
		n := len(direct.Ranked)
		if n < min(keep, len(full.Ranked)) || n > len(full.Ranked) {
			t.Fatalf("%s: kept %d of %d ranked", where, n, len(full.Ranked))
		}
		if randomOrder && n != min(keep, len(full.Ranked)) {
			t.Fatalf("%s: kept %d of %d ranked, want %d: ties are cut in a random order", where, n, len(full.Ranked), keep)
		}
		if n < len(full.Ranked) {
			cut++
		}
		if n < len(full.Ranked) && !randomOrder {
			for _, d := range direct.Ranked {
				if scheduler.Tie(d.Score, full.Ranked[n].Score) {
					t.Fatalf("%s: cut after %d, but the next one ties a kept one's score %v", where, n, d.Score)
				}
			}
		}
		for i := keep; i < n; i++ {
			if !tiesKept(direct.Ranked[:keep], direct.Ranked[i].Score) {
				t.Fatalf("%s: kept %d beyond %d without a tie", where, i, keep)
			}
		}
		for i, d := range direct.Ranked {
			f := full.Ranked[i]
			if d.Cand.Index != f.Cand.Index || d.Score != f.Score || !reflect.DeepEqual(d.Weights(), f.Weights()) ||
				!reflect.DeepEqual(d.Cand.Roots, f.Cand.Roots) || !reflect.DeepEqual(d.Cand.Allocations, f.Cand.Allocations) {
				t.Fatalf("%s: ranked %d is candidate %d, score %v, weights %v, roots %v; Rank: %d, %v, %v, %v",
					where, i, d.Cand.Index, d.Score, d.Weights(), d.Cand.Roots, f.Cand.Index, f.Score, f.Weights(), f.Cand.Roots)
			}
			for _, a := range d.Cand.Allocations {
				if !reflect.DeepEqual(d.Cand.Providers[a.ProviderUUID], f.Cand.Providers[a.ProviderUUID]) {
					t.Fatalf("%s: view of %s: %+v; Rank's: %+v", where, a.ProviderUUID,
						d.Cand.Providers[a.ProviderUUID], f.Cand.Providers[a.ProviderUUID])
				}
			}
		}
	}
	t.Logf("%d rankings compared, %d cut, %d candidates rejected", directs, cut, rejected)
	// The trials must have exercised what they compare.
	if directs < 200 || cut < 50 || rejected == 0 {
		t.Fatalf("%d rankings compared, %d cut, %d candidates rejected: too few", directs, cut, rejected)
	}
}

func tiesKept(kept []scheduler.Scored, score float64) bool {
	for _, k := range kept {
		if scheduler.Tie(k.Score, score) {
			return true
		}
	}
	return false
}

// randomFlatCloud is n root providers with random inventories of some
// of classes (at least one each), random usage and units.
func randomFlatCloud(rng *rand.Rand, n int, classes []string) *engine.Snapshot {
	names := engine.NewNames()
	for i, c := range classes {
		names.AddClass(int32(i), c)
	}
	provs := make([]*engine.ProviderRecord, n)
	for i := range provs {
		var invs []engine.InventoryRecord
		for c := range classes {
			if c > 0 && rng.IntN(4) == 0 {
				continue
			}
			total := int64(4 + rng.IntN(400))
			inv := engine.InventoryRecord{Class: int32(c), Total: total, Reserved: int64(rng.IntN(3)), MinUnit: 1,
				MaxUnit: total, StepSize: 1, Ratio: []float64{1, 1.5, 4, 16}[rng.IntN(4)]}
			if rng.IntN(6) == 0 {
				inv.StepSize = 2
			}
			inv.Used = int64(rng.IntN(int(inv.Capacity()) + 1))
			if rng.IntN(3) == 0 {
				inv.Used = 0 // ties
			}
			invs = append(invs, inv)
		}
		id := int64(i + 1)
		provs[i] = engine.NewRecord(&engine.ProviderRecord{ID: id, RootID: id, Generation: 1,
			UUID: fmt.Sprintf("%08x-0000-4000-8000-000000000039", i), Name: fmt.Sprintf("cn%d", i), Inventories: invs})
	}
	return engine.New(provs, names)
}

// randomClaimParams is a request of one to three classes, sometimes in
// two groups.
func randomClaimParams(rng *rand.Rand, classes []string) engine.CandidatesParams {
	var groups []engine.RequestGroup
	g := engine.RequestGroup{}
	for _, c := range rng.Perm(len(classes))[:1+rng.IntN(3)] {
		amount := int64(1 + rng.IntN(8))
		if rng.IntN(4) == 0 && len(groups) == 0 && len(g.Resources) > 0 {
			groups = append(groups, engine.RequestGroup{Suffix: "1", Resources: []engine.ResourceAmount{{Class: classes[c], Amount: amount}}})
			continue
		}
		g.Resources = append(g.Resources, engine.ResourceAmount{Class: classes[c], Amount: amount})
	}
	return engine.CandidatesParams{Groups: append([]engine.RequestGroup{g}, groups...)}
}

// randomDirectPolicy is the capacity filter (listed or not) with one to
// three spread or pack weighers, by class, by classes or by the mean, with
// factors.
func randomDirectPolicy(t *testing.T, rng *rand.Rand, classes []string) *scheduler.Policy {
	var cfg scheduler.PolicyConfig
	if rng.IntN(2) == 0 {
		cfg.Filters = []scheduler.PluginConfig{{Name: scheduler.CapacityName}}
	}
	for range 1 + rng.IntN(3) {
		w := scheduler.PluginConfig{Name: []string{scheduler.SpreadName, scheduler.PackName}[rng.IntN(2)]}
		switch rng.IntN(3) {
		case 0:
			w.Params = json.RawMessage(fmt.Sprintf(`{"class": %q}`, classes[rng.IntN(len(classes))]))
		case 1:
			w.Params = json.RawMessage(fmt.Sprintf(`{"classes": [%q, %q]}`, classes[rng.IntN(len(classes))], classes[rng.IntN(len(classes))]))
		}
		if rng.IntN(2) == 0 {
			f := []float64{-1, 0.5, 2, 3.25}[rng.IntN(4)]
			w.Factor = &f
		}
		cfg.Weighers = append(cfg.Weighers, w)
	}
	p, err := scheduler.NewPolicy(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestSelectionDirectAsFull: a claim's selection ranked directly answers
// with the steps and the first candidates of the full path's selection
// of the same candidates (a cloud smaller than the sample, so that both
// see them in one order; the full path is forced by a provider to avoid
// that does not exist, whose step removes nothing).
func TestSelectionDirectAsFull(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(39, 2))
	classes := []string{"VCPU", "MEMORY_MB", "DISK_GB"}
	c, err := New(Deps{}, Config{SubsetSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for trial := range 50 {
		snap := randomFlatCloud(rng, 5+rng.IntN(90), classes)
		p := Params{ConsumerUUID: "c0ffee00-0000-4000-8000-000000000039", ProjectID: "p", UserID: "u", Alternates: 2,
			Candidates: randomClaimParams(rng, classes)}
		p.Candidates.NestedAware = true
		direct, err := c.selectCandidates(ctx, &p, &resolved{snap: snap, exclude: []string{}, policy: c.policy}, 100)
		if err != nil {
			t.Fatal(err)
		}
		nowhere := "00000000-0000-4000-8000-00000000dead"
		full, err := c.selectCandidates(ctx, &p, &resolved{snap: snap, exclude: []string{nowhere}, policy: c.policy}, 100)
		if err != nil {
			t.Fatal(err)
		}
		if full.direct || full.found == 0 {
			continue
		}
		if !direct.direct {
			t.Fatalf("trial %d: the default policy's selection was not ranked directly", trial)
		}
		compared++
		var fullSteps []Step
		for _, st := range full.steps {
			if st.Unit != scheduler.ExcludeName {
				fullSteps = append(fullSteps, st)
			}
		}
		if !reflect.DeepEqual(direct.steps, fullSteps) || direct.roots != full.roots || direct.found != full.found {
			t.Fatalf("trial %d: steps %+v; full path: %+v", trial, direct.steps, fullSteps)
		}
		for i, d := range direct.ranking.Ranked {
			f := full.ranking.Ranked[i]
			if d.Cand.Index != f.Cand.Index || d.Score != f.Score || d.Cand.Root() != f.Cand.Root() {
				t.Fatalf("trial %d: ranked %d is %d (%v, %s); full path: %d (%v, %s)", trial, i,
					d.Cand.Index, d.Score, d.Cand.Root(), f.Cand.Index, f.Score, f.Cand.Root())
			}
		}
		// The answers name the same roots, by the same names (the direct
		// one's views built for those it names only).
		dr, fr := c.result(&p, direct, 0, 1, nil), c.result(&p, full, 0, 1, nil)
		if dr.Root != fr.Root || dr.RootName != fr.RootName || dr.RootName == "" || !reflect.DeepEqual(dr.Allocations, fr.Allocations) ||
			!reflect.DeepEqual(dr.Mappings, fr.Mappings) || !reflect.DeepEqual(dr.Alternates, fr.Alternates) {
			t.Fatalf("trial %d: answer %s %q %+v, alternates %+v; full path: %s %q %+v, %+v", trial,
				dr.Root, dr.RootName, dr.Allocations, dr.Alternates, fr.Root, fr.RootName, fr.Allocations, fr.Alternates)
		}
		want := min(len(full.ranking.Ranked), attemptsOf(c.cfg, &p)+p.Alternates+1)
		if len(direct.ranking.Ranked) < want || direct.partial != (len(direct.ranking.Ranked) < len(full.ranking.Ranked)) {
			t.Fatalf("trial %d: kept %d (partial %v) of %d, want at least %d", trial,
				len(direct.ranking.Ranked), direct.partial, len(full.ranking.Ranked), want)
		}
	}
	if compared < 40 {
		t.Fatalf("%d selections compared: too few", compared)
	}
}
