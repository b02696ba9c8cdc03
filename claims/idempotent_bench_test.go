package claims_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// BenchmarkClaimWriteRecorded is the fast-path claim write with and
// without the record that makes it idempotent (a fingerprint, the
// request and an answer of about 1.5 kB, the size of a claim's answer
// with its steps and two alternates).
func BenchmarkClaimWriteRecorded(b *testing.B) {
	result := []byte(`{"steps":"` + string(bytes.Repeat([]byte("x"), 1500)) + `"}`)
	for _, recorded := range []bool{false, true} {
		b.Run(fmt.Sprintf("recorded=%v", recorded), func(b *testing.B) {
			f := newFixture(b)
			var provs []string
			for i := range 50 {
				provs = append(provs, f.provider(fmt.Sprintf("cn%d", i), 1<<30))
			}
			b.ResetTimer()
			for i := range b.N {
				consumer := uuid.NewString()
				p := resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{{ConsumerUUID: consumer, ProjectID: "p",
					UserID: "u", CheckGeneration: true, Allocations: []engine.Allocation{{ProviderUUID: provs[i%len(provs)],
						Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}}}
				if recorded {
					p.Request = &claimrecords.ClaimRequest{ConsumerUUID: consumer, Op: "claim", Fingerprint: make([]byte, 32),
						Request: []byte(`{"resources":{"VCPU":1}}`), Result: result, Generation: 1}
				}
				if err := f.store.Allocations.ClaimWrite(f.ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
