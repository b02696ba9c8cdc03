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
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// racks creates n racks of hosts each, every host with vcpu VCPU, host
// "r<i>h<j>" in aggregate rackAgg(i); it returns the hosts by rack.
func (f *fixture) racks(n, hosts int, vcpu int64) [][]string {
	f.t.Helper()
	out := make([][]string, n)
	for i := range n {
		for j := range hosts {
			rp := f.provider(fmt.Sprintf("r%dh%d", i, j), vcpu)
			if _, err := f.store.Providers.ProviderAggregatesReplace(f.ctx, rp, []string{rackAgg(i)}, resources.AggregatesReplaceParams{}); err != nil {
				f.t.Fatal(err)
			}
			out[i] = append(out[i], rp)
		}
	}
	return out
}

func rackAgg(i int) string { return fmt.Sprintf("aaaaaaaa-0000-4000-8000-%012d", i) }

// gang is a gang of n members of vcpu VCPU each, consumers
// g<id>-member, in the racks given.
func gang(id, n int, vcpu int64, spread string, racks ...int) claims.GangParams {
	p := claims.GangParams{ProjectID: "p", UserID: "u", Spread: spread}
	for i := range n {
		p.Members = append(p.Members, claims.GangMember{ConsumerUUID: fmt.Sprintf("99999999-%04d-4000-8000-%012d", id, i),
			ConsumerType: "INSTANCE", Candidates: vcpus(vcpu)})
	}
	for _, r := range racks {
		p.Domains = append(p.Domains, rackAgg(r))
	}
	return p
}

// holds reports what consumer holds, provider by provider (VCPU).
func (f *fixture) holds(consumer string) map[string]int64 {
	f.t.Helper()
	cur, err := f.store.Allocations.AllocationsByConsumer(f.ctx, consumer)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, a := range cur.Allocations {
		out[a.ProviderUUID] += a.Used
	}
	return out
}

func TestGangPlacesEveryMemberInOneRack(t *testing.T) {
	f := newFixture(t)
	racks := f.racks(2, 3, 8)
	c := f.claimer(`{}`, "")
	// Rack 0 has one host with only 2 VCPU left: a spread gang of three
	// members of 4 fits only in rack 1.
	if _, err := c.Claim(f.ctx, claims.Params{ConsumerUUID: "11111111-0000-4000-8000-000000000001", ProjectID: "p", UserID: "u",
		Candidates: vcpus(6), Target: racks[0][0]}); err != nil {
		t.Fatal(err)
	}
	g := claims.NewGangs(c)
	p := gang(1, 3, 4, claims.SpreadHosts, 0, 1)
	dry := p
	dry.DryRun = true
	res, err := g.Claim(f.ctx, dry)
	if err != nil || res.Domain != rackAgg(1) || len(res.Members) != 3 || res.ID != "" {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	if d := res.Domains[1]; d.Aggregate != rackAgg(0) || d.Fits != 2 || d.Stopped != p.Members[2].ConsumerUUID {
		t.Fatalf("dry run's other domain: %+v", d)
	}
	for _, m := range p.Members {
		if h := f.holds(m.ConsumerUUID); len(h) != 0 {
			t.Fatalf("a dry run wrote %v", h)
		}
	}

	res, err = g.Claim(f.ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Domain != rackAgg(1) || res.Attempts != 1 || res.ID == "" {
		t.Fatalf("placed %+v", res)
	}
	var roots []string
	for i, m := range res.Members {
		h := f.holds(m.ConsumerUUID)
		if m.ConsumerUUID != p.Members[i].ConsumerUUID || len(h) != 1 || h[m.Root] != 4 || !slices.Contains(racks[1], m.Root) {
			t.Fatalf("member %d: %+v holds %v", i, m, h)
		}
		roots = append(roots, m.Root)
		st := f.state(m.ConsumerUUID)
		if st == nil || st.State != claimrecords.ClaimPermanent || st.RootUUID != m.Root {
			t.Fatalf("member %d's stored claim %+v", i, st)
		}
	}
	if slices.Sort(roots); len(slices.Compact(roots)) != 3 {
		t.Fatalf("spread members share hosts: %v", roots)
	}
	rec, err := f.store.Claims.GangOf(f.ctx, p.Members[0].ConsumerUUID)
	if err != nil || rec == nil || rec.ID != res.ID || rec.Domain != rackAgg(1) || len(rec.Members) != 3 {
		t.Fatalf("gang record %+v %v", rec, err)
	}

	// Rack 1 has 4 VCPU left on each host, rack 0 room for two members
	// of 6: nothing fits, nothing is written.
	_, err = g.Claim(f.ctx, gang(2, 3, 6, claims.SpreadHosts, 0, 1))
	var np *claims.GangNotPlacedError
	if !errors.As(err, &np) || np.Conflicts || len(np.Domains) != 2 || np.Domains[0].Aggregate != rackAgg(0) || np.Domains[0].Fits != 2 ||
		np.Domains[1].Fits != 0 || np.Domains[1].Reasons["lacked VCPU 6"] != 3 {
		t.Fatalf("a gang that fits nowhere: %v (%+v)", err, np)
	}
	for _, m := range gang(2, 3, 4, "", 0).Members {
		if h := f.holds(m.ConsumerUUID); len(h) != 0 {
			t.Fatalf("a refused gang wrote %v", h)
		}
	}
}

func TestGangBadInput(t *testing.T) {
	f := newFixture(t)
	f.racks(1, 1, 8)
	g := claims.NewGangs(f.claimer(`{}`, ""))
	twice := gang(1, 2, 1, "", 0)
	twice.Members[1].ConsumerUUID = twice.Members[0].ConsumerUUID
	badDomain := gang(1, 1, 1, "", 0)
	badDomain.Domains = []string{"rack-1"}
	for name, p := range map[string]claims.GangParams{
		"no members":      {ProjectID: "p", UserID: "u"},
		"a member twice":  twice,
		"spread racks":    gang(1, 1, 1, "racks", 0),
		"a domain name":   badDomain,
		"a lease too big": func() claims.GangParams { p := gang(1, 1, 1, "", 0); p.LeaseSeconds = lease(1 << 40); return p }(),
	} {
		if _, err := g.Claim(f.ctx, p); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

func TestGangQuotaCountsTheWholeGang(t *testing.T) {
	f := newFixture(t)
	f.racks(1, 4, 8)
	g := claims.NewGangs(f.limitedClaimer(10))
	// Each member alone is within the limit; the gang is not.
	p := gang(1, 3, 4, claims.SpreadHosts, 0)
	_, err := g.Claim(f.ctx, p)
	overQuota(t, err)
	for _, m := range p.Members {
		if h := f.holds(m.ConsumerUUID); len(h) != 0 {
			t.Fatalf("a gang over its quota wrote %v", h)
		}
	}
	dry := p
	dry.DryRun = true
	if res, err := g.Claim(f.ctx, dry); err != nil || res.Quota == nil || res.Quota.Fits || res.Quota.Resources["VCPU"].Requested != 12 {
		t.Fatalf("dry run's quota: %+v %v", res, err)
	}
	if _, err := g.Claim(f.ctx, gang(2, 2, 4, claims.SpreadHosts, 0)); err != nil {
		t.Fatalf("a gang within the limit: %v", err)
	}
}

func TestGangMemberThatExistsRefusesTheGang(t *testing.T) {
	f := newFixture(t)
	racks := f.racks(1, 3, 8)
	c := f.claimer(`{}`, "")
	p := gang(1, 3, 1, "", 0)
	if _, err := c.Claim(f.ctx, claims.Params{ConsumerUUID: p.Members[2].ConsumerUUID, ProjectID: "p", UserID: "u",
		Candidates: vcpus(1), Target: racks[0][2]}); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.NewGangs(c).Claim(f.ctx, p); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a gang with an existing member: %v", err)
	}
	for _, m := range p.Members[:2] {
		if h := f.holds(m.ConsumerUUID); len(h) != 0 {
			t.Fatalf("a refused gang wrote %v", h)
		}
	}
}

// TestGangLeasesTogether: a gang's members are confirmed together, and
// released together when their leases run out; one member renewed keeps
// the whole gang.
func TestGangLeasesTogether(t *testing.T) {
	f := newFixture(t)
	f.racks(1, 4, 8)
	c := f.claimer(`{}`, "")
	g := claims.NewGangs(c)
	a := gang(1, 2, 2, claims.SpreadHosts, 0)
	a.LeaseSeconds = lease(600)
	if _, err := g.Claim(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lease(f.ctx, a.Members[1].ConsumerUUID, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range a.Members {
		if st := f.state(m.ConsumerUUID); st.State != claimrecords.ClaimPermanent {
			t.Fatalf("confirming one member left %s %s", m.ConsumerUUID, st.State)
		}
	}

	b := gang(2, 2, 2, claims.SpreadHosts, 0)
	b.LeaseSeconds = lease(600)
	if _, err := g.Claim(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	// One member's lease ran out, the other's not: nothing is released.
	f.expireLease(b.Members[0].ConsumerUUID)
	if n, err := c.ReapLeases(f.ctx); err != nil || n != 0 {
		t.Fatalf("reaped %d (%v) with one member's lease running", n, err)
	}
	for _, m := range b.Members {
		if len(f.holds(m.ConsumerUUID)) == 0 {
			t.Fatalf("member %s released alone", m.ConsumerUUID)
		}
	}
	f.expireLease(b.Members[1].ConsumerUUID)
	if n, err := c.ReapLeases(f.ctx); err != nil || n != 1 {
		t.Fatalf("reaped %d (%v), want the gang once", n, err)
	}
	for _, m := range b.Members {
		if h := f.holds(m.ConsumerUUID); len(h) != 0 {
			t.Fatalf("member %s still holds %v", m.ConsumerUUID, h)
		}
	}
	for _, m := range a.Members {
		if len(f.holds(m.ConsumerUUID)) == 0 {
			t.Fatalf("the confirmed gang lost %s", m.ConsumerUUID)
		}
	}
}

// TestGangRace: gangs and single claims race on two small racks; no
// provider is ever overcommitted and every gang is whole or absent. The
// singles (48 VCPU) fill three hosts at most, whatever the order, so
// some rack keeps room for a gang.
func TestGangRace(t *testing.T) {
	f := newFixture(t)
	racks := f.racks(2, 4, 16)
	c := f.claimer(`{}`, "")
	g := claims.NewGangs(c)
	const gangs, size, singles = 12, 3, 24 // members of 3 VCPU, singles of 2
	var wg sync.WaitGroup
	errs := make(chan error, gangs+singles)
	for i := range gangs {
		wg.Go(func() {
			_, err := g.Claim(f.ctx, gang(i, size, 3, claims.SpreadHosts, 0, 1))
			var np *claims.GangNotPlacedError
			if err != nil && !errors.As(err, &np) {
				errs <- fmt.Errorf("gang %d: %w", i, err)
			}
		})
	}
	for i := range singles {
		wg.Go(func() {
			_, err := c.Claim(f.ctx, claims.Params{ConsumerUUID: fmt.Sprintf("55555555-0000-4000-8000-%012d", i),
				ProjectID: "p", UserID: "u", Candidates: vcpus(2)})
			var np *claims.NotPlacedError
			if err != nil && !errors.As(err, &np) {
				errs <- fmt.Errorf("single %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, rack := range racks {
		for _, rp := range rack {
			if used := f.used(rp); used > 16 {
				t.Fatalf("provider %s overcommitted: %d of 16", rp, used)
			}
		}
	}
	placed := 0
	for i := range gangs {
		n := 0
		for _, m := range gang(i, size, 3, "").Members {
			if len(f.holds(m.ConsumerUUID)) > 0 {
				n++
			}
		}
		if n != 0 && n != size {
			t.Fatalf("gang %d partial: %d of %d members", i, n, size)
		}
		if n == size {
			placed++
		}
	}
	if placed == 0 {
		t.Fatal("no gang placed")
	}
	t.Logf("%d of %d gangs placed", placed, gangs)
	// The store's backends report their statistics as they exit.
	f.store.Close()
	if n := ledgertest.Deadlocks(t, f.url); n != 0 {
		t.Fatalf("%d transactions deadlocked", n)
	}
}

// TestGangAuditFindsPartial: the audit reports the members of a gang one
// of whose members lost its allocations by a hand edit; a gang whole, or
// with a member deleted through the API, is no finding.
func TestGangAuditFindsPartial(t *testing.T) {
	f := newFixture(t)
	f.racks(1, 3, 8)
	c := f.claimer(`{}`, "")
	partial := func() []audit.AuditFinding {
		t.Helper()
		page, err := f.store.Auditor.Audit(f.ctx, audit.AuditParams{Kinds: []string{audit.AuditPartialGang}})
		if err != nil {
			t.Fatal(err)
		}
		return page.Findings
	}
	p := gang(1, 3, 1, claims.SpreadHosts, 0)
	if _, err := claims.NewGangs(c).Claim(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	if fs := partial(); len(fs) != 0 {
		t.Fatalf("a whole gang: %+v", fs)
	}
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{{ConsumerUUID: p.Members[0].ConsumerUUID}}); err != nil {
		t.Fatal(err)
	}
	if fs := partial(); len(fs) != 0 {
		t.Fatalf("a member deleted through the API: %+v", fs)
	}
	f.sql(`DELETE FROM allocations WHERE consumer_id = (SELECT id FROM consumers WHERE uuid = $1)`, p.Members[1].ConsumerUUID)
	fs := partial()
	if len(fs) != 1 || fs[0].Consumer.UUID != p.Members[2].ConsumerUUID || fs[0].Fix.Action != audit.AuditFixReportOnly ||
		!strings.Contains(fs[0].Detail, "whose members "+p.Members[1].ConsumerUUID+" hold nothing") {
		t.Fatalf("a gang left partial: %+v", fs)
	}
}

// rankedCloud is two racks of three 8-VCPU hosts, one host of rack 0
// (r0h0) holding 2 VCPU: rack 0 is in use, rack 1 empty.
func rankedCloud(f *fixture) [][]string {
	f.t.Helper()
	racks := f.racks(2, 3, 8)
	c := f.claimer(`{}`, "")
	if _, err := c.Claim(f.ctx, claims.Params{ConsumerUUID: "11111111-0000-4000-8000-000000000001", ProjectID: "p", UserID: "u",
		Candidates: vcpus(2), Target: racks[0][0]}); err != nil {
		f.t.Fatal(err)
	}
	return racks
}

// TestGangRankedByPolicy: the domains that hold the whole gang are
// ranked by the gang's policy over the hosts each placement uses: pack
// puts a gang of two members of 2 VCPU on the rack in use (both on
// r0h0, left 6 of 8 used), spread on the empty rack; a policy without
// weighers keeps the engine's order (fewest empty hosts started: rack 0).
func TestGangRankedByPolicy(t *testing.T) {
	f := newFixture(t)
	racks := rankedCloud(f)
	for i, tc := range []struct {
		policy string
		rack   int
	}{
		{`{"weighers": [{"name": "pack"}]}`, 0},
		{`{"weighers": [{"name": "spread"}]}`, 1},
		{`{"weighers": [{"name": "spread", "factor": -1}]}`, 0},
		{`{}`, 0},
	} {
		g := claims.NewGangs(f.claimer(tc.policy, ""))
		p := gang(10+i, 2, 2, "", 1, 0)
		dry := p
		dry.DryRun = true
		res, err := g.Claim(f.ctx, dry)
		if err != nil || res.Domain != rackAgg(tc.rack) || len(res.Domains) != 2 || res.Domains[0].Aggregate != rackAgg(tc.rack) {
			t.Fatalf("%s: dry run %+v %v", tc.policy, res, err)
		}
	}
	// The write follows the ranking.
	res, err := claims.NewGangs(f.claimer(`{"weighers": [{"name": "spread"}]}`, "")).Claim(f.ctx, gang(19, 2, 2, "", 1, 0))
	if err != nil || res.Domain != rackAgg(1) {
		t.Fatalf("spread: %+v %v", res, err)
	}
	for _, m := range res.Members {
		if !slices.Contains(racks[1], m.Root) || f.holds(m.ConsumerUUID)[m.Root] != 2 {
			t.Fatalf("spread: member %+v holds %v", m, f.holds(m.ConsumerUUID))
		}
	}
}

// TestGangScriptlet: gang_placement sees every domain that holds the
// gang, best first, with each member's host; it may choose one, or
// refuse the gang, which writes nothing.
func TestGangScriptlet(t *testing.T) {
	f := newFixture(t)
	racks := rankedCloud(f)
	pick := `
def gang_placement(request, domains):
    d = domains[-1]
    log_info("taking", d.aggregate, "ranked", d.rank)
    set_target(d.aggregate)
`
	g := claims.NewGangs(f.claimer(`{"weighers": [{"name": "pack"}]}`, pick))
	p := gang(20, 2, 2, "", 0, 1)
	res, err := g.Claim(f.ctx, p)
	if err != nil || res.Domain != rackAgg(1) || len(res.Members) != 2 {
		t.Fatalf("a scriptlet's choice: %+v %v", res, err)
	}
	for _, m := range res.Members {
		if !slices.Contains(racks[1], m.Root) {
			t.Fatalf("member %+v not in rack 1", m)
		}
	}

	// Rack 1's r1h0 now holds 4 VCPU: pack ranks it first.
	refuse := `
def gang_placement(request, domains):
    d = domains[0]
    return "%s wants %d VCPU: %d domains, best %s (%d hosts, %d started) with %s on %s" % (
        request.project, request.resources["VCPU"], len(domains), d.aggregate, len(d.hosts),
        d.empty_hosts_started, d.members[0].consumer_uuid, d.members[0].host.name)
`
	g = claims.NewGangs(f.claimer(`{"weighers": [{"name": "pack"}]}`, refuse))
	p = gang(21, 2, 2, "", 1, 0)
	_, err = g.Claim(f.ctx, p)
	var np *claims.GangNotPlacedError
	want := fmt.Sprintf("p wants 4 VCPU: 2 domains, best %s (1 hosts, 0 started) with %s on r1h0", rackAgg(1), p.Members[0].ConsumerUUID)
	if !errors.As(err, &np) || np.Refusal != want || np.Conflicts || len(np.Domains) != 2 ||
		!strings.Contains(err.Error(), "2 of 2 domains hold the gang of 2 members; then Failed instance placement scriptlet: "+want) {
		t.Fatalf("a refusal: %v (%+v), want %q", err, np, want)
	}
	for _, m := range p.Members {
		if h := f.holds(m.ConsumerUUID); len(h) != 0 {
			t.Fatalf("a refused gang wrote %v", h)
		}
	}
	if st := f.state(p.Members[0].ConsumerUUID); st != nil {
		t.Fatalf("a refused gang stored a claim: %+v", st)
	}
}
