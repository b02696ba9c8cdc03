package claims_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/quotas"
)

// limitedClaimer is a claimer whose claims are held to the limits f's
// store keeps, with project "p" limited to vcpu VCPU.
func (f *fixture) limitedClaimer(vcpu int64) *claims.Claimer {
	f.t.Helper()
	if err := f.store.Quotas.LimitsSet(f.ctx, "p", quotas.Limits{"VCPU": vcpu}); err != nil {
		f.t.Fatal(err)
	}
	c, err := claims.New(claims.Deps{Store: f.store, Limits: quota.Stored{Store: f.store}}, claims.Config{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func overQuota(t *testing.T, err error) {
	t.Helper()
	if !fault.HasCode(err, fault.ErrForbidden, fault.CodeOverQuota) {
		t.Fatalf("got %v, want %s", err, fault.CodeOverQuota)
	}
}

// TestQuotaClaimsAndMoves: a claim stops at its project's limit, and a
// dry run says whether it would; a move at the limit passes (it counts
// the instance's new allocations, not the migration consumer's copy of
// the old ones), a resize up over the limit does not, and a revert of a
// resize down is checked as Nova checks it.
func TestQuotaClaimsAndMoves(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 16), f.provider("b", 16)
	c := f.limitedClaimer(8)
	first := params(4)
	if _, err := c.ClaimUnrecorded(f.ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ClaimUnrecorded(f.ctx, params(4)); err != nil {
		t.Fatal(err)
	}
	dry := params(1)
	dry.DryRun = true
	r, err := c.ClaimUnrecorded(f.ctx, dry)
	if err != nil || r.Quota == nil || r.Quota.Fits || r.Quota.ProjectID != "p" ||
		r.Quota.Resources["VCPU"] != (claims.QuotaResource{Requested: 1, Used: 8, Limit: 8}) {
		t.Fatalf("dry run at the limit: %+v %v", r.Quota, err)
	}
	_, err = c.ClaimUnrecorded(f.ctx, params(1))
	overQuota(t, err)
	// A project without limits: a dry run's answer has no quota check.
	free := params(1)
	free.DryRun, free.ProjectID = true, "unlimited"
	if r, err := c.ClaimUnrecorded(f.ctx, free); err != nil || r.Quota != nil {
		t.Fatalf("dry run of a project without limits: %+v %v", r.Quota, err)
	}

	// Move first (on a, 4 VCPU) to b at the limit: the migration
	// consumer's copy does not count.
	mig := uuid.NewString()
	if r, err := c.MoveUnrecorded(f.ctx, claims.Params{ConsumerUUID: first.ConsumerUUID}, mig); err != nil || r.Root != b {
		t.Fatalf("move at the limit: %+v %v", r, err)
	}
	if u, _ := f.store.Quotas.ProjectUsage(f.ctx, "p"); u["VCPU"] != 8 || u[quotas.ResourceConsumers] != 2 {
		t.Fatalf("usage during the move: %v", u)
	}
	if _, err := c.Confirm(f.ctx, first.ConsumerUUID, ""); err != nil {
		t.Fatal(err)
	}
	// A move that grows the instance (a resize up) over the limit.
	grow := claims.Params{ConsumerUUID: first.ConsumerUUID, Candidates: vcpus(6)}
	_, err = c.MoveUnrecorded(f.ctx, grow, uuid.NewString())
	overQuota(t, err)
	// A resize down passes; a third instance takes the room it freed; the
	// revert, which would give the instance back its 4, is refused.
	if _, err := c.MoveUnrecorded(f.ctx, claims.Params{ConsumerUUID: first.ConsumerUUID, Candidates: vcpus(2)}, uuid.NewString()); err != nil {
		t.Fatalf("resize down: %v", err)
	}
	if _, err := c.ClaimUnrecorded(f.ctx, params(2)); err != nil {
		t.Fatalf("a claim in the room freed: %v", err)
	}
	_, err = c.Revert(f.ctx, first.ConsumerUUID, "")
	overQuota(t, err)
	if f.used(a)+f.used(b) != 4+4+2+2 {
		t.Fatalf("held a %d + b %d, want the move's source and destination and the two others", f.used(a), f.used(b))
	}
}
