package claims_test

import (
	"context"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/scheduler"
)

// countingCloud sets every provider's consumer count to n when asked; it
// answers no scriptlet.
type countingCloud struct {
	scheduler.CloudData
	n int
}

func (e countingCloud) Enrich(_ context.Context, needs scheduler.Needs, provs map[string]*scheduler.ProviderView) error {
	if needs.Consumers {
		for _, p := range provs {
			p.Consumers = e.n
		}
	}
	return nil
}

// A claim's views of its providers are its own: an enricher's writes
// stay with the claim that asked for them, and a claim sees the usage a
// claim before it left.
func TestClaimerViews(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimerWith(`{}`, "", countingCloud{n: 7})
	providers := func(p claims.Params) map[string]*scheduler.ProviderView {
		t.Helper()
		ex, err := c.Explain(f.ctx, p)
		if err != nil || ex.Ranking == nil || len(ex.Ranking.Ranked) == 0 {
			t.Fatalf("explain: %v %+v", err, ex)
		}
		return ex.Ranking.Ranked[0].Cand.Providers
	}
	first := providers(params(1))
	if second := providers(params(1)); second[a] == first[a] || second[b] == first[b] {
		t.Errorf("two claims shared a view")
	}

	// A policy that needs consumer counts has them filled.
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "max_consumers", "params": {"max": 100}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := scheduler.NewPolicy(pc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := params(1)
	p.PolicyOverride = pol
	if enriched := providers(p); enriched[a].Consumers != 7 {
		t.Errorf("enriched: consumers %d, want 7", enriched[a].Consumers)
	}
	if again := providers(params(1)); again[a].Consumers != 0 || first[a].Consumers != 0 {
		t.Errorf("the enricher's write reached another claim: consumers %d, %d", again[a].Consumers, first[a].Consumers)
	}

	// A claim on a shows in the next claim's view of a, not of b.
	p = params(2)
	p.Target = "a"
	if _, err := c.ClaimUnrecorded(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	after := providers(params(1))
	if after[a].Resources.Of("VCPU").Used != 2 || after[b].Resources.Of("VCPU").Used != 0 {
		t.Errorf("after a claim on a: a used %d, b used %d", after[a].Resources.Of("VCPU").Used, after[b].Resources.Of("VCPU").Used)
	}
}
