package claims_test

import (
	"fmt"
	"testing"
)

// BenchmarkClaimPreemptibleCloud is a whole claim (ranking and write,
// on PostgreSQL) that fits, in a cloud of 50 hosts with no preemptible
// consumer and in the same cloud where every host also holds a
// preemptible consumer of lower priority: the claim's cost is the same,
// since only a claim that found no candidate reads them
// (docs/performance.md, "Preemption").
func BenchmarkClaimPreemptibleCloud(b *testing.B) {
	for _, preemptible := range []bool{false, true} {
		b.Run(fmt.Sprintf("preemptible=%v", preemptible), func(b *testing.B) {
			f := newFixture(b)
			var provs []string
			for i := range 50 {
				provs = append(provs, f.provider(fmt.Sprintf("cn%d", i), 1<<20))
			}
			c := f.claimer(`{"weighers": [{"name": "spread"}]}`, "")
			for _, rp := range provs {
				p := params(1)
				p.Target, p.Preemptible, p.Priority = rp, preemptible, -1
				if _, err := c.Claim(f.ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				p := params(1)
				if _, err := c.Claim(f.ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if n := c.PreemptionSearches(); n != 0 {
				b.Fatalf("%d claims searched for victims", n)
			}
		})
	}
}
