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
	"github.com/berthd/berth/ledger/resources"
)

// claimWith is a claim's write of consumer's allocations of res on rp,
// storing a claim with lease seconds (0: none) in mode.
func claimWith(consumer, rp string, gen *int64, lease int64, mode claimrecords.LeaseMode, request string) resources.ClaimWriteParams {
	a := alloc(consumer, rp, res("VCPU", 1))
	a.CheckGeneration, a.Generation = true, gen
	return resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{a},
		State: &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(request), RootUUID: rp, LeaseSeconds: lease, Mode: mode}}
}

// stateOf reads consumer's stored claim, failing the test on an error.
func (f *fixture) stateOf(consumer string) *claimrecords.ClaimState {
	f.t.Helper()
	st, err := f.store.Claims.ClaimStateGet(f.ctx, consumer)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// expire moves consumer's lease into the past, as time would.
func (f *fixture) expire(consumer string) {
	f.t.Helper()
	if _, err := f.db.Exec(f.ctx, `UPDATE claim_state SET lease_expires_at = now() - interval '1 second'
		WHERE consumer_uuid = $1`, consumer); err != nil {
		f.t.Fatal(err)
	}
}

// TestClaimStateStoredByEveryPath: a claim stores its request, root and
// lease in its own transaction whichever path writes it (the fast path
// alone, in a batch, the general path), and a Placement-API write of a
// new consumer stores none.
func TestClaimStateStoredByEveryPath(t *testing.T) {
	f := newFixture(t)
	rp := f.provider("cn1", inv("VCPU", 64))

	lone := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(lone, rp, nil, 30, claimrecords.LeaseSet, `{"resources": {"VCPU": 1}}`)); err != nil {
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
			if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(consumers[i], rp, nil, int64(i%2)*60, claimrecords.LeaseSet, `{}`)); err != nil {
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
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(lone, rp, gen(1), 0, claimrecords.LeaseSet, `{"name": "again"}`)); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(lone); st.State != claimrecords.ClaimPermanent || st.LeaseExpiresAt != nil || st.LeaseSeconds != 0 {
		t.Fatalf("general path's stored claim: %+v", st)
	}

	// A Placement-API write of a new consumer stores none.
	placed := alloc(uuid.NewString(), rp, res("VCPU", 1))
	placed.CheckGeneration = true
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{placed}); err != nil {
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
	rp := f.provider("cn1", inv("VCPU", 8))
	c := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(c, rp, nil, 60, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	put := alloc(c, rp, res("VCPU", 2))
	put.CheckGeneration, put.Generation = true, gen(1)
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{put}); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(c); st == nil || st.State != claimrecords.ClaimPermanent || st.LeaseExpiresAt != nil {
		t.Fatalf("after PUT /allocations: %+v", st)
	}
	if err := f.store.Allocations.AllocationsDelete(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(c); st != nil {
		t.Fatalf("after DELETE /allocations: %+v", st)
	}

	// A write that empties the consumer removes it too.
	c2 := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(c2, rp, nil, 60, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	empty := resources.ConsumerAllocations{ConsumerUUID: c2, CheckGeneration: true, Generation: gen(1)}
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{empty}); err != nil {
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
	rp := f.provider("cn1", inv("VCPU", 8))
	c := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(c, rp, nil, 10, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	st, err := f.store.Claims.ClaimLeaseSet(f.ctx, c, 3600)
	if err != nil || st.State != claimrecords.ClaimProvisional || st.LeaseSeconds != 3600 || time.Until(*st.LeaseExpiresAt) < 50*time.Minute {
		t.Fatalf("renew: %+v %v", st, err)
	}
	if st, err = f.store.Claims.ClaimLeaseSet(f.ctx, c, 0); err != nil || st.State != claimrecords.ClaimPermanent || st.LeaseExpiresAt != nil {
		t.Fatalf("confirm: %+v %v", st, err)
	}
	if st, err = f.store.Claims.ClaimLeaseSet(f.ctx, c, 0); err != nil || st.State != claimrecords.ClaimPermanent {
		t.Fatalf("confirm again: %+v %v", st, err)
	}
	if _, err := f.store.Claims.ClaimLeaseSet(f.ctx, c, 30); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("lease on a permanent claim: %v", err)
	}
	if _, err := f.store.Claims.ClaimLeaseSet(f.ctx, uuid.NewString(), 30); !fault.HasCode(err, fault.ErrNotFound, fault.CodeNoClaim) {
		t.Fatalf("no claim: %v", err)
	}

	c2 := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(c2, rp, nil, 10, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	f.expire(c2)
	before := f.stateOf(c2)
	if !before.Expired {
		t.Fatalf("not expired: %+v", before)
	}
	for _, lease := range []int64{0, 30} {
		if _, err := f.store.Claims.ClaimLeaseSet(f.ctx, c2, lease); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseExpired) {
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
	rp := f.provider("cn1", inv("VCPU", 8))
	c := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(c, rp, nil, 60, claimrecords.LeaseSet, `{}`)); err != nil {
		t.Fatal(err)
	}
	release := resources.ClaimWriteParams{IfLeaseExpired: c,
		Consumers: []resources.ConsumerAllocations{{ConsumerUUID: c, CheckGeneration: true, Generation: gen(1)}}}
	if err := f.store.Allocations.ClaimWrite(f.ctx, release); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseNotExpired) {
		t.Fatalf("release of a running lease: %v", err)
	}
	if u := f.usages(rp); u.Usages["VCPU"] != 1 {
		t.Fatalf("refused release changed usage: %v", u.Usages)
	}
	f.expire(c)
	expired, err := f.store.Claims.ClaimLeasesExpired(f.ctx, 10)
	if err != nil || len(expired) != 1 || expired[0].ConsumerUUID != c {
		t.Fatalf("expired leases: %+v %v", expired, err)
	}
	if err := f.store.Allocations.ClaimWrite(f.ctx, release); err != nil {
		t.Fatal(err)
	}
	if u := f.usages(rp); u.Usages["VCPU"] != 0 {
		t.Fatalf("released lease still uses %v", u.Usages)
	}
	if st := f.stateOf(c); st != nil {
		t.Fatalf("released claim still stored: %+v", st)
	}
	if expired, _ := f.store.Claims.ClaimLeasesExpired(f.ctx, 10); len(expired) != 0 {
		t.Fatalf("still expired: %+v", expired)
	}
}

// TestClaimStateLeaseModes: a lease over permanent allocations is
// refused with nothing written; a reschedule without a lease keeps the
// state (restarting a provisional lease); a move keeps what the claim
// was, which a revert restores and a confirm drops.
func TestClaimStateLeaseModes(t *testing.T) {
	f := newFixture(t)
	rp := f.provider("cn1", inv("VCPU", 8))
	perm := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(perm, rp, nil, 0, claimrecords.LeaseSet, `{"v": 1}`)); err != nil {
		t.Fatal(err)
	}
	err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(perm, rp, gen(1), 30, claimrecords.LeaseSet, `{"v": 2}`))
	if !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("lease over a permanent claim: %v", err)
	}
	if st := f.stateOf(perm); st.State != claimrecords.ClaimPermanent || string(st.Request) != `{"v": 1}` {
		t.Fatalf("a refused lease changed the claim: %+v %s", st, st.Request)
	}
	// A Placement-API consumer (no stored claim) is permanent too.
	placed := alloc(uuid.NewString(), rp, res("VCPU", 1))
	placed.CheckGeneration = true
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{placed}); err != nil {
		t.Fatal(err)
	}
	err = f.store.Allocations.ClaimWrite(f.ctx, claimWith(placed.ConsumerUUID, rp, gen(1), 30, claimrecords.LeaseSet, `{}`))
	if !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("lease over Placement-API allocations: %v", err)
	}

	prov := uuid.NewString()
	if err := f.store.Allocations.ClaimWrite(f.ctx, claimWith(prov, rp, nil, 30, claimrecords.LeaseSet, `{"v": 1}`)); err != nil {
		t.Fatal(err)
	}
	f.expire(prov)
	keep := claimWith(prov, rp, gen(1), 0, claimrecords.LeaseKeep, `{"v": 2}`)
	keep.State.Op = "reschedule"
	if err := f.store.Allocations.ClaimWrite(f.ctx, keep); err != nil {
		t.Fatal(err)
	}
	st := f.stateOf(prov)
	if st.State != claimrecords.ClaimProvisional || st.Expired || st.LeaseSeconds != 30 || st.Op != "reschedule" {
		t.Fatalf("reschedule kept %+v", st)
	}

	// A move with a lease, then revert: provisional again, as before.
	mig := uuid.NewString()
	move := claimWith(prov, rp, gen(2), 120, claimrecords.LeaseMove, `{"v": 3}`)
	move.State.Op = "move"
	move.Move = &claimrecords.MoveRecord{ConsumerUUID: prov, MigrationUUID: mig, Reason: "relocation", SourceRoot: rp}
	if err := f.store.Allocations.ClaimWrite(f.ctx, move); err != nil {
		t.Fatal(err)
	}
	st = f.stateOf(prov)
	if st.State != claimrecords.ClaimMoving || st.LeaseSeconds != 120 || st.MigrationUUID != mig || string(st.Request) != `{"v": 3}` {
		t.Fatalf("moving: %+v", st)
	}
	if err := f.store.Allocations.ClaimWrite(f.ctx, resources.ClaimWriteParams{ForgetMove: prov, MoveEnd: claimrecords.MoveReverted}); err != nil {
		t.Fatal(err)
	}
	st = f.stateOf(prov)
	if st.State != claimrecords.ClaimProvisional || st.LeaseSeconds != 30 || string(st.Request) != `{"v": 2}` || st.MigrationUUID != "" {
		t.Fatalf("reverted: %+v %s", st, st.Request)
	}

	// A move of a permanent claim, confirmed: permanent.
	if err := f.store.Allocations.ClaimWrite(f.ctx, resources.ClaimWriteParams{State: &claimrecords.ClaimStateWrite{Op: "move", Mode: claimrecords.LeaseMove,
		LeaseSeconds: 60}, Consumers: []resources.ConsumerAllocations{func() resources.ConsumerAllocations {
		a := alloc(perm, rp, res("VCPU", 1))
		a.CheckGeneration, a.Generation = true, gen(1)
		return a
	}()}, Move: &claimrecords.MoveRecord{ConsumerUUID: perm, MigrationUUID: uuid.NewString(), Reason: "relocation"}}); err != nil {
		t.Fatal(err)
	}
	if st := f.stateOf(perm); st.State != claimrecords.ClaimMoving || st.LeaseExpiresAt == nil {
		t.Fatalf("moving: %+v", st)
	}
	if err := f.store.Allocations.ClaimWrite(f.ctx, resources.ClaimWriteParams{ForgetMove: perm, MoveEnd: claimrecords.MoveConfirmed}); err != nil {
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
	dbURL := newTestDB(t)
	a, b := openStore(t, dbURL), openStore(t, dbURL)
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
	waitFor(t, func() bool {
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
	waitFor(t, func() bool {
		ran, err := b.Claims.Exclusive(ctx, claimrecords.LockClaimLeases, func(context.Context) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return ran
	})
	close(cut)
}
