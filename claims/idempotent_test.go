package claims_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/ledger"
)

// TestClaimRetry: a retried claim gets its original answer, whether
// the room it took is still free or not; a different request for the
// same consumer is a MismatchError naming what differs; after the
// consumer is deleted the same request claims anew.
func TestClaimRetry(t *testing.T) {
	for _, writers := range []int{0, -1} { // group commit, and every claim alone
		f := newFixture(t)
		if writers < 0 {
			store, err := ledger.Open(f.ctx, ledger.Config{DatabaseURL: f.url, MaxConns: 8, SnapshotRefresh: -1, ClaimWriters: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(store.Close)
			f.store = store
		}
		a := f.provider("a", 4)
		c := f.claimer(`{}`, "")
		p := params(3)
		first, err := c.Claim(f.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		// The retry: a was left with 1 VCPU, so the retry's own ranking
		// finds nothing; it is answered from the record.
		again, err := c.Claim(f.ctx, p)
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
		if !reflect.DeepEqual(again.Allocations, first.Allocations) || again.ConsumerGeneration != 1 || again.Root != a {
			t.Fatalf("retry answered %+v, first %+v", again, first)
		}
		if f.used(a) != 3 {
			t.Fatalf("used %d after the retry, want 3", f.used(a))
		}

		// With room for a second allocation, the retry still gets the
		// first (the write meets the consumer and stops).
		b := f.provider("b", 8)
		if again, err = c.Claim(f.ctx, p); err != nil || again.Root != a {
			t.Fatalf("retry with room: %+v %v", again, err)
		}
		if f.used(a) != 3 || f.used(b) != 0 {
			t.Fatalf("used a %d b %d after the retry with room", f.used(a), f.used(b))
		}

		// The same consumer, another request.
		other := p
		other.Candidates = vcpus(2)
		other.Name = "renamed"
		_, err = c.Claim(f.ctx, other)
		var mm *claims.MismatchError
		if !errors.As(err, &mm) || !reflect.DeepEqual(mm.Fields, []string{"name", "resources"}) ||
			!strings.Contains(err.Error(), "name, resources") {
			t.Fatalf("a different request: %v", err)
		}

		// Deleted: the record is history; the same request claims again.
		if err := f.store.Allocations.AllocationsDelete(f.ctx, p.ConsumerUUID); err != nil {
			t.Fatal(err)
		}
		if again, err = c.Claim(f.ctx, p); err != nil || again.ConsumerGeneration != 1 {
			t.Fatalf("claim after delete: %+v %v", again, err)
		}
		if f.used(a)+f.used(b) != 3 {
			t.Fatalf("used a %d b %d after the new claim", f.used(a), f.used(b))
		}
	}
}

// TestRescheduleAndMoveRetry: a retried reschedule or move that happened
// is answered as done and moves nothing again.
func TestRescheduleAndMoveRetry(t *testing.T) {
	f := newFixture(t)
	a, b, c3, d := f.provider("a", 8), f.provider("b", 8), f.provider("c", 8), f.provider("d", 8)
	c := f.claimer(`{}`, "")
	p := params(3)
	p.Target = a
	if _, err := c.Claim(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	inst := claims.Params{ConsumerUUID: p.ConsumerUUID}
	first, err := c.Reschedule(f.ctx, inst, a)
	if err != nil || first.Root == a {
		t.Fatalf("reschedule: %+v %v", first, err)
	}
	again, err := c.Reschedule(f.ctx, inst, a)
	if err != nil || again.Root != first.Root || again.ConsumerGeneration != first.ConsumerGeneration {
		t.Fatalf("retried reschedule: %+v %v (first on %s)", again, err, first.Root)
	}
	if n := f.used(a) + f.used(b) + f.used(c3) + f.used(d); n != 3 || f.used(first.Root) != 3 {
		t.Fatalf("after the retried reschedule: a %d b %d c %d", f.used(a), f.used(b), f.used(c3))
	}

	// "It failed where it is now", twice: a retry moments later, a new
	// step once the record is old.
	here, err := c.Reschedule(f.ctx, inst, "")
	if err != nil || here.Root == first.Root {
		t.Fatalf("reschedule from where it is: %+v %v", here, err)
	}
	if again, err = c.Reschedule(f.ctx, inst, ""); err != nil || again.Root != here.Root || again.ConsumerGeneration != here.ConsumerGeneration {
		t.Fatalf("its retry: %+v %v", again, err)
	}
	f.sql(`UPDATE claim_requests SET created_at = now() - interval '3 minutes'`)
	if again, err = c.Reschedule(f.ctx, inst, ""); err != nil || again.ConsumerGeneration != here.ConsumerGeneration+1 || again.Root == here.Root {
		t.Fatalf("a new failure where it is: %+v %v (was on %s)", again, err, here.Root)
	}
	first = again

	mig := uuid.NewString()
	moved, err := c.Move(f.ctx, inst, mig)
	if err != nil || moved.Root == first.Root {
		t.Fatalf("move: %+v %v", moved, err)
	}
	again, err = c.Move(f.ctx, inst, mig)
	if err != nil || again.Root != moved.Root || again.Migration == nil || again.Migration.ConsumerUUID != mig {
		t.Fatalf("retried move: %+v %v", again, err)
	}
	if f.used(moved.Root) != 3 || f.used(first.Root) != 3 {
		t.Fatalf("after the retried move: a %d b %d c %d d %d", f.used(a), f.used(b), f.used(c3), f.used(d))
	}
}
