package scheduling_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// claimWith writes a claim of res on rp for a new consumer, stored with
// request (its priority and preemptible).
func (f *fixture) claimWith(rp, request string, res ...engine.ResourceAmount) string {
	f.T.Helper()
	c := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{ledgertest.NewClaim(c, rp, res...)},
		State:     &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(request), RootUUID: rp},
	}); err != nil {
		f.T.Fatal(err)
	}
	return c
}

// TestPreemptibleUsage: per provider and class, what preemptible
// consumers that are not moving hold, with their lowest priority; other
// consumers, and providers without preemptible ones, count nothing.
func TestPreemptibleUsage(t *testing.T) {
	f := newFixture(t)
	rp1 := f.Provider("cn1", ledgertest.Inv("VCPU", 16), ledgertest.Inv("MEMORY_MB", 4096))
	rp2 := f.Provider("cn2", ledgertest.Inv("VCPU", 16))
	f.claimWith(rp1, `{"preemptible": true, "priority": -3}`, ledgertest.Res("VCPU", 2), ledgertest.Res("MEMORY_MB", 512))
	f.claimWith(rp1, `{"preemptible": true}`, ledgertest.Res("VCPU", 3))
	f.claimWith(rp1, `{"priority": -9}`, ledgertest.Res("VCPU", 4))
	f.claimWith(rp2, `{"preemptible": false}`, ledgertest.Res("VCPU", 1))
	moving := f.claimWith(rp2, `{"preemptible": true}`, ledgertest.Res("VCPU", 5))

	got, err := f.Store.Cloud.PreemptibleUsage(f.Ctx, []string{rp1, rp2, "not-a-uuid"})
	if err != nil {
		t.Fatal(err)
	}
	want1 := []engine.PreemptibleUsage{{ResourceClass: "MEMORY_MB", Used: 512, LowestPriority: -3},
		{ResourceClass: "VCPU", Used: 5, LowestPriority: -3}}
	want2 := []engine.PreemptibleUsage{{ResourceClass: "VCPU", Used: 5, LowestPriority: 0}}
	if len(got) != 2 || !slices.Equal(got[rp1], want1) || !slices.Equal(got[rp2], want2) {
		t.Fatalf("preemptible usage %+v, want %s: %+v, %s: %+v", got, rp1, want1, rp2, want2)
	}

	// A moving consumer is not one a claim may displace.
	f.Exec(`UPDATE claim_state SET state = 'moving' WHERE consumer_uuid = $1`, moving)
	got, err = f.Store.Cloud.PreemptibleUsage(f.Ctx, []string{rp2})
	if err != nil || len(got) != 0 {
		t.Fatalf("with the spot consumer moving: %+v %v", got, err)
	}
}
