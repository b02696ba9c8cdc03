package resources_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// TestGangWriteIsAtomic: a gang whose last member no longer fits, or
// that takes its project past a limit only as a whole, writes nothing:
// no allocation, no stored claim, no gang record, no usage counted; one
// that fits writes every member, its stored claims and its record.
func TestGangWriteIsAtomic(t *testing.T) {
	f := newFixture(t)
	a := f.Provider("a", ledgertest.Inv("VCPU", 8))
	b := f.Provider("b", ledgertest.Inv("VCPU", 8))
	members := func(vcpuB int64) ([]resources.ConsumerAllocations, []*claimrecords.ClaimStateWrite) {
		ms := []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), a, ledgertest.Res("VCPU", 4)),
			ledgertest.NewClaim(uuid.NewString(), a, ledgertest.Res("VCPU", 4)), ledgertest.NewClaim(uuid.NewString(), b, ledgertest.Res("VCPU", vcpuB))}
		var states []*claimrecords.ClaimStateWrite
		for i := range ms {
			ms[i].ProjectID, ms[i].UserID = "p", "u"
			states = append(states, &claimrecords.ClaimStateWrite{Op: "claim", RootUUID: ms[i].Allocations[0].ProviderUUID, LeaseSeconds: 60})
		}
		return ms, states
	}
	nothingOf := func(ms []resources.ConsumerAllocations) {
		t.Helper()
		for _, m := range ms {
			got, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, m.ConsumerUUID)
			if err != nil || got.Consumer != nil || len(got.Allocations) != 0 {
				t.Fatalf("a refused gang wrote %+v (%v)", got, err)
			}
			if st, err := f.Store.Claims.ClaimStateGet(f.Ctx, m.ConsumerUUID); err != nil || st != nil {
				t.Fatalf("a refused gang stored %+v (%v)", st, err)
			}
			if g, err := f.Store.Claims.GangOf(f.Ctx, m.ConsumerUUID); err != nil || g != nil {
				t.Fatalf("a refused gang recorded %+v (%v)", g, err)
			}
		}
		if u := f.Usages(a); u.Usages["VCPU"] != 0 {
			t.Fatalf("a refused gang left %d VCPU on a", u.Usages["VCPU"])
		}
	}

	ms, states := members(9) // the last member does not fit on b
	ledgertest.Rejection(t, f.Store.Allocations.GangWrite(f.Ctx, resources.GangWriteParams{ID: uuid.NewString(), Members: ms, States: states}), fault.ErrConflict)
	nothingOf(ms)

	ms, states = members(4)
	q := &quotas.Quota{Given: map[string]quotas.Limits{"p": {"VCPU": 10}}}
	le := ledgertest.Rejection(t, f.Store.Allocations.GangWrite(f.Ctx, resources.GangWriteParams{ID: uuid.NewString(), Members: ms, States: states, Quota: q}), fault.ErrForbidden)
	if le.Code != fault.CodeOverQuota {
		t.Fatalf("over quota: %v (%s)", le, le.Code)
	}
	nothingOf(ms)

	id := uuid.NewString()
	if err := f.Store.Allocations.GangWrite(f.Ctx, resources.GangWriteParams{ID: id, Domain: "rack", Members: ms, States: states}); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		st, err := f.Store.Claims.ClaimStateGet(f.Ctx, m.ConsumerUUID)
		if err != nil || st == nil || st.State != claimrecords.ClaimProvisional {
			t.Fatalf("member %s's stored claim %+v (%v)", m.ConsumerUUID, st, err)
		}
		g, err := f.Store.Claims.GangOf(f.Ctx, m.ConsumerUUID)
		if err != nil || g == nil || g.ID != id || g.Domain != "rack" || len(g.Members) != 3 {
			t.Fatalf("member %s's gang %+v (%v)", m.ConsumerUUID, g, err)
		}
	}
	if ua, ub := f.Usages(a), f.Usages(b); ua.Usages["VCPU"] != 8 || ub.Usages["VCPU"] != 4 {
		t.Fatalf("usages %v %v", ua.Usages, ub.Usages)
	}
	f.checkUsages()

	// One member deleted: the others stay, and so does their gang.
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{{ConsumerUUID: ms[0].ConsumerUUID}}); err != nil {
		t.Fatal(err)
	}
	if g, err := f.Store.Claims.GangOf(f.Ctx, ms[1].ConsumerUUID); err != nil || g == nil || len(g.Members) != 2 {
		t.Fatalf("the gang after one member left: %+v (%v)", g, err)
	}
	f.checkUsages()
}

// TestGangWriteRecordsRequests: the records a gang's retries are answered
// from are written in the gang's transaction: none for a gang refused,
// each member's for a gang written.
func TestGangWriteRecordsRequests(t *testing.T) {
	f := newFixture(t)
	a := f.Provider("a", ledgertest.Inv("VCPU", 8))
	gang := func(vcpu int64) ([]resources.ConsumerAllocations, []*claimrecords.ClaimRequest) {
		ms := []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), a, ledgertest.Res("VCPU", 4)),
			ledgertest.NewClaim(uuid.NewString(), a, ledgertest.Res("VCPU", vcpu))}
		var reqs []*claimrecords.ClaimRequest
		for i := range ms {
			ms[i].ProjectID, ms[i].UserID = "p", "u"
			reqs = append(reqs, &claimrecords.ClaimRequest{ConsumerUUID: ms[i].ConsumerUUID, Op: "gang", Fingerprint: []byte{1, byte(i)},
				Request: []byte(`{"members": 2}`), Result: []byte(`{"member": ` + string(rune('0'+i)) + `}`), Generation: 1})
		}
		return ms, reqs
	}

	ms, reqs := gang(5) // 9 VCPU on 8: refused
	ledgertest.Rejection(t, f.Store.Allocations.GangWrite(f.Ctx, resources.GangWriteParams{ID: uuid.NewString(), Members: ms, Requests: reqs}), fault.ErrConflict)
	for _, m := range ms {
		if r, err := f.Store.Claims.ClaimRequestGet(f.Ctx, m.ConsumerUUID, "gang"); err != nil || r != nil {
			t.Fatalf("a refused gang recorded %+v (%v)", r, err)
		}
	}

	ms, reqs = gang(4)
	if err := f.Store.Allocations.GangWrite(f.Ctx, resources.GangWriteParams{ID: uuid.NewString(), Members: ms, Requests: reqs}); err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		r, err := f.Store.Claims.ClaimRequestConfirmed(f.Ctx, m.ConsumerUUID, "gang")
		if err != nil || r == nil || string(r.Fingerprint) != string([]byte{1, byte(i)}) || r.Generation != 1 ||
			string(r.Result) != `{"member": `+string(rune('0'+i))+`}` {
			t.Fatalf("member %d's record %+v (%v)", i, r, err)
		}
	}
}
