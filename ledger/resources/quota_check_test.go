package resources_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// usageMismatchSQL lists the counters that differ from what the
// allocations add up to, computed here from scratch: per project, the
// sum of each class and the number of consumers holding allocations,
// migration consumers left out.
const usageMismatchSQL = `
WITH counted AS (
	SELECT c.* FROM consumers c LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
	WHERE t.name IS DISTINCT FROM 'MIGRATION'
), want AS (
	SELECT c.project_id, rc.name AS resource, sum(a.used)::bigint AS used
	FROM allocations a JOIN counted c ON c.id = a.consumer_id JOIN resource_classes rc ON rc.id = a.resource_class_id
	GROUP BY 1, 2
	UNION ALL
	SELECT c.project_id, 'consumers', count(*) FROM counted c
	WHERE EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id) GROUP BY 1
), have AS (
	SELECT project_id, resource, used FROM project_usages WHERE used <> 0
)
SELECT COALESCE(w.project_id, h.project_id), COALESCE(w.resource, h.resource), COALESCE(w.used, 0), COALESCE(h.used, 0)
FROM want w FULL JOIN have h ON h.project_id = w.project_id AND h.resource = w.resource
WHERE w.used IS DISTINCT FROM h.used`

// checkUsages fails the test when a usage counter is not what the
// allocations add up to.
func (f *fixture) checkUsages() {
	f.T.Helper()
	rows, err := f.DB.Query(f.Ctx, usageMismatchSQL)
	if err != nil {
		f.T.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p int32
		var r string
		var want, have int64
		if err := rows.Scan(&p, &r, &want, &have); err != nil {
			f.T.Fatal(err)
		}
		f.T.Errorf("project %d: %s counted %d, allocations hold %d", p, r, have, want)
	}
	if err := rows.Err(); err != nil {
		f.T.Fatal(err)
	}
}

// projectUsage returns project's counters as ProjectUsage reads them.
func (f *fixture) projectUsage(project string) map[string]int64 {
	f.T.Helper()
	u, err := f.Store.Quotas.ProjectUsage(f.Ctx, project)
	if err != nil {
		f.T.Fatal(err)
	}
	return u
}

// TestProjectUsagesFollowEveryWrite writes allocations every way the
// ledger can (the claim fast path, the general path with several
// consumers, a consumer changing project and type, a move's migration
// consumer, a reshape, deletes, a consumer emptied) and checks after
// each that the counters are exactly what the allocations add up to; an
// update of an allocation in place is refused.
func TestProjectUsagesFollowEveryWrite(t *testing.T) {
	f := newFixture(t)
	a := f.Provider("a", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536), ledgertest.Inv("DISK_GB", 1000))
	b := f.Provider("b", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536))
	c1, c2, c3, mig := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		f.checkUsages()
	}

	fast := ledgertest.NewClaim(c1, a, ledgertest.Res("VCPU", 4), ledgertest.Res("MEMORY_MB", 4096))
	fast.ProjectID = "p1"
	step("fast claim", f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{fast}))
	if got := f.projectUsage("p1"); got["VCPU"] != 4 || got["MEMORY_MB"] != 4096 || got[quotas.ResourceConsumers] != 1 {
		t.Fatalf("p1 after one claim: %v", got)
	}

	w2, w3 := ledgertest.Alloc(c2, a, ledgertest.Res("VCPU", 2), ledgertest.Res("DISK_GB", 10)), ledgertest.Alloc(c3, b, ledgertest.Res("VCPU", 1))
	w2.ProjectID, w3.ProjectID = "p1", "p2"
	step("two consumers", f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w2, w3}))

	// c2 grows and moves to p2, as a PUT naming another project does.
	w2 = ledgertest.Alloc(c2, b, ledgertest.Res("VCPU", 3))
	w2.ProjectID = "p2"
	step("project change", f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w2}))
	if got := f.projectUsage("p1"); got["VCPU"] != 4 || got[quotas.ResourceConsumers] != 1 || got["DISK_GB"] != 0 {
		t.Fatalf("p1 after c2 left: %v", got)
	}

	// A move: the migration consumer takes c1's allocations, c1 gets b.
	inst := ledgertest.Alloc(c1, b, ledgertest.Res("VCPU", 4), ledgertest.Res("MEMORY_MB", 4096))
	inst.ProjectID = "p1"
	m := ledgertest.Alloc(mig, a, ledgertest.Res("VCPU", 4), ledgertest.Res("MEMORY_MB", 4096))
	m.ProjectID, m.ConsumerType = "p1", "MIGRATION"
	step("move", f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{inst, m},
		Move: &claimrecords.MoveRecord{ConsumerUUID: c1, MigrationUUID: mig, Reason: "relocation"}}))
	if got := f.projectUsage("p1"); got["VCPU"] != 4 || got[quotas.ResourceConsumers] != 1 {
		t.Fatalf("p1 during the move: %v, want the instance's new allocations alone", got)
	}
	// The migration consumer turned into an instance counts again.
	m.ConsumerType = "INSTANCE"
	step("type change", f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{m}))
	if got := f.projectUsage("p1"); got["VCPU"] != 8 || got[quotas.ResourceConsumers] != 2 {
		t.Fatalf("p1 after the type change: %v", got)
	}

	// A reshape moves c3's VCPU to a new child of b.
	child, err := f.Store.Providers.ProviderCreate(f.Ctx, resources.ProviderCreateParams{Name: "child", ParentUUID: b})
	if err != nil {
		t.Fatal(err)
	}
	w3 = ledgertest.Alloc(c3, child.UUID, ledgertest.Res("VCPU", 1))
	w3.ProjectID = "p2"
	step("reshape", f.Store.Allocations.Reshape(f.Ctx, resources.ReshapeParams{
		Inventories: []resources.ProviderInventoryWrite{{ProviderUUID: child.UUID, Generation: child.Generation,
			Inventories: []engine.Inventory{ledgertest.Inv("VCPU", 8)}}},
		Allocations: []resources.ConsumerAllocations{w3},
	}))

	step("delete", f.Store.Allocations.AllocationsDelete(f.Ctx, c1))
	emptied := resources.ConsumerAllocations{ConsumerUUID: c2, ProjectID: "p2", UserID: "user"}
	step("emptied", f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{emptied}))
	if got := f.projectUsage("p2"); got["VCPU"] != 1 || got[quotas.ResourceConsumers] != 1 {
		t.Fatalf("p2 at the end: %v", got)
	}
	if _, err := f.DB.Exec(f.Ctx, `UPDATE allocations SET used = used + 1`); err == nil {
		t.Fatal("an update of allocations in place was not refused")
	}
}

// TestProjectUsagesFollowLeasesAndAuditFixes: the writers of allocations
// that came with claim leases and the audit keep the usage counters
// exact: the lease reaper's release of a provisional claim and its
// revert of a move (ClaimWrite with IfLeaseExpired), and POST
// /audit/fix's deletes of an empty consumer, a stale move's migration
// consumer and an expired lease's consumer. After each, the counters are
// what the allocations add up to.
func TestProjectUsagesFollowLeasesAndAuditFixes(t *testing.T) {
	f := newFixture(t)
	rp := ledgertest.AuditCloud(f.Fixture)
	f.checkUsages()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		f.checkUsages()
	}
	usage := func(project string, vcpu, consumers int64) {
		t.Helper()
		if got := f.projectUsage(project); got["VCPU"] != vcpu || got[quotas.ResourceConsumers] != consumers {
			t.Fatalf("%s holds %v, want %d VCPU in %d consumers", project, got, vcpu, consumers)
		}
	}
	leased := func(w resources.ConsumerAllocations, mode claimrecords.LeaseMode) resources.ClaimWriteParams {
		return resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w},
			State: &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(`{}`), RootUUID: w.Allocations[0].ProviderUUID,
				LeaseSeconds: 60, Mode: mode}}
	}

	// The reaper releases a provisional claim whose lease ran out.
	prov := ledgertest.NewClaim(uuid.NewString(), rp["cn4"], ledgertest.Res("VCPU", 2), ledgertest.Res("MEMORY_MB", 512))
	prov.ProjectID = "leased"
	step("provisional claim", f.Store.Allocations.ClaimWrite(f.Ctx, leased(prov, claimrecords.LeaseSet)))
	usage("leased", 2, 1)
	f.Expire(prov.ConsumerUUID)
	step("lease released", f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{IfLeaseExpired: prov.ConsumerUUID,
		Consumers: []resources.ConsumerAllocations{{ConsumerUUID: prov.ConsumerUUID, ProjectID: "leased", UserID: "user",
			CheckGeneration: true, Generation: ledgertest.Gen(1)}}}))
	usage("leased", 0, 0)

	// The reaper reverts a move (a resize up, cn4 to cn3) whose lease ran
	// out: the instance gets its source back, the migration consumer
	// (which counted toward nothing) is emptied.
	inst, mig := uuid.NewString(), uuid.NewString()
	w := ledgertest.NewClaim(inst, rp["cn4"], ledgertest.Res("VCPU", 2))
	w.ProjectID = "leased"
	step("claim", f.Store.Allocations.ClaimWrite(f.Ctx, leased(w, claimrecords.LeaseSet)))
	dest := ledgertest.Alloc(inst, rp["cn3"], ledgertest.Res("VCPU", 4))
	dest.ProjectID, dest.CheckGeneration, dest.Generation = "leased", true, ledgertest.Gen(1)
	src := ledgertest.Alloc(mig, rp["cn4"], ledgertest.Res("VCPU", 2))
	src.ProjectID, src.ConsumerType, src.CheckGeneration = "leased", resources.MigrationConsumerType, true
	move := leased(dest, claimrecords.LeaseMove)
	move.Consumers = append(move.Consumers, src)
	move.State.Op = "move"
	move.Move = &claimrecords.MoveRecord{ConsumerUUID: inst, MigrationUUID: mig, Reason: "resize", SourceRoot: rp["cn4"]}
	step("move", f.Store.Allocations.ClaimWrite(f.Ctx, move))
	usage("leased", 4, 1)
	f.Expire(inst)
	back := ledgertest.Alloc(inst, rp["cn4"], ledgertest.Res("VCPU", 2))
	back.ProjectID, back.CheckGeneration, back.Generation = "leased", true, ledgertest.Gen(2)
	step("move reverted", f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{IfLeaseExpired: inst, ForgetMove: inst,
		MoveEnd: claimrecords.MoveReverted, Consumers: []resources.ConsumerAllocations{back, {ConsumerUUID: mig, ProjectID: "leased",
			UserID: "user", CheckGeneration: true, Generation: ledgertest.Gen(1)}}}))
	usage("leased", 2, 1)

	// The audit's fixes.
	fix := func(kind, consumer string, generation int64) error {
		_, err := f.Store.Auditor.AuditFix(f.Ctx, audit.AuditFixParams{Kind: kind, ConsumerUUID: consumer,
			ConsumerGeneration: generation})
		return err
	}
	before := f.projectUsage("proj")
	step("empty consumer deleted", fix(audit.AuditEmptyConsumer, ledgertest.AuditEmpty, 0))
	step("stale move confirmed", fix(audit.AuditStaleMigration, ledgertest.AuditMigrate, 1))
	usage("proj", before["VCPU"], before[quotas.ResourceConsumers]) // a migration consumer counts toward nothing
	lapsed := ledgertest.Alloc(uuid.NewString(), rp["cn4"], ledgertest.Res("VCPU", 1))
	step("a claim", f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{lapsed}))
	f.Exec(`INSERT INTO claim_state (consumer_uuid, op, request, state, lease_seconds, lease_expires_at)
		VALUES ($1, 'claim', '{}', 'provisional', 30, now() - interval '2 minutes')`, lapsed.ConsumerUUID)
	usage("proj", before["VCPU"]+1, before[quotas.ResourceConsumers]+1)
	step("expired lease released", fix(audit.AuditExpiredLease, lapsed.ConsumerUUID, 1))
	usage("proj", before["VCPU"], before[quotas.ResourceConsumers])
}

// quotaRefusal asserts err is the over-quota refusal and that its detail
// says want.
func quotaRefusal(t *testing.T, err error, want string) {
	t.Helper()
	if !fault.HasCode(err, fault.ErrForbidden, fault.CodeOverQuota) {
		t.Fatalf("got %v, want a refusal %s", err, fault.CodeOverQuota)
	}
	if le, _ := fault.As(err); !strings.Contains(le.Msg, want) {
		t.Fatalf("refusal %q does not say %q", le.Msg, want)
	}
}

// claimIn is a new consumer's claim of VCPU and MEMORY_MB on rp for
// project.
func claimIn(project, rp string, vcpu, mem int64) resources.ConsumerAllocations {
	w := ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", vcpu), ledgertest.Res("MEMORY_MB", mem))
	w.ProjectID = project
	return w
}

// TestQuotaStoredLimits checks a project against limits kept in the
// ledger: its own, else the registered ones, resource by resource; a
// claim that reaches a limit exactly is written, the next one refused
// with nothing written, by the fast path and the general path alike; a
// write that does not grow a counter passes even over the limit.
func TestQuotaStoredLimits(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536))
	stored := &quotas.Quota{}
	if err := f.Store.Quotas.RegisteredLimitsSet(f.Ctx, quotas.Limits{"VCPU": 100, quotas.ResourceConsumers: 3}); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Quotas.LimitsSet(f.Ctx, "demo", quotas.Limits{"VCPU": 8, "MEMORY_MB": 8192}); err != nil {
		t.Fatal(err)
	}
	write := func(w resources.ConsumerAllocations) error {
		return f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w}, Quota: stored})
	}
	if err := write(claimIn("demo", rp, 4, 2048)); err != nil {
		t.Fatal(err)
	}
	if err := write(claimIn("demo", rp, 4, 2048)); err != nil {
		t.Fatalf("a claim that reaches the limit exactly: %v", err)
	}
	before := f.Dump()
	quotaRefusal(t, write(claimIn("demo", rp, 1, 1)), "project demo: VCPU 1 requested, 8 of 8 used")
	if f.Dump() != before {
		t.Fatal("a refused claim changed the ledger")
	}
	// Without a quota the same write passes (Placement's writes are not
	// checked unless asked).
	over := claimIn("demo", rp, 2, 1)
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{over}); err != nil {
		t.Fatal(err)
	}
	// demo is now over its limit: shrinking passes, growing does not.
	over.CheckGeneration, over.Generation = true, ledgertest.Gen(1)
	over.Allocations[0].Resources = []engine.ResourceAmount{ledgertest.Res("VCPU", 1), ledgertest.Res("MEMORY_MB", 1)}
	if err := write(over); err != nil {
		t.Fatalf("a write that shrinks a project over its limit: %v", err)
	}
	over.Generation = ledgertest.Gen(2)
	over.Allocations[0].Resources = []engine.ResourceAmount{ledgertest.Res("VCPU", 2), ledgertest.Res("MEMORY_MB", 1)}
	quotaRefusal(t, write(over), "project demo: VCPU 1 requested, 9 of 8 used")

	// Another project has the registered limits: 3 consumers.
	for range 3 {
		if err := write(claimIn("other", rp, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	quotaRefusal(t, write(claimIn("other", rp, 1, 1)), "project other: consumers 1 requested, 3 of 3 used")
	// Its own limits replace the registered ones resource by resource.
	if err := f.Store.Quotas.LimitsSet(f.Ctx, "other", quotas.Limits{quotas.ResourceConsumers: 4}); err != nil {
		t.Fatal(err)
	}
	if err := write(claimIn("other", rp, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Quotas.LimitsDelete(f.Ctx, "other"); err != nil {
		t.Fatal(err)
	}
	quotaRefusal(t, write(claimIn("other", rp, 1, 1)), "consumers 1 requested, 4 of 3 used")
	f.checkUsages()
}

// TestQuotaGivenLimits checks limits given with the write (Keystone's):
// a project absent from them has none; two resources over at once are
// both named; a migration consumer adds nothing.
func TestQuotaGivenLimits(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536))
	q := &quotas.Quota{Given: map[string]quotas.Limits{"demo": {"VCPU": 4, "MEMORY_MB": 1024}}}
	write := func(w ...resources.ConsumerAllocations) error {
		return f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: w, Quota: q})
	}
	if err := write(claimIn("free", rp, 40, 40000)); err != nil {
		t.Fatalf("a project without limits: %v", err)
	}
	quotaRefusal(t, write(claimIn("demo", rp, 5, 2048)),
		"project demo: MEMORY_MB 2048 requested, 0 of 1024 used, VCPU 5 requested, 0 of 4 used")
	// Two consumers of demo in one general-path write, together over.
	quotaRefusal(t, write(claimIn("demo", rp, 2, 1), claimIn("demo", rp, 3, 1)), "VCPU 5 requested, 0 of 4 used")
	m := claimIn("demo", rp, 8, 1)
	m.ConsumerType = "MIGRATION"
	if err := write(m); err != nil {
		t.Fatalf("a migration consumer: %v", err)
	}
	if err := write(claimIn("demo", rp, 4, 1024)); err != nil {
		t.Fatal(err)
	}
	f.checkUsages()
}

// TestQuotaNeverExceededConcurrently races claims of one project, all
// of one size, from two stores (two berthd processes) and many
// goroutines, through the fast path, batches and the general path
// (consumers written two at a time): exactly as many claims as the limit
// holds are written, and every other is refused over quota. The second
// store was opened before the limit was stored: its fast writes check
// the limit all the same.
func TestQuotaNeverExceededConcurrently(t *testing.T) {
	for _, source := range []string{"stored", "given"} {
		t.Run(source, func(t *testing.T) {
			dbURL := ledgertest.NewDB(t)
			f := newFixtureOn(t, dbURL)
			stores := []*ledger.Store{f.Store, ledgertest.OpenStore(t, dbURL)}
			var rps []string
			for i := range 6 {
				rps = append(rps, f.Provider(fmt.Sprintf("rp%d", i), ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 1<<20)))
			}
			const limit, size, claims = 40, 4, 60
			q := &quotas.Quota{Given: map[string]quotas.Limits{"race": {"VCPU": limit}}}
			if source == "stored" {
				q = &quotas.Quota{}
				if err := f.Store.Quotas.LimitsSet(f.Ctx, "race", quotas.Limits{"VCPU": limit}); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			written, refused := 0, 0
			var wg sync.WaitGroup
			for i := range claims / 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := stores[i%2]
					ws := []resources.ConsumerAllocations{claimIn("race", rps[i%6], size, 1), claimIn("race", rps[(i+1)%6], size, 1)}
					var errs []error
					if i%3 == 0 {
						// Two consumers in one transaction: the general path.
						ws[1].Allocations[0].Resources[0].Amount = size
						err := s.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: ws, Quota: q})
						errs = []error{err, err}
					} else {
						for _, w := range ws {
							errs = append(errs, s.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w}, Quota: q}))
						}
					}
					mu.Lock()
					defer mu.Unlock()
					for _, err := range errs {
						switch {
						case err == nil:
							written++
						case fault.HasCode(err, fault.ErrForbidden, fault.CodeOverQuota):
							refused++
						default:
							t.Errorf("claim: %v", err)
						}
					}
				}()
			}
			wg.Wait()
			if got := f.projectUsage("race")["VCPU"]; got > limit || written*size != int(got) {
				t.Fatalf("race holds VCPU %d after %d claims of %d written, limit %d", got, written, size, limit)
			}
			// Every refusal was needed: the claims written fill the limit,
			// so any one refused would have taken the project past it.
			if written != limit/size || written+refused != claims {
				t.Fatalf("%d written, %d refused of %d claims; want %d written", written, refused, claims, limit/size)
			}
			f.checkUsages()
		})
	}
}

// TestQuotaInBatches queues claims of two projects with limits behind a
// busy writer, so that they go out as one batch: the batch writes the
// claims in queue order while they fit, counting the ones before them,
// and the claims over a limit are refused alone.
func TestQuotaInBatches(t *testing.T) {
	bf, _ := newBatchFixture(t)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536))
	q := &quotas.Quota{Given: map[string]quotas.Limits{"p1": {"VCPU": 6}, "p2": {quotas.ResourceConsumers: 2}}}
	queued := queuedClaims(bf.store)
	var answers []chan error
	for i := range 8 {
		w := claimIn([]string{"p1", "p2"}[i%2], rp, 2, 1)
		a := make(chan error, 1)
		answers = append(answers, a)
		go func() {
			a <- bf.store.Allocations.ClaimWrite(bf.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w}, Quota: q})
		}()
	}
	ledgertest.WaitFor(t, func() bool { return queuedClaims(bf.store) == queued+8 })
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatal(err)
	}
	written := map[string]int{}
	for i, a := range answers {
		p := []string{"p1", "p2"}[i%2]
		switch err := <-a; {
		case err == nil:
			written[p]++
		case fault.HasCode(err, fault.ErrForbidden, fault.CodeOverQuota):
		default:
			t.Errorf("claim: %v", err)
		}
	}
	if written["p1"] != 3 || written["p2"] != 2 {
		t.Fatalf("written %v, want p1 3 (6 VCPU) and p2 2 (2 consumers)", written)
	}
	if b, _ := claimBatches(bf.store); b < 2 {
		t.Fatalf("%d batches: the claims did not go out together", b)
	}
	bf.checkUsages()
}

// TestQuotaLimitSetOnAnotherReplica: a replica whose claim batches found
// no limit stored sends its next batch without the limit check
// (batchNoLimitSQL); a limit that another replica of the same database
// stored meanwhile stops that very batch at the limit all the same, and
// the replica checks limits in its batches from then on.
func TestQuotaLimitSetOnAnotherReplica(t *testing.T) {
	bf, held := newBatchFixture(t)
	other, err := ledger.Open(bf.Ctx, ledger.Config{DatabaseURL: bf.dbURL, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 65536))
	stored := &quotas.Quota{}
	batch := func(n int) []error {
		t.Helper()
		queued := queuedClaims(bf.store)
		answers := make([]chan error, n)
		for i := range answers {
			answers[i] = make(chan error, 1)
			w := claimIn("p", rp, 1, 1)
			go func() {
				answers[i] <- bf.store.Allocations.ClaimWrite(bf.Ctx, resources.ClaimWriteParams{
					Consumers: []resources.ConsumerAllocations{w}, Quota: stored})
			}()
		}
		ledgertest.WaitFor(t, func() bool { return queuedClaims(bf.store) == queued+n })
		bf.release()
		if err := <-bf.first; err != nil {
			t.Fatal(err)
		}
		errs := make([]error, n)
		for i, a := range answers {
			errs[i] = <-a
		}
		return errs
	}
	// A batch with no limit stored anywhere: all written, and the
	// writer learns that no limit is stored.
	for _, err := range batch(3) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !resources.NoStoredLimits(bf.store.Allocations) {
		t.Fatal("after a batch with no limit stored, the writer does not know it")
	}
	// The other replica stores a limit: room for 2 more VCPU.
	if err := other.Quotas.LimitsSet(bf.Ctx, "p", quotas.Limits{"VCPU": 5}); err != nil {
		t.Fatal(err)
	}
	// The next batch, held behind a claim on held as the first one was.
	bf.release = holdProvider(t, bf.fixture, bf.dbURL, held)
	groups, _ := claimBatches(bf.store)
	go func() {
		bf.first <- bf.store.Allocations.AllocationsReplace(bf.Ctx, []resources.ConsumerAllocations{
			ledgertest.NewClaim(uuid.NewString(), held, ledgertest.Res("VCPU", 1))})
	}()
	ledgertest.WaitFor(t, func() bool { b, _ := claimBatches(bf.store); return b == groups+1 && queuedClaims(bf.store) == 0 })
	if !resources.NoStoredLimits(bf.store.Allocations) {
		t.Fatal("the writer learnt of the limit before its next batch: the batch does not test the statement without limits")
	}
	written := 0
	for _, err := range batch(4) {
		switch {
		case err == nil:
			written++
		case fault.HasCode(err, fault.ErrForbidden, fault.CodeOverQuota):
		default:
			t.Errorf("claim: %v", err)
		}
	}
	if written != 2 {
		t.Fatalf("%d claims written under a limit that left room for 2", written)
	}
	if resources.NoStoredLimits(bf.store.Allocations) {
		t.Fatal("after a batch that met a stored limit, the writer still thinks none is stored")
	}
	bf.checkUsages()
}

// TestLimitsBadInput: a negative limit, an unknown resource or a project
// id that cannot name a project is refused, and nothing changes.
func TestLimitsBadInput(t *testing.T) {
	f := newFixture(t)
	if err := f.Store.Quotas.LimitsSet(f.Ctx, "demo", quotas.Limits{"VCPU": 4}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		project string
		limits  quotas.Limits
		want    string
	}{
		{"demo", quotas.Limits{"VCPU": -1}, "Invalid limit -1 of VCPU"},
		{"demo", quotas.Limits{"VCPU": 8, "CUSTOM_NOPE": 1}, "Unknown resource CUSTOM_NOPE"},
		{"demo", quotas.Limits{"servers": 1}, "Unknown resource servers"},
		{"", quotas.Limits{"VCPU": 1}, "Invalid project id"},
		{"a b", quotas.Limits{"VCPU": 1}, "Invalid project id"},
		{strings.Repeat("x", 256), quotas.Limits{"VCPU": 1}, "Invalid project id"},
	} {
		err := f.Store.Quotas.LimitsSet(f.Ctx, tc.project, tc.limits)
		if le := ledgertest.Rejection(t, err, fault.ErrInvalid); !strings.Contains(le.Msg, tc.want) {
			t.Errorf("LimitsSet(%q, %v): %q, want %q", tc.project, tc.limits, le.Msg, tc.want)
		}
	}
	if err := f.Store.Quotas.RegisteredLimitsSet(f.Ctx, quotas.Limits{"NOPE": 1}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("registered limits of an unknown class: %v", err)
	}
	if l, err := f.Store.Quotas.ProjectLimits(f.Ctx, "demo"); err != nil || len(l) != 1 || l["VCPU"] != 4 {
		t.Fatalf("demo's limits after refusals: %v, %v", l, err)
	}
	if err := f.Store.Quotas.LimitsDelete(f.Ctx, "nobody"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("deleting the limits of a project without any: %v", err)
	}
}
