package audit_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// The consumers of the audit's cloud, in uuid order.
const (
	auditFine     = "c1000000-0000-4000-8000-000000000001" // on cn1
	auditShared   = "c2000000-0000-4000-8000-000000000002" // on cn1 and the sharing provider
	auditSplit    = "c3000000-0000-4000-8000-000000000003" // on cn1 and cn2
	auditInstance = "c4000000-0000-4000-8000-000000000004" // moved from cn1 to cn2
	auditMigrate  = "c5000000-0000-4000-8000-000000000005" // the move's source, on cn1
	auditNova     = "c6000000-0000-4000-8000-000000000006" // a MIGRATION consumer without a move
	auditEmpty    = "c7000000-0000-4000-8000-000000000007" // a consumer row without allocations
	auditTree     = "c8000000-0000-4000-8000-000000000008" // on cn3's child
)

// auditCloud seeds a cloud with one finding of every kind when every
// migration and report counts as stale, and returns the providers'
// uuids by name.
func auditCloud(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	rp := map[string]string{}
	for i, name := range []string{"cn1", "cn2", "cn3", "cn4", "ss", "cn3-numa0"} {
		rp[name] = fmt.Sprintf("a%d000000-0000-4000-8000-000000000000", i+1)
		parent := ""
		if name == "cn3-numa0" {
			parent = rp["cn3"]
		}
		mustCreate(t, f.store, name, rp[name], parent)
		if _, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: rp[name]},
			[]engine.Inventory{inv("VCPU", 8), inv("MEMORY_MB", 4096), inv("DISK_GB", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.store.Providers.ProviderTraitsReplace(f.ctx, rp["ss"], 1, []string{"MISC_SHARES_VIA_AGGREGATE"}); err != nil {
		t.Fatal(err)
	}
	two := func(consumer string, a, b string) resources.ConsumerAllocations {
		w := alloc(consumer, rp[a], res("VCPU", 1))
		w.Allocations = append(w.Allocations, engine.Allocation{ProviderUUID: rp[b], Resources: []engine.ResourceAmount{res("DISK_GB", 10)}})
		return w
	}
	nova := alloc(auditNova, rp["cn2"], res("VCPU", 2))
	nova.ConsumerType = resources.MigrationConsumerType
	for _, w := range []resources.ConsumerAllocations{
		alloc(auditFine, rp["cn1"], res("VCPU", 1), res("MEMORY_MB", 512)),
		two(auditShared, "cn1", "ss"),
		two(auditSplit, "cn1", "cn2"),
		alloc(auditInstance, rp["cn1"], res("VCPU", 2)),
		nova,
		alloc(auditTree, rp["cn3-numa0"], res("VCPU", 2)),
	} {
		if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{w}); err != nil {
			t.Fatal(err)
		}
	}
	// A move as claims write it: the instance to cn2, its source to the
	// migration consumer.
	mig := alloc(auditMigrate, rp["cn1"], res("VCPU", 2))
	mig.ConsumerType = resources.MigrationConsumerType
	if err := f.store.Allocations.ClaimWrite(f.ctx, resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{alloc(auditInstance, rp["cn2"], res("VCPU", 2)), mig},
		Move:      &claimrecords.MoveRecord{ConsumerUUID: auditInstance, MigrationUUID: auditMigrate, Reason: "relocation", SourceRoot: rp["cn1"]},
	}); err != nil {
		t.Fatal(err)
	}
	f.exec(`INSERT INTO consumers (uuid, project_id, user_id) SELECT $1, project_id, user_id FROM consumers LIMIT 1`, auditEmpty)
	// Reports: cn1 and cn3 an hour ago, cn2 now, cn4 (nothing on it) an
	// hour ago.
	for name, at := range map[string]time.Duration{"cn1": time.Hour, "cn2": 0, "cn3": time.Hour, "cn4": time.Hour} {
		if err := f.store.Cloud.ProviderStatePut(f.ctx, rp[name], engine.ProviderState{ReportedAt: time.Now().Add(-at)}); err != nil {
			t.Fatal(err)
		}
	}
	// cn2 holds 4 VCPU; its inventory lowered to 3.
	if _, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: rp["cn2"]},
		[]engine.Inventory{inv("VCPU", 3), inv("MEMORY_MB", 4096), inv("DISK_GB", 100)}); err != nil {
		t.Fatal(err)
	}
	return rp
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.db.Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatalf("exec %q: %v", sql, err)
	}
}

// auditAll pages through the audit, limit findings a page.
func auditAll(t *testing.T, f *fixture, p audit.AuditParams) []audit.AuditFinding {
	t.Helper()
	var all []audit.AuditFinding
	for pages := 0; ; pages++ {
		page, err := f.store.Auditor.Audit(f.ctx, p)
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

// summary is a finding in one line: kind, subject, amounts, fix.
func summary(f audit.AuditFinding, names map[string]string) string {
	subject := ""
	if f.Consumer != nil {
		subject = f.Consumer.UUID[:2]
	} else {
		subject = names[f.Provider.UUID]
		for i, r := range f.Provider.Resources {
			subject += fmt.Sprintf(" %s=%d/%g", r.Class, r.Amount, f.Provider.Capacity[i])
		}
	}
	var held []string
	for _, p := range f.Providers {
		for _, r := range p.Resources {
			held = append(held, fmt.Sprintf("%s:%s=%d", names[p.UUID], r.Class, r.Amount))
		}
	}
	var consumers []string
	for _, c := range f.Consumers {
		consumers = append(consumers, c[:2])
	}
	return fmt.Sprintf("%s %s [%s] (%s) %s", f.Kind, subject, strings.Join(held, " "), strings.Join(consumers, " "), f.Fix.Action)
}

func TestAuditFindings(t *testing.T) {
	f := newFixture(t)
	rp := auditCloud(t, f)
	names := map[string]string{}
	for n, u := range rp {
		names[u] = n
	}
	before := f.dump()
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
			got = append(got, summary(fd, names))
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
	page, err := f.store.Auditor.Audit(f.ctx, audit.AuditParams{Kinds: []string{audit.AuditStaleMigration}, Limit: 2, Thresholds: all})
	if err != nil || len(page.Findings) != 2 {
		t.Fatal(page, err)
	}
	m := page.Findings[1]
	if m.Consumer.UUID != auditMigrate || m.Consumer.Type != resources.MigrationConsumerType || m.Consumer.Generation != 1 ||
		m.Consumer.ProjectID != "proj" || m.Move == nil || m.Move.ConsumerUUID != auditInstance ||
		m.Age < 0 || m.Age > time.Minute || m.Since.IsZero() ||
		!strings.Contains(m.Detail, "relocation of consumer "+auditInstance) || !strings.Contains(m.Fix.Detail, "cn1") {
		t.Errorf("finding %+v", m)
	}
	if page.NextMarker == "" {
		t.Error("a full page has a marker")
	}

	if after := f.dump(); after != before {
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
		{audit.AuditParams{Marker: "split_consumer:" + auditFine}, fault.CodeAuditInvalid},
		{audit.AuditParams{Marker: "nope:1"}, fault.CodeAuditInvalid},
		{audit.AuditParams{Kinds: []string{audit.AuditEmptyConsumer}, Marker: "split_consumer:5"}, fault.CodeAuditInvalid},
		{audit.AuditParams{Thresholds: audit.AuditThresholds{StateAge: -time.Second}}, fault.CodeAuditInvalid},
	} {
		_, err := f.store.Auditor.Audit(f.ctx, tc.p)
		if le := rejection(t, err, fault.ErrInvalid); le.Code != tc.code {
			t.Errorf("%+v: code %s, want %s (%v)", tc.p, le.Code, tc.code, err)
		}
	}
}

func TestAuditFix(t *testing.T) {
	f := newFixture(t)
	rp := auditCloud(t, f)
	all := audit.AuditThresholds{}
	fix := func(kind, consumer string, generation int64) (audit.AuditFinding, error) {
		return f.store.Auditor.AuditFix(f.ctx, audit.AuditFixParams{Kind: kind, ConsumerUUID: consumer,
			ConsumerGeneration: generation, Thresholds: all})
	}
	refused := func(err error, kind error, code string) {
		t.Helper()
		if le := rejection(t, err, kind); le.Code != code {
			t.Errorf("code %s, want %s: %v", le.Code, code, err)
		}
	}
	before := f.dump()
	// Refused, nothing changed: report-only kinds and findings, a stale
	// generation, a finding of another kind, a threshold not met.
	_, err := fix(audit.AuditSplitConsumer, auditSplit, 1)
	refused(err, fault.ErrInvalid, fault.CodeAuditNotFixable)
	_, err = fix(audit.AuditOverCapacity, rp["cn2"], 0)
	refused(err, fault.ErrInvalid, fault.CodeAuditNotFixable)
	_, err = fix("orphans", auditSplit, 1)
	refused(err, fault.ErrInvalid, fault.CodeAuditUnknownKind)
	_, err = fix(audit.AuditStaleMigration, auditNova, 1)
	refused(err, fault.ErrConflict, fault.CodeAuditNotFixable)
	_, err = fix(audit.AuditStaleMigration, auditMigrate, 7)
	refused(err, fault.ErrConflict, fault.CodeConcurrentUpdate)
	_, err = fix(audit.AuditEmptyConsumer, auditFine, 1)
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)
	_, err = fix(audit.AuditEmptyConsumer, "c9000000-0000-4000-8000-000000000009", 0)
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)
	_, err = fix(audit.AuditEmptyConsumer, "not-a-uuid", 0)
	refused(err, fault.ErrInvalid, fault.CodeAuditInvalid)
	_, err = f.store.Auditor.AuditFix(f.ctx, audit.AuditFixParams{Kind: audit.AuditStaleMigration, ConsumerUUID: auditMigrate,
		ConsumerGeneration: 1, Thresholds: audit.DefaultAuditThresholds()})
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)
	if after := f.dump(); after != before {
		t.Errorf("a refused fix wrote:\n%s\n---\n%s", before, after)
	}

	// The empty consumer is deleted, once.
	if fd, err := fix(audit.AuditEmptyConsumer, auditEmpty, 0); err != nil || fd.Fix.Action != audit.AuditFixDeleteConsumer {
		t.Fatal(fd, err)
	}
	if c, err := f.store.Allocations.AllocationsByConsumer(f.ctx, auditEmpty); err != nil || c.Consumer != nil {
		t.Errorf("empty consumer still there: %+v %v", c, err)
	}
	_, err = fix(audit.AuditEmptyConsumer, auditEmpty, 0)
	refused(err, fault.ErrConflict, fault.CodeAuditFindingGone)

	// The stale move is confirmed: the migration's allocations and the
	// move record go, the instance keeps its destination.
	cn1 := f.usages(rp["cn1"])
	if fd, err := fix(audit.AuditStaleMigration, auditMigrate, 1); err != nil || fd.Fix.Action != audit.AuditFixConfirmMove {
		t.Fatal(fd, err)
	}
	if m, err := f.store.Claims.ClaimMoveGet(f.ctx, auditInstance); err != nil || m != nil {
		t.Errorf("move still recorded: %+v %v", m, err)
	}
	if c, err := f.store.Allocations.AllocationsByConsumer(f.ctx, auditMigrate); err != nil || c.Consumer != nil {
		t.Errorf("migration still there: %+v %v", c, err)
	}
	if c, err := f.store.Allocations.AllocationsByConsumer(f.ctx, auditInstance); err != nil || len(c.Allocations) != 1 ||
		c.Allocations[0].ProviderUUID != rp["cn2"] {
		t.Errorf("instance: %+v %v", c, err)
	}
	if got := f.usages(rp["cn1"]); got.Usages["VCPU"] != cn1.Usages["VCPU"]-2 || got.Generation != cn1.Generation {
		t.Errorf("cn1 usages %+v, before %+v", got, cn1)
	}
	for _, fd := range auditAll(t, f, audit.AuditParams{Thresholds: all}) {
		if fd.Consumer != nil && (fd.Consumer.UUID == auditMigrate || fd.Consumer.UUID == auditEmpty) {
			t.Errorf("still a finding: %+v", fd)
		}
	}
}

// TestAuditFixUnsettled: a move whose instance holds allocations where
// the migration does is not confirmed by the audit.
func TestAuditFixUnsettled(t *testing.T) {
	f := newFixture(t)
	rp := auditCloud(t, f)
	// The instance gets a share of cn1 again (a client's own write).
	back := alloc(auditInstance, rp["cn2"], res("MEMORY_MB", 256))
	back.Allocations = append(back.Allocations, engine.Allocation{ProviderUUID: rp["cn1"], Resources: []engine.ResourceAmount{res("DISK_GB", 1)}})
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{back}); err != nil {
		t.Fatal(err)
	}
	page, err := f.store.Auditor.Audit(f.ctx, audit.AuditParams{Kinds: []string{audit.AuditStaleMigration}, Limit: 2})
	if err != nil || len(page.Findings) != 2 || page.Findings[1].Consumer.UUID != auditMigrate ||
		page.Findings[1].Fix.Action != audit.AuditFixReportOnly {
		t.Fatalf("%+v %v", page, err)
	}
	_, err = f.store.Auditor.AuditFix(f.ctx, audit.AuditFixParams{Kind: audit.AuditStaleMigration, ConsumerUUID: auditMigrate, ConsumerGeneration: 1})
	if le := rejection(t, err, fault.ErrConflict); le.Code != fault.CodeAuditNotFixable {
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
	rp := auditCloud(t, f)
	const (
		lapsed = "d1000000-0000-4000-8000-000000000001" // provisional, ran out 2 minutes ago
		recent = "d2000000-0000-4000-8000-000000000002" // provisional, ran out 10 s ago
		moving = "d3000000-0000-4000-8000-000000000003" // a move's lease, ran out 2 minutes ago
	)
	for _, c := range []struct {
		uuid, state string
		ago         time.Duration
	}{{lapsed, "provisional", 2 * time.Minute}, {recent, "provisional", 10 * time.Second}, {moving, "moving", 2 * time.Minute}} {
		if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{alloc(c.uuid, rp["cn4"], res("VCPU", 1))}); err != nil {
			t.Fatal(err)
		}
		f.exec(`INSERT INTO claim_state (consumer_uuid, op, request, state, lease_seconds, lease_expires_at)
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
		_, err := f.store.Auditor.AuditFix(f.ctx, audit.AuditFixParams{Kind: audit.AuditExpiredLease, ConsumerUUID: consumer,
			ConsumerGeneration: generation})
		return err
	}
	before := f.dump()
	if le := rejection(t, fix(moving, 1), fault.ErrConflict); le.Code != fault.CodeAuditNotFixable {
		t.Errorf("moving: %v", le)
	}
	if le := rejection(t, fix(recent, 1), fault.ErrConflict); le.Code != fault.CodeAuditFindingGone {
		t.Errorf("within the grace: %v", le)
	}
	if le := rejection(t, fix(lapsed, 5), fault.ErrConflict); le.Code != fault.CodeConcurrentUpdate {
		t.Errorf("stale generation: %v", le)
	}
	if after := f.dump(); after != before {
		t.Errorf("a refused fix wrote:\n%s\n---\n%s", before, after)
	}
	cn4 := f.usages(rp["cn4"])
	if err := fix(lapsed, 1); err != nil {
		t.Fatal(err)
	}
	if c, err := f.store.Allocations.AllocationsByConsumer(f.ctx, lapsed); err != nil || c.Consumer != nil {
		t.Errorf("released consumer still there: %+v %v", c, err)
	}
	if st, err := f.store.Claims.ClaimStateGet(f.ctx, lapsed); err != nil || st != nil {
		t.Errorf("stored claim still there: %+v %v", st, err)
	}
	if got := f.usages(rp["cn4"]); got.Usages["VCPU"] != cn4.Usages["VCPU"]-1 {
		t.Errorf("cn4 usages %+v, before %+v", got, cn4)
	}
	if le := rejection(t, fix(lapsed, 1), fault.ErrConflict); le.Code != fault.CodeAuditFindingGone {
		t.Errorf("fixed twice: %v", le)
	}
}
