package claims_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// BenchmarkClaimWrite compares the claim's write as claims make it
// (name, sticky keys, the stored claim) with a bare new-consumer write,
// both on the ledger's fast path, one provider per write over 50
// providers; stored=false leaves out the stored claim (claim_state), to
// see what it costs.
func BenchmarkClaimWrite(b *testing.B) {
	for _, v := range []struct{ details, stored bool }{{false, false}, {true, false}, {true, true}} {
		details := v.details
		b.Run(fmt.Sprintf("details=%v,stored=%v", details, v.stored), func(b *testing.B) {
			f := newFixture(b)
			var provs []string
			for i := range 50 {
				provs = append(provs, f.provider(fmt.Sprintf("cn%d", i), 1<<30))
			}
			b.ResetTimer()
			for i := range b.N {
				w := resources.ConsumerAllocations{ConsumerUUID: uuid.NewString(), ProjectID: "p", UserID: "u",
					CheckGeneration: true, Allocations: []engine.Allocation{{ProviderUUID: provs[i%len(provs)],
						Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}
				if details {
					w.Name, w.CopyStickyKeys = "vm", true
				}
				cw := resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w}}
				if v.stored {
					cw.State = &claimrecords.ClaimStateWrite{Op: "claim", RootUUID: provs[i%len(provs)], Request: []byte(
						`{"consumer_uuid": "` + w.ConsumerUUID + `", "project_id": "p", "user_id": "u", "name": "vm", ` +
							`"resources": {"VCPU": 4, "MEMORY_MB": 16384, "DISK_GB": 100}}`)}
				}
				if err := f.store.Allocations.ClaimWrite(f.ctx, cw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
