package resources_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// spot writes a claim of VCPU on rp for a new consumer, stored with
// request (its priority and preemptible).
func (f *fixture) spot(rp string, vcpu int64, request string) string {
	f.T.Helper()
	c := uuid.NewString()
	w := ledgertest.NewClaim(c, rp, ledgertest.Res("VCPU", vcpu))
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w},
		State:   &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(request), RootUUID: rp},
		Request: &claimrecords.ClaimRequest{ConsumerUUID: c, Op: "claim", Fingerprint: []byte("f"), Request: []byte(request), Result: []byte(`{}`), Generation: 1},
	}); err != nil {
		f.T.Fatal(err)
	}
	return c
}

// preemptWrite is a claim of vcpu on rp at priority that displaces
// victims.
func (f *fixture) preemptWrite(consumer, rp string, vcpu, priority int64, victims []resources.Preemptible) error {
	return f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{ledgertest.NewClaim(consumer, rp, ledgertest.Res("VCPU", vcpu))},
		State:     &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(fmt.Sprintf(`{"priority": %d}`, priority)), RootUUID: rp},
		Preempt:   &resources.Preemption{Priority: priority, Root: rp, Victims: victims},
	})
}

// TestPreemptibleBelow: the consumers a claim may displace are those
// whose stored claim is preemptible and of lower priority, with what
// they hold.
func TestPreemptibleBelow(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 8))
	low := f.spot(rp, 2, `{"preemptible": true, "priority": -3}`)
	zero := f.spot(rp, 1, `{"preemptible": true}`)
	f.spot(rp, 1, `{"preemptible": false, "priority": -9}`)
	f.spot(rp, 1, `{"priority": -9}`)
	for _, tc := range []struct {
		priority int64
		want     []string
	}{{-3, nil}, {-2, []string{low}}, {0, []string{low}}, {1, []string{low, zero}}} {
		got, err := f.Store.Allocations.PreemptibleBelow(f.Ctx, tc.priority)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, v := range got {
			ids = append(ids, v.ConsumerUUID)
			if len(v.Roots) != 1 || v.Roots[0] != rp || len(v.Allocations) != 1 || v.Allocations[0].ProviderUUID != rp ||
				v.Generation != 1 || v.ProjectID != "proj" || v.UserID != "user" {
				t.Fatalf("below %d: %+v", tc.priority, v)
			}
			if amount, _ := v.Allocations[0].Amount("VCPU"); v.ConsumerUUID == low && (amount != 2 || v.Priority != -3) {
				t.Fatalf("below %d: %+v", tc.priority, v)
			}
		}
		if fmt.Sprint(sortedCopy(ids)) != fmt.Sprint(sortedCopy(tc.want)) {
			t.Fatalf("below %d: %v, want %v", tc.priority, ids, tc.want)
		}
	}
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestPreemptWrite: a claim's write removes its victims' allocations
// (their consumers, stored claims and retry records with them, their
// usage out of the counters), writes its own and records each
// displacement, in one transaction; a victim that changed since it was
// read (its allocations, its priority, no longer preemptible, gone;
// changed while the write waited for its lock, too) makes the write a
// conflict with nothing written.
func TestPreemptWrite(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 4))
	v1 := f.spot(rp, 2, `{"preemptible": true}`)
	v2 := f.spot(rp, 2, `{"preemptible": true, "priority": 1}`)
	plan := func() []resources.Preemptible {
		t.Helper()
		got, err := f.Store.Allocations.PreemptibleBelow(f.Ctx, 5)
		if err != nil || len(got) != 2 {
			t.Fatalf("victims: %v %v", got, err)
		}
		return got
	}
	refused := func(name string, victims []resources.Preemptible, priority int64) {
		t.Helper()
		before := f.Dump()
		le := ledgertest.Rejection(t, f.preemptWrite(uuid.NewString(), rp, 4, priority, victims), fault.ErrConflict)
		if le.Code != fault.CodePreemptionConflict {
			t.Fatalf("%s: %v (%s)", name, le, le.Code)
		}
		if after := f.Dump(); after != before {
			t.Fatalf("%s wrote:\n%s\nwas:\n%s", name, after, before)
		}
	}

	// v2's priority rose meanwhile; then it is no longer preemptible.
	victims := plan()
	f.Exec(`UPDATE claim_state SET request = '{"preemptible": true, "priority": 7}' WHERE consumer_uuid = $1`, v2)
	refused("priority raised", victims, 5)
	f.Exec(`UPDATE claim_state SET request = '{}' WHERE consumer_uuid = $1`, v2)
	refused("no longer preemptible", victims, 5)
	f.Exec(`UPDATE claim_state SET request = '{"preemptible": true, "priority": 1}' WHERE consumer_uuid = $1`, v2)
	// Equal priority never displaces.
	refused("equal priority", plan(), 1)

	// v1's allocations change while the write waits for v1's lock.
	victims = plan()
	tx, err := f.DB.Begin(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(f.Ctx, `UPDATE consumers SET generation = generation + 1 WHERE uuid = $1`, v1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	before := f.Dump()
	go func() { done <- f.preemptWrite(uuid.NewString(), rp, 4, 5, victims) }()
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if le := ledgertest.Rejection(t, <-done, fault.ErrConflict); le.Code != fault.CodePreemptionConflict {
		t.Fatalf("changed under lock: %v", le)
	}
	if after := f.Dump(); after != before {
		t.Fatalf("a conflict wrote:\n%s\nwas:\n%s", after, before)
	}

	// v1 is gone.
	victims = plan()
	if err := f.Store.Allocations.AllocationsDelete(f.Ctx, v1); err != nil {
		t.Fatal(err)
	}
	refused("gone", victims, 5)

	// A claim that displaces both, as read now.
	v1 = f.spot(rp, 2, `{"preemptible": true}`)
	victims = plan()
	hp := uuid.NewString()
	if err := f.preemptWrite(hp, rp, 4, 5, victims); err != nil {
		t.Fatal(err)
	}
	if u := f.Usages(rp); u.Usages["VCPU"] != 4 {
		t.Fatalf("usage after: %+v", u)
	}
	for _, v := range []string{v1, v2} {
		got, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, v)
		if err != nil || got.Consumer != nil || len(got.Allocations) != 0 {
			t.Fatalf("victim %s: %+v %v", v, got, err)
		}
		if st, err := f.Store.Claims.ClaimStateGet(f.Ctx, v); err != nil || st != nil {
			t.Fatalf("victim %s's stored claim: %+v %v", v, st, err)
		}
		if rec, err := f.Store.Claims.ClaimRequestGet(f.Ctx, v, "claim"); err != nil || rec != nil {
			t.Fatalf("victim %s's retry record: %+v %v", v, rec, err)
		}
		pr, err := f.Store.Claims.PreemptionOf(f.Ctx, v)
		if err != nil || pr == nil || pr.PreemptedBy != hp || pr.RootUUID != rp || pr.PreemptorPriority != 5 ||
			pr.ProjectID != "proj" || len(pr.Allocations) != 1 || pr.PreemptedAt.IsZero() {
			t.Fatalf("victim %s's record: %+v %v", v, pr, err)
		}
	}
	page, more, err := f.Store.Claims.Preemptions(f.Ctx, claimrecords.PreemptionsParams{Limit: 1})
	if err != nil || len(page) != 1 || !more {
		t.Fatalf("first page: %v %v %v", page, more, err)
	}
	page, more, err = f.Store.Claims.Preemptions(f.Ctx, claimrecords.PreemptionsParams{Limit: 5, After: page[0].ID})
	if err != nil || len(page) != 1 || more {
		t.Fatalf("second page: %v %v %v", page, more, err)
	}
	f.checkUsages()
}
