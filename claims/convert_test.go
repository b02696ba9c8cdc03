package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/scheduler"
)

// countingEnricher sets every provider's consumer count to n when asked.
type countingEnricher struct{ n int }

func (e countingEnricher) Enrich(_ context.Context, needs scheduler.Needs, provs map[string]*scheduler.Provider) error {
	if needs.Consumers {
		for _, p := range provs {
			p.Consumers = e.n
		}
	}
	return nil
}

// A Claimer keeps the scheduler's view of a provider from one claim to
// the next until the provider changes, and an enricher's writes stay with
// the claim that asked for them.
func TestClaimerProviderCache(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimer(`{}`, "")
	c.SetEnricher(countingEnricher{n: 7})
	// Until the listener is up every read reloads the snapshot, and
	// every provider is new.
	for deadline := time.Now().Add(30 * time.Second); !f.store.SnapshotListening(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("snapshot listener not connected within 30s")
		}
	}
	providers := func(p claims.Params) map[string]*scheduler.Provider {
		t.Helper()
		ex, err := c.Explain(f.ctx, p)
		if err != nil || ex.Ranking == nil || len(ex.Ranking.Ranked) == 0 {
			t.Fatalf("explain: %v %+v", err, ex)
		}
		return ex.Ranking.Ranked[0].Cand.Providers
	}
	first := providers(params(1))
	if second := providers(params(1)); second[a] != first[a] || second[b] != first[b] {
		t.Errorf("unchanged providers were built again")
	}

	// A policy that needs consumer counts has them filled, in copies.
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "max_consumers", "params": {"max": 100}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := scheduler.NewPolicy(pc, nil, nil, scheduler.ScriptletLimits{})
	if err != nil {
		t.Fatal(err)
	}
	p := params(1)
	p.PolicyOverride = pol
	if enriched := providers(p); enriched[a].Consumers != 7 || enriched[a] == first[a] {
		t.Errorf("enriched: consumers %d, copied %v", enriched[a].Consumers, enriched[a] != first[a])
	}
	if again := providers(params(1)); again[a] != first[a] || again[a].Consumers != 0 {
		t.Errorf("the enricher's write reached the cache: consumers %d", again[a].Consumers)
	}

	// A claim on a changes a's view, not b's.
	p = params(2)
	p.Target = "a"
	if _, err := c.Claim(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	after := providers(params(1))
	if after[a] == first[a] || after[a].Resources.Of("VCPU").Used != 2 || after[b] != first[b] {
		t.Errorf("after a claim on a: a rebuilt %v (used %d), b kept %v",
			after[a] != first[a], after[a].Resources.Of("VCPU").Used, after[b] == first[b])
	}
}
