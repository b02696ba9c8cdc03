package claims_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/scheduler"
)

func TestDryRunWritesNothing(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimer(`{"weighers": [{"name": "spread"}]}`, "")
	if _, err := c.ClaimUnrecorded(f.ctx, params(2)); err != nil {
		t.Fatal(err)
	}
	before := map[string]int64{}
	for _, rp := range []string{a, b} {
		p, _ := f.store.Providers.ProviderGet(f.ctx, rp)
		before[rp] = p.Generation
	}
	p := params(1)
	p.DryRun, p.Alternates = true, 1
	r, err := c.ClaimUnrecorded(f.ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// a holds 2 already, so spread ranks b first, with its weight shown.
	if !r.DryRun || r.Attempts != 0 || r.Root != b || r.RootName != "b" || len(r.Ranking) != 2 ||
		r.Ranking[0].Weights["spread"] <= r.Ranking[1].Weights["spread"] || len(r.Alternates) != 1 || r.Alternates[0].Root != a {
		t.Fatalf("dry run: %+v", r)
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID); got.Consumer != nil {
		t.Fatal("dry run wrote a consumer")
	}
	for _, rp := range []string{a, b} {
		if p, _ := f.store.Providers.ProviderGet(f.ctx, rp); p.Generation != before[rp] {
			t.Errorf("dry run bumped %s's generation", rp)
		}
	}
	if f.used(a) != 2 || f.used(b) != 0 {
		t.Fatalf("usage after dry run: a %d b %d", f.used(a), f.used(b))
	}
	// The capacity step of a dry run says why the other roots had no
	// candidate.
	p = params(7)
	p.DryRun = true
	r, err = c.ClaimUnrecorded(f.ctx, p)
	if err != nil || r.Steps[0].Unit != claims.StepCandidates || r.Steps[0].Removed != 1 || r.Steps[0].Reasons["lacked VCPU 7"] != 1 {
		t.Fatalf("dry run steps: %+v %v", r, err)
	}
}

func TestRescheduleRemembersFailures(t *testing.T) {
	f := newFixture(t)
	a, b, c3 := f.provider("a", 8), f.provider("b", 8), f.provider("c", 8)
	c := f.claimer(`{}`, "") // ledger order: a, b, c
	p := params(2)
	if r, err := c.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != a {
		t.Fatalf("claim: %+v %v", r, err)
	}
	again := claims.Params{ConsumerUUID: p.ConsumerUUID}
	// Failed on a (the default: where it is now): b.
	r, err := c.RescheduleUnrecorded(f.ctx, again, "")
	if err != nil || r.Root != b {
		t.Fatalf("first reschedule: %+v %v", r, err)
	}
	// Failed on b, named: not a either, though a is free and first.
	if r, err = c.RescheduleUnrecorded(f.ctx, again, "b"); err != nil || r.Root != c3 {
		t.Fatalf("second reschedule: %+v %v", r, err)
	}
	if f.used(a) != 0 || f.used(b) != 0 || f.used(c3) != 2 {
		t.Fatalf("usage a %d b %d c %d", f.used(a), f.used(b), f.used(c3))
	}
	// Failed on c: nowhere left; the consumer stays where it is.
	_, err = c.RescheduleUnrecorded(f.ctx, again, c3)
	if np := notPlaced(t, err, claims.AllFiltered); np.Steps[1].Unit != scheduler.ExcludeName || np.Steps[1].Removed != 3 {
		t.Fatalf("third reschedule: %+v", np)
	}
	if f.used(c3) != 2 {
		t.Fatal("a reschedule that placed nothing moved the consumer")
	}
	failed, err := f.store.Claims.ClaimFailures(f.ctx, p.ConsumerUUID)
	if err != nil || len(failed) != 3 || !slices.Contains(failed, a) || !slices.Contains(failed, b) || !slices.Contains(failed, c3) {
		t.Fatalf("failures %v %v", failed, err)
	}
	// The Placement way: DELETE the allocations, then claim anew. With
	// reason reschedule the history still counts; with reason new not.
	if err := f.store.Allocations.AllocationsDelete(f.ctx, p.ConsumerUUID); err != nil {
		t.Fatal(err)
	}
	p.Reason = claims.ReasonReschedule
	_, err = c.ClaimUnrecorded(f.ctx, p)
	notPlaced(t, err, claims.AllFiltered)
	p.Reason = claims.ReasonNew
	if r, err := c.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != a {
		t.Fatalf("claim after delete: %+v %v", r, err)
	}
	if _, err := c.RescheduleUnrecorded(f.ctx, again, "nosuch"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("unknown failed provider: %v", err)
	}
}

func TestMoveConfirmRevert(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimer(`{}`, "")
	p := params(3)
	if r, err := c.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != a {
		t.Fatalf("claim: %+v %v", r, err)
	}
	inst := claims.Params{ConsumerUUID: p.ConsumerUUID}

	// Move and confirm (the migration uuid remembered): the source is freed.
	mig := uuid.NewString()
	if r, err := c.MoveUnrecorded(f.ctx, inst, mig); err != nil || r.Root != b || r.Migration.ConsumerUUID != mig {
		t.Fatalf("move: %+v %v", r, err)
	}
	if m, err := f.store.Claims.ClaimMoveGet(f.ctx, p.ConsumerUUID); err != nil || m == nil || m.MigrationUUID != mig || m.SourceRoot != a || m.Reason != claims.ReasonRelocation {
		t.Fatalf("move record %+v %v", m, err)
	}
	h, err := c.Confirm(f.ctx, p.ConsumerUUID, "")
	if err != nil || len(h.Allocations) != 1 || h.Allocations[0].ProviderUUID != b || h.ConsumerGeneration != 2 {
		t.Fatalf("confirm: %+v %v", h, err)
	}
	if f.used(a) != 0 || f.used(b) != 3 {
		t.Fatalf("after confirm a %d b %d", f.used(a), f.used(b))
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, mig); got.Consumer != nil {
		t.Fatal("confirm left the migration consumer")
	}
	if m, _ := f.store.Claims.ClaimMoveGet(f.ctx, p.ConsumerUUID); m != nil {
		t.Fatalf("confirm left the move record %+v", m)
	}
	// A retried confirm (its answer lost) is answered as done, with
	// nothing written; a revert of the confirmed move is a conflict; a
	// confirm of another migration finds no move.
	if again, err := c.Confirm(f.ctx, p.ConsumerUUID, ""); err != nil || len(again.Allocations) != 1 ||
		again.Allocations[0].ProviderUUID != b || again.ConsumerGeneration != h.ConsumerGeneration {
		t.Fatalf("retried confirm: %+v %v, want %+v", again, err, h)
	}
	if _, err := c.Confirm(f.ctx, p.ConsumerUUID, mig); err != nil {
		t.Fatalf("retried confirm naming its migration: %v", err)
	}
	if _, err := c.Revert(f.ctx, p.ConsumerUUID, ""); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("revert of a confirmed move: %v", err)
	}
	if _, err := c.Confirm(f.ctx, p.ConsumerUUID, uuid.NewString()); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("confirm of another migration: %v", err)
	}
	if f.used(a) != 0 || f.used(b) != 3 {
		t.Fatalf("after the retries a %d b %d", f.used(a), f.used(b))
	}

	// Evacuate back to a, then revert: the instance is on b again.
	mig2 := uuid.NewString()
	inst.Reason = claims.ReasonEvacuation
	if r, err := c.MoveUnrecorded(f.ctx, inst, mig2); err != nil || r.Root != a {
		t.Fatalf("evacuate: %+v %v", r, err)
	}
	if f.used(a) != 3 || f.used(b) != 3 {
		t.Fatalf("during the move a %d b %d", f.used(a), f.used(b))
	}
	h, err = c.Revert(f.ctx, p.ConsumerUUID, mig2)
	if err != nil || len(h.Allocations) != 1 || h.Allocations[0].ProviderUUID != b {
		t.Fatalf("revert: %+v %v", h, err)
	}
	got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID)
	if got.Consumer == nil || got.Consumer.Generation != h.ConsumerGeneration || len(got.Allocations) != 1 || got.Allocations[0].ProviderUUID != b {
		t.Fatalf("after revert: %+v (answered generation %d)", got, h.ConsumerGeneration)
	}
	if f.used(a) != 0 || f.used(b) != 3 {
		t.Fatalf("after revert a %d b %d", f.used(a), f.used(b))
	}
	if again, err := c.Revert(f.ctx, p.ConsumerUUID, mig2); err != nil || again.ConsumerGeneration != h.ConsumerGeneration ||
		len(again.Allocations) != 1 || again.Allocations[0].ProviderUUID != b {
		t.Fatalf("retried revert: %+v %v, want %+v", again, err, h)
	}
	if _, err := c.Confirm(f.ctx, p.ConsumerUUID, mig2); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("confirm of a reverted move: %v", err)
	}
	if f.used(a) != 0 || f.used(b) != 3 {
		t.Fatalf("after the retried revert a %d b %d", f.used(a), f.used(b))
	}

	// A move with nowhere to go writes nothing: no migration consumer,
	// no move record, the instance where it was.
	f.sql(`UPDATE inventories SET total = 1 WHERE resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = $1)`, a)
	mig3 := uuid.NewString()
	_, err = c.MoveUnrecorded(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID}, mig3)
	var np *claims.NotPlacedError
	if !errors.As(err, &np) {
		t.Fatalf("move nowhere: %v", err)
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, mig3); got.Consumer != nil {
		t.Fatal("failed move created the migration consumer")
	}
	if m, _ := f.store.Claims.ClaimMoveGet(f.ctx, p.ConsumerUUID); m != nil {
		t.Fatalf("failed move left a record %+v", m)
	}
	if f.used(b) != 3 {
		t.Fatal("failed move changed the instance")
	}
	if _, err := c.MoveUnrecorded(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID}, p.ConsumerUUID); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("migration uuid = consumer uuid: %v", err)
	}
}

func TestTargetAndExclude(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimer(`{}`, "")
	p := params(1)
	p.Target = "b"
	if r, err := c.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != b || r.Steps[1].Unit != scheduler.PinName || r.Steps[1].Removed != 1 {
		t.Fatalf("target by name: %+v %v", r, err)
	}
	p = params(1)
	p.Exclude = []string{a}
	if r, err := c.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != b {
		t.Fatalf("exclude by uuid: %+v %v", r, err)
	}
	p = params(1)
	p.Target, p.Exclude = a, []string{"a"}
	_, err := c.ClaimUnrecorded(f.ctx, p)
	if np := notPlaced(t, err, claims.AllFiltered); np.Error() != "2 providers; 1 removed by pin (not the target "+a+": 1); 1 removed by exclude (uses excluded provider "+a+": 1)" {
		t.Fatalf("excluded target: %q", np.Error())
	}
	for _, bad := range []claims.Params{{Target: "nosuch"}, {Exclude: []string{uuid.NewString()}}, {Reason: "whim"}} {
		q := params(1)
		q.Target, q.Exclude, q.Reason = bad.Target, bad.Exclude, bad.Reason
		if _, err := c.ClaimUnrecorded(f.ctx, q); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}
