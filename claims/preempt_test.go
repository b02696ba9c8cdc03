package claims_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// TestConcurrentPreemption: spot claims (preemptible, low priorities) and
// on-demand claims (priority 10, not preemptible) race on a full cloud.
// Whatever the interleaving: no provider is overcommitted; usage is what
// the live consumers hold; no consumer is displaced twice, none that is
// not preemptible or not of lower priority than its preemptor, and every
// displaced consumer's allocations are gone and its displacement
// recorded; a claim that failed left nothing.
func TestConcurrentPreemption(t *testing.T) {
	f := newFixture(t)
	var provs []string
	for i := range 4 {
		provs = append(provs, f.provider(fmt.Sprintf("cn%d", i), 8))
	}
	c := f.claimer(`{"weighers": [{"name": "pack"}]}`, "")
	spot := func(i int) claims.Params {
		p := params(2)
		p.Priority, p.Preemptible = int64(i%3), true
		return p
	}
	// Fill the cloud with spots: 16 of 2 VCPU.
	isSpot := map[string]bool{}
	for i := range 16 {
		p := spot(i)
		if _, err := c.Claim(f.ctx, p); err != nil {
			t.Fatalf("spot %d: %v", i, err)
		}
		isSpot[p.ConsumerUUID] = true
	}

	// Then 12 more spots and 6 on-demand claims of 4 VCPU at once.
	var ps []claims.Params
	for i := range 12 {
		ps = append(ps, spot(i))
		isSpot[ps[len(ps)-1].ConsumerUUID] = true
	}
	for range 6 {
		p := params(4)
		p.Priority = 10
		ps = append(ps, p)
	}
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Claim(f.ctx, ps[i])
		}()
	}
	wg.Wait()

	recs, more, err := f.store.Claims.Preemptions(f.ctx, claimrecords.PreemptionsParams{Limit: 1000})
	if err != nil || more {
		t.Fatal(err, more)
	}
	displaced := map[string]int{}
	for _, r := range recs {
		displaced[r.ConsumerUUID]++
		if !isSpot[r.ConsumerUUID] || r.Priority >= r.PreemptorPriority {
			t.Errorf("displaced %s (priority %d) for priority %d", r.ConsumerUUID, r.Priority, r.PreemptorPriority)
		}
		got, err := f.store.Allocations.AllocationsByConsumer(f.ctx, r.ConsumerUUID)
		if err != nil || got.Consumer != nil {
			t.Errorf("displaced %s still holds %+v (%v)", r.ConsumerUUID, got.Allocations, err)
		}
	}
	for id, n := range displaced {
		if n > 1 {
			t.Errorf("%s displaced %d times", id, n)
		}
	}
	onDemand := 0
	for i, p := range ps {
		got, err := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID)
		if err != nil {
			t.Fatal(err)
		}
		if errs[i] != nil {
			var np *claims.NotPlacedError
			if !errors.As(errs[i], &np) {
				t.Errorf("claim %d: %v", i, errs[i])
			}
			if got.Consumer != nil {
				t.Errorf("claim %d failed but holds %+v", i, got.Allocations)
			}
			continue
		}
		if p.Priority == 10 {
			onDemand++
			if got.Consumer == nil {
				t.Errorf("on-demand claim %d placed but holds nothing", i)
			}
		} else if got.Consumer == nil && displaced[p.ConsumerUUID] == 0 {
			t.Errorf("spot %d placed, holds nothing and was not displaced", i)
		}
	}
	var total int64
	for _, rp := range provs {
		u := f.used(rp)
		if u > 8 {
			t.Errorf("provider %s overcommitted: %d of 8", rp, u)
		}
		total += u
	}
	var held int64
	for id := range isSpot {
		for _, n := range f.holds(id) {
			held += n
		}
	}
	for _, p := range ps[12:] {
		for _, n := range f.holds(p.ConsumerUUID) {
			held += n
		}
	}
	if held != total {
		t.Errorf("usage %d, the consumers hold %d", total, held)
	}
	// The cloud was full of spots: an on-demand claim placed displaced
	// some (and one at least was placed: 24 of the 32 VCPU were
	// preemptible by them).
	if onDemand == 0 || len(recs) == 0 {
		t.Errorf("%d on-demand claims placed on a full cloud, %d consumers displaced", onDemand, len(recs))
	}
	t.Logf("%d on-demand placed, %d consumers displaced", onDemand, len(recs))
}

// TestClaimCostWithoutPreemption: a claim that fits asks the ledger
// nothing more than before preemption existed, whether or not the cloud
// holds preemptible consumers: only a claim that found no candidate
// reads them (resources.PreemptibleBelow, counted by the claimer), and
// one that preempts does.
func TestClaimCostWithoutPreemption(t *testing.T) {
	f := newFixture(t)
	for i := range 2 {
		f.provider(fmt.Sprintf("cn%d", i), 64)
	}
	c := f.claimer(`{"weighers": [{"name": "pack"}]}`, "")
	claim := func(p claims.Params) {
		t.Helper()
		if _, err := c.Claim(f.ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		claim(params(1))
	}
	if n := c.PreemptionSearches(); n != 0 {
		t.Fatalf("plain claims searched %d times", n)
	}
	// A preemptible consumer of low priority fills a small host; claims
	// of higher priority that fit elsewhere do not search.
	small := f.provider("small", 4)
	fill := params(4)
	fill.Target, fill.Preemptible = small, true
	claim(fill)
	for range 10 {
		p := params(1)
		p.Priority, p.Exclude = 10, []string{small}
		claim(p)
	}
	if n := c.PreemptionSearches(); n != 0 {
		t.Fatalf("claims that fit searched %d times", n)
	}
	// One that only the small host could take searches, and preempts.
	p := params(4)
	p.Priority, p.Target = 10, small
	res, err := c.Claim(f.ctx, p)
	if err != nil || len(res.Preempted) != 1 || res.Preempted[0].ConsumerUUID != fill.ConsumerUUID {
		t.Fatalf("preempting claim: %+v %v", res, err)
	}
	if n := c.PreemptionSearches(); n != 1 {
		t.Fatalf("a preempting claim searched %d times", n)
	}
}

// TestPreemptionAudit: the audit knows preempted consumers. A preemption
// leaves no finding; a victim whose allocations were written back outside
// claims (its instance never stopped) is preempted_consumer, and only
// that, though it spans two hosts; a preemptible claim emptied by hand is
// preemptible_empty, not empty_consumer; a victim claimed anew is no
// finding.
func TestPreemptionAudit(t *testing.T) {
	f := newFixture(t)
	cn0, cn1 := f.provider("cn0", 10), f.provider("cn1", 10)
	c := f.claimer(`{}`, "")
	claim := func(vcpu int64, target string, preemptible bool, priority int64) claims.Params {
		t.Helper()
		p := params(vcpu)
		p.Target, p.Preemptible, p.Priority = target, preemptible, priority
		if _, err := c.Claim(f.ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	findings := func() []string {
		t.Helper()
		page, err := f.store.Auditor.Audit(f.ctx, audit.AuditParams{Thresholds: audit.DefaultAuditThresholds()})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, fd := range page.Findings {
			out = append(out, fd.Kind+" "+fd.Consumer.UUID+" "+fd.Fix.Action)
		}
		return out
	}
	claim(4, cn0, true, 0)
	claim(4, cn0, true, 0)
	spot := claim(4, cn1, true, 0)
	onDemand := claim(4, cn1, false, 0)
	p := params(4)
	p.Target, p.Priority = cn0, 10
	res, err := c.Claim(f.ctx, p)
	if err != nil || len(res.Preempted) != 1 {
		t.Fatalf("the preempting claim: %+v %v", res, err)
	}
	victim := res.Preempted[0].ConsumerUUID
	if got := findings(); len(got) != 0 {
		t.Fatalf("after a preemption: %v", got)
	}

	// The victim's agent writes its allocations back, on both hosts.
	back := resources.ConsumerAllocations{ConsumerUUID: victim, ProjectID: "p", UserID: "u", Allocations: []engine.Allocation{
		{ProviderUUID: cn0, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}},
		{ProviderUUID: cn1, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{back}); err != nil {
		t.Fatal(err)
	}
	// A preemptible claim and an on-demand one emptied by hand.
	for _, u := range []string{spot.ConsumerUUID, onDemand.ConsumerUUID} {
		f.sql(`DELETE FROM allocations WHERE consumer_id = (SELECT id FROM consumers WHERE uuid = $1)`, u)
	}
	want := []string{
		audit.AuditEmptyConsumer + " " + onDemand.ConsumerUUID + " " + audit.AuditFixDeleteConsumer,
		audit.AuditPreemptedConsumer + " " + victim + " " + audit.AuditFixReportOnly,
		audit.AuditPreemptibleEmpty + " " + spot.ConsumerUUID + " " + audit.AuditFixDeleteConsumer,
	}
	if got := findings(); !slices.Equal(got, want) {
		t.Fatalf("findings:\n got %v\nwant %v", got, want)
	}
	page, err := f.store.Auditor.Audit(f.ctx, audit.AuditParams{Kinds: []string{audit.AuditPreemptedConsumer}})
	if err != nil || len(page.Findings) != 1 {
		t.Fatal(page, err)
	}
	fd := page.Findings[0]
	if pr := fd.Preemption; pr == nil || pr.PreemptedBy != p.ConsumerUUID || pr.RootUUID != cn0 || pr.PreemptedAt.IsZero() ||
		!strings.Contains(fd.Detail, "runs on the root provider it was preempted from") || len(fd.Providers) != 2 {
		t.Fatalf("the preempted consumer's finding: %+v (%+v)", fd, fd.Preemption)
	}
	if _, err := f.store.Auditor.AuditFix(f.ctx, audit.AuditFixParams{Kind: audit.AuditPreemptedConsumer, ConsumerUUID: victim,
		ConsumerGeneration: fd.Consumer.Generation}); !fault.HasCode(err, fault.ErrConflict, fault.CodeAuditNotFixable) {
		t.Fatalf("fixing a preempted consumer that holds allocations: %v", err)
	}
	gen := fd.Consumer.Generation
	if _, err := f.store.Auditor.AuditFix(f.ctx, audit.AuditFixParams{Kind: audit.AuditPreemptibleEmpty, ConsumerUUID: spot.ConsumerUUID,
		ConsumerGeneration: 1}); err != nil {
		t.Fatalf("fixing the emptied preemptible claim: %v", err)
	}
	if st, err := f.store.Claims.ClaimStateGet(f.ctx, spot.ConsumerUUID); err != nil || st != nil {
		t.Fatalf("the emptied preemptible claim after its fix: %+v %v", st, err)
	}

	// The victim claimed anew (its consumer at its generation): no finding.
	again := params(2)
	again.ConsumerUUID, again.ConsumerGeneration, again.Target = victim, &gen, cn1
	if _, err := c.Claim(f.ctx, again); err != nil {
		t.Fatal(err)
	}
	if got := findings(); !slices.Equal(got, want[:1]) {
		t.Fatalf("after the victim was claimed anew: %v", got)
	}
}
