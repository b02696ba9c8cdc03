package audit_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// auditAll pages through the audit, limit findings a page.
func auditAll(t *testing.T, f *fixture, p audit.AuditParams) []audit.AuditFinding {
	t.Helper()
	var all []audit.AuditFinding
	for pages := 0; ; pages++ {
		page, err := f.Store.Auditor.Audit(f.Ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if limit := cmp(p.Limit, audit.DefaultAuditLimit); len(page.Findings) > limit {
			t.Fatalf("page of %d findings, limit %d", len(page.Findings), limit)
		}
		all = append(all, page.Findings...)
		if page.NextMarker == "" {
			return all
		}
		if pages > 100 {
			t.Fatal("the audit does not end")
		}
		p.Marker = page.NextMarker
	}
}

func cmp(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

func TestAuditFindings(t *testing.T) {
	f := newFixture(t)
	rp := ledgertest.AuditCloud(f.Fixture)
	names := map[string]string{}
	for n, u := range rp {
		names[u] = n
	}
	before := f.Dump()
	all := audit.AuditThresholds{} // every migration and report is stale
	want := []string{
		"split_consumer c3 [cn1:VCPU=1 cn2:DISK_GB=10] () report_only",
		"stale_migration c6 [cn2:VCPU=2] () report_only",
		"stale_migration c5 [cn1:VCPU=2] () confirm_move",
		"stale_provider cn1 [cn1:MEMORY_MB=512 cn1:VCPU=5] (c1 c2 c3 c5) report_only",
		"stale_provider cn2 [cn2:DISK_GB=10 cn2:VCPU=4] (c3 c4 c6) report_only",
		"stale_provider cn3 [cn3-numa0:VCPU=2] (c8) report_only",
		"over_capacity cn2 VCPU=4/3 [] (c3 c4 c6) report_only",
		"empty_consumer c7 [] () delete_consumer",
	}
	for _, limit := range []int{0, 1, 2, 3, 7, 8} {
		var got []string
		for _, fd := range auditAll(t, f, audit.AuditParams{Limit: limit, Thresholds: all}) {
			got = append(got, ledgertest.FindingSummary(fd, names))
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d:\n got %s\nwant %s", limit, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}

	// The default thresholds: nothing is a day old, cn1 and cn3 reported an
	// hour ago, which is past the default of an hour.
	var got []string
	for _, fd := range auditAll(t, f, audit.AuditParams{Thresholds: audit.DefaultAuditThresholds(),
		Kinds: []string{audit.AuditStaleMigration, audit.AuditStaleProvider}}) {
		got = append(got, fd.Kind+" "+names[fd.Provider.UUID])
	}
	if want := []string{"stale_provider cn1", "stale_provider cn3"}; !slices.Equal(got, want) {
		t.Errorf("default thresholds: %v, want %v", got, want)
	}

	// What a finding says.
	page, err := f.Store.Auditor.Audit(f.Ctx, audit.AuditParams{Kinds: []string{audit.AuditStaleMigration}, Limit: 2, Thresholds: all})
	if err != nil || len(page.Findings) != 2 {
		t.Fatal(page, err)
	}
	m := page.Findings[1]
	if m.Consumer.UUID != ledgertest.AuditMigrate || m.Consumer.Type != resources.MigrationConsumerType || m.Consumer.Generation != 1 ||
		m.Consumer.ProjectID != "proj" || m.Move == nil || m.Move.ConsumerUUID != ledgertest.AuditInstance ||
		m.Age < 0 || m.Age > time.Minute || m.Since.IsZero() ||
		!strings.Contains(m.Detail, "relocation of consumer "+ledgertest.AuditInstance) || !strings.Contains(m.Fix.Detail, "cn1") {
		t.Errorf("finding %+v", m)
	}
	if page.NextMarker == "" {
		t.Error("a full page has a marker")
	}

	if after := f.Dump(); after != before {
		t.Errorf("the audit wrote:\n%s\n---\n%s", before, after)
	}
}

func TestAuditRefusals(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		p    audit.AuditParams
		code string
	}{
		{audit.AuditParams{Kinds: []string{"orphans"}}, fault.CodeAuditUnknownKind},
		{audit.AuditParams{Limit: -1}, fault.CodeAuditInvalid},
		{audit.AuditParams{Limit: audit.MaxAuditLimit + 1}, fault.CodeAuditInvalid},
		{audit.AuditParams{Marker: "split_consumer"}, fault.CodeAuditInvalid},
		{audit.AuditParams{Marker: "split_consumer:-1"}, fault.CodeAuditInvalid},
		{audit.AuditParams{Marker: "split_consumer:" + ledgertest.AuditFine}, fault.CodeAuditInvalid},
		{audit.AuditParams{Marker: "nope:1"}, fault.CodeAuditInvalid},
		{audit.AuditParams{Kinds: []string{audit.AuditEmptyConsumer}, Marker: "split_consumer:5"}, fault.CodeAuditInvalid},
		{audit.AuditParams{Thresholds: audit.AuditThresholds{StateAge: -time.Second}}, fault.CodeAuditInvalid},
	} {
		_, err := f.Store.Auditor.Audit(f.Ctx, tc.p)
		if le := ledgertest.Rejection(t, err, fault.ErrInvalid); le.Code != tc.code {
			t.Errorf("%+v: code %s, want %s (%v)", tc.p, le.Code, tc.code, err)
		}
	}
}

func TestAuditFix(t *testing.T) {
	f := newFixture(t)
	rp := ledgertest.AuditCloud(f.Fixture)
	all := audit.AuditThresholds{}
	fix := func(kind, consumer string, generation int64) (audit.AuditFinding, error) {
		return f.Store.Auditor.AuditFix(f.Ctx, audit.AuditFixParams{Kind: kind, ConsumerUUID: consumer,
			ConsumerGeneration: generation, Thresholds: all})
	}
	refused := func(err error, kind error, code string) {
		t.Helper()
		if le := ledgertest.Rejection(t, err, kind); le.Code != code {
			t.Errorf("code %s, want %s: %v", le.Code, code, err)
		}
	}
	before := f.Dump()
	// Refused, nothing changed: report-only kinds and findings, a stale
	// generation, a finding of another kind, a threshold not met.
	_, err := fix(audit.AuditSplitConsumer, ledgertest.AuditSplit, 1)
	refused(err, fault.ErrInvalid, fault.CodeAuditNotFixable)
	_, err = fix(audit.AuditOverCapacity, rp["cn2"], 0)
	refused(err, fault.ErrInvalid, fault.CodeAuditNotFixable)
	_, err = fix("orphans", ledgertest.AuditSplit, 1)
	refused(err, fault.ErrInvalid, fault.CodeAuditUnknownKind)
	_, err = fix(audit.AuditStaleMigration, ledgertest.AuditNova, 1)
	refused(err, fault.ErrConflict, fault.CodeAuditNotFixable)
	_, err = fix(audit.AuditStaleMigration, ledgertest.AuditMigrate, 7)
	refused(err, fault.ErrConflict, fault.CodeConcurrentUpdate)
	_, err = fix(audit.AuditEmptyConsumer, ledgertest.AuditFine, 1)
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)
	_, err = fix(audit.AuditEmptyConsumer, "c9000000-0000-4000-8000-000000000009", 0)
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)
	_, err = fix(audit.AuditEmptyConsumer, "not-a-uuid", 0)
	refused(err, fault.ErrInvalid, fault.CodeAuditInvalid)
	_, err = f.Store.Auditor.AuditFix(f.Ctx, audit.AuditFixParams{Kind: audit.AuditStaleMigration, ConsumerUUID: ledgertest.AuditMigrate,
		ConsumerGeneration: 1, Thresholds: audit.DefaultAuditThresholds()})
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)
	if after := f.Dump(); after != before {
		t.Errorf("a refused fix wrote:\n%s\n---\n%s", before, after)
	}

	// The empty consumer is deleted, once.
	if fd, err := fix(audit.AuditEmptyConsumer, ledgertest.AuditEmpty, 0); err != nil || fd.Fix.Action != audit.AuditFixDeleteConsumer {
		t.Fatal(fd, err)
	}
	if c, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, ledgertest.AuditEmpty); err != nil || c.Consumer != nil {
		t.Errorf("empty consumer still there: %+v %v", c, err)
	}
	_, err = fix(audit.AuditEmptyConsumer, ledgertest.AuditEmpty, 0)
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)

	// The stale move is confirmed: the migration's allocations and the
	// move record go, the instance keeps its destination.
	cn1 := f.Usages(rp["cn1"])
	if fd, err := fix(audit.AuditStaleMigration, ledgertest.AuditMigrate, 1); err != nil || fd.Fix.Action != audit.AuditFixConfirmMove {
		t.Fatal(fd, err)
	}
	if m, err := f.Store.Claims.ClaimMoveGet(f.Ctx, ledgertest.AuditInstance); err != nil || m != nil {
		t.Errorf("move still recorded: %+v %v", m, err)
	}
	if c, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, ledgertest.AuditMigrate); err != nil || c.Consumer != nil {
		t.Errorf("migration still there: %+v %v", c, err)
	}
	if c, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, ledgertest.AuditInstance); err != nil || len(c.Allocations) != 1 ||
		c.Allocations[0].ProviderUUID != rp["cn2"] {
		t.Errorf("instance: %+v %v", c, err)
	}
	if got := f.Usages(rp["cn1"]); got.Usages["VCPU"] != cn1.Usages["VCPU"]-2 || got.Generation != cn1.Generation {
		t.Errorf("cn1 usages %+v, before %+v", got, cn1)
	}
	for _, fd := range auditAll(t, f, audit.AuditParams{Thresholds: all}) {
		if fd.Consumer != nil && (fd.Consumer.UUID == ledgertest.AuditMigrate || fd.Consumer.UUID == ledgertest.AuditEmpty) {
			t.Errorf("still a finding: %+v", fd)
		}
	}
}

// TestAuditFixUnsettled: a move whose instance holds allocations where
// the migration does is not confirmed by the audit.
func TestAuditFixUnsettled(t *testing.T) {
	f := newFixture(t)
	rp := ledgertest.AuditCloud(f.Fixture)
	// The instance gets a share of cn1 again (a client's own write).
	back := ledgertest.Alloc(ledgertest.AuditInstance, rp["cn2"], ledgertest.Res("MEMORY_MB", 256))
	back.Allocations = append(back.Allocations, engine.Allocation{ProviderUUID: rp["cn1"], Resources: []engine.ResourceAmount{ledgertest.Res("DISK_GB", 1)}})
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{back}); err != nil {
		t.Fatal(err)
	}
	page, err := f.Store.Auditor.Audit(f.Ctx, audit.AuditParams{Kinds: []string{audit.AuditStaleMigration}, Limit: 2})
	if err != nil || len(page.Findings) != 2 || page.Findings[1].Consumer.UUID != ledgertest.AuditMigrate ||
		page.Findings[1].Fix.Action != audit.AuditFixReportOnly {
		t.Fatalf("%+v %v", page, err)
	}
	_, err = f.Store.Auditor.AuditFix(f.Ctx, audit.AuditFixParams{Kind: audit.AuditStaleMigration, ConsumerUUID: ledgertest.AuditMigrate, ConsumerGeneration: 1})
	if le := ledgertest.Rejection(t, err, fault.ErrConflict); le.Code != fault.CodeAuditNotFixable {
		t.Errorf("%v", err)
	}
	if !errors.Is(err, fault.ErrConflict) {
		t.Error(err)
	}
}

// TestAuditExpiredLease: claims whose lease ran out more than the grace
// ago and still hold allocations (as if no reaper ran) are findings; a
// provisional one is released by its fix, a move's is report only, and
// one within the grace is none.
func TestAuditExpiredLease(t *testing.T) {
	f := newFixture(t)
	rp := ledgertest.AuditCloud(f.Fixture)
	const (
		lapsed = "d1000000-0000-4000-8000-000000000001" // provisional, ran out 2 minutes ago
		recent = "d2000000-0000-4000-8000-000000000002" // provisional, ran out 10 s ago
		moving = "d3000000-0000-4000-8000-000000000003" // a move's lease, ran out 2 minutes ago
	)
	for _, c := range []struct {
		uuid, state string
		ago         time.Duration
	}{{lapsed, "provisional", 2 * time.Minute}, {recent, "provisional", 10 * time.Second}, {moving, "moving", 2 * time.Minute}} {
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.Alloc(c.uuid, rp["cn4"], ledgertest.Res("VCPU", 1))}); err != nil {
			t.Fatal(err)
		}
		f.Exec(`INSERT INTO claim_state (consumer_uuid, op, request, state, lease_seconds, lease_expires_at)
			VALUES ($1, 'claim', '{}', $2, 30, now() - $3::interval)`, c.uuid, c.state, c.ago)
	}
	var got []string
	for _, fd := range auditAll(t, f, audit.AuditParams{Kinds: []string{audit.AuditExpiredLease}, Limit: 1}) {
		got = append(got, fd.Consumer.UUID[:2]+" "+fd.Fix.Action)
		if fd.Age < 2*time.Minute || fd.Age > 3*time.Minute || len(fd.Providers) != 1 || fd.Providers[0].UUID != rp["cn4"] {
			t.Errorf("finding %+v", fd)
		}
	}
	if want := []string{"d1 release_lease", "d3 report_only"}; !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}

	fix := func(consumer string, generation int64) error {
		_, err := f.Store.Auditor.AuditFix(f.Ctx, audit.AuditFixParams{Kind: audit.AuditExpiredLease, ConsumerUUID: consumer,
			ConsumerGeneration: generation})
		return err
	}
	before := f.Dump()
	if le := ledgertest.Rejection(t, fix(moving, 1), fault.ErrConflict); le.Code != fault.CodeAuditNotFixable {
		t.Errorf("moving: %v", le)
	}
	if le := ledgertest.Rejection(t, fix(recent, 1), fault.ErrConflict); le.Code != fault.CodeAuditFindingGone {
		t.Errorf("within the grace: %v", le)
	}
	if le := ledgertest.Rejection(t, fix(lapsed, 5), fault.ErrConflict); le.Code != fault.CodeConcurrentUpdate {
		t.Errorf("stale generation: %v", le)
	}
	if after := f.Dump(); after != before {
		t.Errorf("a refused fix wrote:\n%s\n---\n%s", before, after)
	}
	cn4 := f.Usages(rp["cn4"])
	if err := fix(lapsed, 1); err != nil {
		t.Fatal(err)
	}
	if c, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, lapsed); err != nil || c.Consumer != nil {
		t.Errorf("released consumer still there: %+v %v", c, err)
	}
	if st, err := f.Store.Claims.ClaimStateGet(f.Ctx, lapsed); err != nil || st != nil {
		t.Errorf("stored claim still there: %+v %v", st, err)
	}
	if got := f.Usages(rp["cn4"]); got.Usages["VCPU"] != cn4.Usages["VCPU"]-1 {
		t.Errorf("cn4 usages %+v, before %+v", got, cn4)
	}
	if le := ledgertest.Rejection(t, fix(lapsed, 1), fault.ErrConflict); le.Code != fault.CodeAuditFindingGone {
		t.Errorf("fixed twice: %v", le)
	}
}
