package claims_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
)

// BenchmarkClaimWrite compares the claim's write as claims make it
// (name, properties, sticky keys: the ledger's general path) with a bare
// new-consumer write (the ledger's fast path), one provider per write
// over 50 providers.
func BenchmarkClaimWrite(b *testing.B) {
	for _, details := range []bool{false, true} {
		b.Run(fmt.Sprintf("details=%v", details), func(b *testing.B) {
			f := newFixture(b)
			var provs []string
			for i := range 50 {
				provs = append(provs, f.provider(fmt.Sprintf("cn%d", i), 1<<30))
			}
			b.ResetTimer()
			for i := range b.N {
				w := ledger.ConsumerAllocations{ConsumerUUID: uuid.NewString(), ProjectID: "p", UserID: "u",
					CheckGeneration: true, Allocations: []engine.Allocation{{ProviderUUID: provs[i%len(provs)],
						Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}
				if details {
					w.Name, w.CopyStickyKeys = "vm", true
				}
				if err := f.store.ClaimWrite(f.ctx, ledger.ClaimWriteParams{Consumers: []ledger.ConsumerAllocations{w}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
