package claimrecords_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestClaimWriteAllOrNothing: the move record commits with the
// allocations, and a refused write records nothing.
func TestClaimWriteAllOrNothing(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 4))
	inst, mig := uuid.NewString(), uuid.NewString()

	over := ledgertest.Alloc(inst, rp, ledgertest.Res("VCPU", 5))
	over.CheckGeneration = true
	err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{over},
		Move: &claimrecords.MoveRecord{ConsumerUUID: inst, MigrationUUID: mig, Reason: "relocation", SourceRoot: rp}})
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("over capacity: %v", err)
	}
	if m, err := f.Store.Claims.ClaimMoveGet(f.Ctx, inst); err != nil || m != nil {
		t.Fatalf("refused write recorded a move: %+v %v", m, err)
	}

	ok := ledgertest.Alloc(inst, rp, ledgertest.Res("VCPU", 2))
	ok.CheckGeneration = true
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{ok},
		Move: &claimrecords.MoveRecord{ConsumerUUID: inst, MigrationUUID: mig, Reason: "evacuation", SourceRoot: rp}}); err != nil {
		t.Fatal(err)
	}
	m, err := f.Store.Claims.ClaimMoveGet(f.Ctx, inst)
	if err != nil || m == nil || m.MigrationUUID != mig || m.Reason != "evacuation" || m.SourceRoot != rp {
		t.Fatalf("move record %+v %v", m, err)
	}
	if u := f.Usages(rp); u.Usages["VCPU"] != 2 {
		t.Fatalf("usage %v", u.Usages)
	}
	// Forgetting alone, with no allocation write.
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{ForgetMove: inst}); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.Store.Claims.ClaimMoveGet(f.Ctx, inst); m != nil {
		t.Fatalf("forgotten move still there: %+v", m)
	}

	// Failures: idempotent, listed per consumer.
	for range 2 {
		if err := f.Store.Claims.ClaimFailureAdd(f.Ctx, inst, rp); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.Store.Claims.ClaimFailures(f.Ctx, inst); err != nil || len(got) != 1 || got[0] != rp {
		t.Fatalf("failures %v %v", got, err)
	}
	if got, _ := f.Store.Claims.ClaimFailures(f.Ctx, mig); len(got) != 0 {
		t.Fatalf("another consumer's failures %v", got)
	}
	if err := f.Store.Claims.ClaimFailureAdd(f.Ctx, "x", rp); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("malformed consumer: %v", err)
	}
}

// TestClaimFailuresExpire checks that a failure older than the TTL is no
// longer listed, and that a store purges such rows when it starts.
func TestClaimFailuresExpire(t *testing.T) {
	ctx := context.Background()
	dbURL := ledgertest.NewDB(t)
	open := func(ttl time.Duration) *ledger.Store {
		s, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 2, ClaimFailureTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	count := func() int {
		var rows int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM claim_failures`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	// Until the last step, only a store that never purges is open.
	forever := open(-1)
	inst, old, recent := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, rp := range []string{old, recent} {
		if err := forever.Claims.ClaimFailureAdd(ctx, inst, rp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `UPDATE claim_failures SET failed_at = now() - interval '25 hours' WHERE provider_uuid = $1`, old); err != nil {
		t.Fatal(err)
	}
	if got, err := forever.Claims.ClaimFailures(ctx, inst); err != nil || len(got) != 2 {
		t.Fatalf("failures with no TTL %v %v, want both", got, err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d rows before any purge, want 2", n)
	}
	// The default TTL (24h) no longer lists the old one, and its store
	// purges it when it starts; the recent one stays.
	def := open(0)
	if got, err := def.Claims.ClaimFailures(ctx, inst); err != nil || len(got) != 1 || got[0] != recent {
		t.Fatalf("failures %v %v, want only %s (the other is past the default 24h)", got, err, recent)
	}
	ledgertest.WaitFor(t, func() bool { return count() == 1 })
	if got, err := forever.Claims.ClaimFailures(ctx, inst); err != nil || len(got) != 1 || got[0] != recent {
		t.Fatalf("after the purge %v %v, want only %s", got, err, recent)
	}
}
