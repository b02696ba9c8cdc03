package claimrecords_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// claimWith is a claim's write of consumer's allocations of res on rp,
// storing a claim with lease seconds (0: none) in mode.
func claimWith(consumer, rp string, gen *int64, lease int64, mode claimrecords.LeaseMode, request string) resources.ClaimWriteParams {
	a := ledgertest.Alloc(consumer, rp, ledgertest.Res("VCPU", 1))
	a.CheckGeneration, a.Generation = true, gen
	return resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{a},
		State: &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(request), RootUUID: rp, LeaseSeconds: lease, Mode: mode}}
}

// stateOf reads consumer's stored claim, failing the test on an error.
func (f *fixture) stateOf(consumer string) *claimrecords.ClaimState {
	f.T.Helper()
	st, err := f.Store.Claims.ClaimStateGet(f.Ctx, consumer)
	if err != nil {
		f.T.Fatal(err)
	}
	return st
}

// TestClaimStateStoredByEveryPath: a claim stores its request, root and
// lease in its own transaction whichever path writes it (the fast path
// alone, in a batch, the general path), and a Placement-API write of a
// new consumer stores none.
func TestClaimStateStoredByEveryPath(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 64))

	lone := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(lone, rp, nil, 30, claimrecords.LeaseSet, `{"resources": {"VCPU": 1}}`)); err != nil {
		t.Fatal(err)
	}
	st := f.stateOf(lone)
	if st == nil || st.State != claimrecords.ClaimProvisional || st.LeaseSeconds != 30 || st.LeaseExpiresAt == nil ||
		st.RootUUID != rp || st.Op != "claim" || st.Expired {
		t.Fatalf("fast path's stored claim: %+v", st)
	}
	var req map[string]any
	if err := json.Unmarshal(st.Request, &req); err != nil || req["resources"] == nil {
		t.Fatalf("stored request %s: %v", st.Request, err)
	}
	if left := time.Until(*st.LeaseExpiresAt); left < 20*time.Second || left > 40*time.Second {
		t.Errorf("lease expires in %v, want about 30s", left)
	}

	// A batch: concurrent claims, half with a lease; some commit together.
	var wg sync.WaitGroup
	consumers := make([]string, 24)
	for i := range consumers {
		consumers[i] = uuid.NewString()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(consumers[i], rp, nil, int64(i%2)*60, claimrecords.LeaseSet, `{}`)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, c := range consumers {
		st := f.stateOf(c)
		want := claimrecords.ClaimPermanent
		if i%2 == 1 {
			want = claimrecords.ClaimProvisional
		}
		if st == nil || st.State != want || (st.LeaseExpiresAt != nil) != (want == claimrecords.ClaimProvisional) {
			t.Errorf("claim %d: stored %+v, want %s", i, st, want)
		}
	}

	// The general path: the same consumer again, at its generation, no lease.
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(lone, rp, ledgertest.Gen(1), 0, claimrecords.LeaseSet, `{"name": "again"}`)); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(lone); st.State != claimrecords.ClaimPermanent || st.LeaseExpiresAt != nil || st.LeaseSeconds != 0 {
		t.Fatalf("general path's stored claim: %+v", st)
	}

	// A Placement-API write of a new consumer stores none.
	placed := ledgertest.Alloc(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))
	placed.CheckGeneration = true
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{placed}); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(placed.ConsumerUUID); st != nil {
		t.Fatalf("Placement-API write stored a claim: %+v", st)
	}
}

// TestClaimStatePlacementWritesSettle: a Placement-API write of a
// provisional claim's consumer makes it permanent; the end of the
// consumer's allocations removes its stored claim.
func TestClaimStatePlacementWritesSettle(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 8))
	c := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(c, rp, nil, 60, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	put := ledgertest.Alloc(c, rp, ledgertest.Res("VCPU", 2))
	put.CheckGeneration, put.Generation = true, ledgertest.Gen(1)
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{put}); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(c); st == nil || st.State != claimrecords.ClaimPermanent || st.LeaseExpiresAt != nil {
		t.Fatalf("after PUT /allocations: %+v", st)
	}
	if err := f.Store.Allocations.AllocationsDelete(f.Ctx, c); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(c); st != nil {
		t.Fatalf("after DELETE /allocations: %+v", st)
	}

	// A write that empties the consumer removes it too.
	c2 := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(c2, rp, nil, 60, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	empty := resources.ConsumerAllocations{ConsumerUUID: c2, CheckGeneration: true, Generation: ledgertest.Gen(1)}
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{empty}); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(c2); st != nil {
		t.Fatalf("after emptying: %+v", st)
	}
}

// TestClaimLeaseSet: PATCH's renewal and confirmation, and its refusals,
// each of which changes nothing.
func TestClaimLeaseSet(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 8))
	c := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(c, rp, nil, 10, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	st, err := f.Store.Claims.ClaimLeaseSet(f.Ctx, c, 3600)
	if err != nil || st.State != claimrecords.ClaimProvisional || st.LeaseSeconds != 3600 || time.Until(*st.LeaseExpiresAt) < 50*time.Minute {
		t.Fatalf("renew: %+v %v", st, err)
	}
	if st, err = f.Store.Claims.ClaimLeaseSet(f.Ctx, c, 0); err != nil || st.State != claimrecords.ClaimPermanent || st.LeaseExpiresAt != nil {
		t.Fatalf("confirm: %+v %v", st, err)
	}
	if st, err = f.Store.Claims.ClaimLeaseSet(f.Ctx, c, 0); err != nil || st.State != claimrecords.ClaimPermanent {
		t.Fatalf("confirm again: %+v %v", st, err)
	}
	if _, err := f.Store.Claims.ClaimLeaseSet(f.Ctx, c, 30); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("lease on a permanent claim: %v", err)
	}
	if _, err := f.Store.Claims.ClaimLeaseSet(f.Ctx, uuid.NewString(), 30); !fault.HasCode(err, fault.ErrNotFound, fault.CodeNoClaim) {
		t.Fatalf("no claim: %v", err)
	}

	c2 := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(c2, rp, nil, 10, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	f.Expire(c2)
	before := f.stateOf(c2)
	if !before.Expired {
		t.Fatalf("not expired: %+v", before)
	}
	for _, lease := range []int64{0, 30} {
		if _, err := f.Store.Claims.ClaimLeaseSet(f.Ctx, c2, lease); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseExpired) {
			t.Fatalf("PATCH %d of an expired lease: %v", lease, err)
		}
	}
	if after := f.stateOf(c2); after.State != claimrecords.ClaimProvisional || !after.LeaseExpiresAt.Equal(*before.LeaseExpiresAt) {
		t.Fatalf("a refused PATCH changed the claim: %+v", after)
	}
}

// TestClaimWriteIfLeaseExpired: the reaper's release writes only a lease
// that has run out, and takes the stored claim with the consumer.
func TestClaimWriteIfLeaseExpired(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 8))
	c := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(c, rp, nil, 60, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	release := resources.ClaimWriteParams{IfLeaseExpired: c,
		Consumers: []resources.ConsumerAllocations{{ConsumerUUID: c, CheckGeneration: true, Generation: ledgertest.Gen(1)}}}
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, release); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseNotExpired) {
		t.Fatalf("release of a running lease: %v", err)
	}
	if u := f.Usages(rp); u.Usages["VCPU"] != 1 {
		t.Fatalf("refused release changed usage: %v", u.Usages)
	}
	f.Expire(c)
	expired, err := f.Store.Claims.ClaimLeasesExpired(f.Ctx, 10)
	if err != nil || len(expired) != 1 || expired[0].ConsumerUUID != c {
		t.Fatalf("expired leases: %+v %v", expired, err)
	}
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, release); err != nil {
		t.Fatal(err)
	}
	if u := f.Usages(rp); u.Usages["VCPU"] != 0 {
		t.Fatalf("released lease still uses %v", u.Usages)
	}
	if st := f.stateOf(c); st != nil {
		t.Fatalf("released claim still stored: %+v", st)
	}
	if expired, _ := f.Store.Claims.ClaimLeasesExpired(f.Ctx, 10); len(expired) != 0 {
		t.Fatalf("still expired: %+v", expired)
	}
}

// TestClaimStateLeaseModes: a lease over permanent allocations is
// refused with nothing written; a reschedule without a lease keeps the
// state (restarting a provisional lease); a move keeps what the claim
// was, which a revert restores and a confirm drops.
func TestClaimStateLeaseModes(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 8))
	perm := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(perm, rp, nil, 0, claimrecords.LeaseSet, `{"v": 1}`)); err != nil {
		t.Fatal(err)
	}
	err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(perm, rp, ledgertest.Gen(1), 30, claimrecords.LeaseSet, `{"v": 2}`))
	if !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("lease over a permanent claim: %v", err)
	}
	if st := f.stateOf(perm); st.State != claimrecords.ClaimPermanent || string(st.Request) != `{"v": 1}` {
		t.Fatalf("a refused lease changed the claim: %+v %s", st, st.Request)
	}
	// A Placement-API consumer (no stored claim) is permanent too.
	placed := ledgertest.Alloc(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))
	placed.CheckGeneration = true
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{placed}); err != nil {
		t.Fatal(err)
	}
	err = f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(placed.ConsumerUUID, rp, ledgertest.Gen(1), 30, claimrecords.LeaseSet, `{}`))
	if !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("lease over Placement-API allocations: %v", err)
	}

	prov := uuid.NewString()
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, claimWith(prov, rp, nil, 30, claimrecords.LeaseSet, `{"v": 1}`)); err != nil {
		t.Fatal(err)
	}
	f.Expire(prov)
	keep := claimWith(prov, rp, ledgertest.Gen(1), 0, claimrecords.LeaseKeep, `{"v": 2}`)
	keep.State.Op = "reschedule"
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, keep); err != nil {
		t.Fatal(err)
	}
	st := f.stateOf(prov)
	if st.State != claimrecords.ClaimProvisional || st.Expired || st.LeaseSeconds != 30 || st.Op != "reschedule" {
		t.Fatalf("reschedule kept %+v", st)
	}

	// A move with a lease, then revert: provisional again, as before.
	mig := uuid.NewString()
	move := claimWith(prov, rp, ledgertest.Gen(2), 120, claimrecords.LeaseMove, `{"v": 3}`)
	move.State.Op = "move"
	move.Move = &claimrecords.MoveRecord{ConsumerUUID: prov, MigrationUUID: mig, Reason: "relocation", SourceRoot: rp}
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, move); err != nil {
		t.Fatal(err)
	}
	st = f.stateOf(prov)
	if st.State != claimrecords.ClaimMoving || st.LeaseSeconds != 120 || st.MigrationUUID != mig || string(st.Request) != `{"v": 3}` {
		t.Fatalf("moving: %+v", st)
	}
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{ForgetMove: prov, MoveEnd: claimrecords.MoveReverted}); err != nil {
		t.Fatal(err)
	}
	st = f.stateOf(prov)
	if st.State != claimrecords.ClaimProvisional || st.LeaseSeconds != 30 || string(st.Request) != `{"v": 2}` || st.MigrationUUID != "" {
		t.Fatalf("reverted: %+v %s", st, st.Request)
	}

	// A move of a permanent claim, confirmed: permanent.
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{State: &claimrecords.ClaimStateWrite{Op: "move", Mode: claimrecords.LeaseMove,
		LeaseSeconds: 60}, Consumers: []resources.ConsumerAllocations{func() resources.ConsumerAllocations {
		a := ledgertest.Alloc(perm, rp, ledgertest.Res("VCPU", 1))
		a.CheckGeneration, a.Generation = true, ledgertest.Gen(1)
		return a
	}()}, Move: &claimrecords.MoveRecord{ConsumerUUID: perm, MigrationUUID: uuid.NewString(), Reason: "relocation"}}); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(perm); st.State != claimrecords.ClaimMoving || st.LeaseExpiresAt == nil {
		t.Fatalf("moving: %+v", st)
	}
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{ForgetMove: perm, MoveEnd: claimrecords.MoveConfirmed}); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(perm); st.State != claimrecords.ClaimPermanent || st.LeaseExpiresAt != nil {
		t.Fatalf("confirmed: %+v", st)
	}
}

// TestExclusive: while one store holds an advisory lock, another's
// Exclusive does not run; once released, or once the holder's
// connections are gone, it does.
func TestExclusive(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	a, b := ledgertest.OpenStore(t, dbURL), ledgertest.OpenStore(t, dbURL)
	ctx := context.Background()
	inside := make(chan struct{})
	done := make(chan struct{})
	go func() {
		ran, err := a.Claims.Exclusive(ctx, claimrecords.LockClaimLeases, func(context.Context) error {
			close(inside)
			<-done
			return nil
		})
		if !ran || err != nil {
			t.Errorf("first holder: ran %v, %v", ran, err)
		}
	}()
	<-inside
	ran, err := b.Claims.Exclusive(ctx, claimrecords.LockClaimLeases, func(context.Context) error { return errors.New("ran") })
	if ran || err != nil {
		t.Fatalf("second holder ran %v, %v while the first held the lock", ran, err)
	}
	close(done)
	ledgertest.WaitFor(t, func() bool {
		ran, err := b.Claims.Exclusive(ctx, claimrecords.LockClaimLeases, func(context.Context) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return ran
	})

	// A holder whose connection is cut (a process killed) lets go.
	held, cut := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = a.Claims.Exclusive(ctx, claimrecords.LockClaimLeases, func(context.Context) error {
			close(held)
			<-cut
			return nil
		})
	}()
	<-held
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
		AND objid = $1::bigint & x'ffffffff'::bigint`, int64(claimrecords.LockClaimLeases)); err != nil {
		t.Fatal(err)
	}
	ledgertest.WaitFor(t, func() bool {
		ran, err := b.Claims.Exclusive(ctx, claimrecords.LockClaimLeases, func(context.Context) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return ran
	})
	close(cut)
}
