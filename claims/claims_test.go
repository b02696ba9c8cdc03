package claims_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

type fixture struct {
	t     testing.TB
	ctx   context.Context
	url   string
	store *ledger.Store
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	url := ledgertest.NewDB(t)
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: url, MaxConns: 8, SnapshotRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return &fixture{t: t, ctx: ctx, url: url, store: store}
}

// provider creates a root provider with VCPU inventory and returns its uuid.
func (f *fixture) provider(name string, vcpu int64) string {
	f.t.Helper()
	p, err := f.store.Providers.ProviderCreate(f.ctx, resources.ProviderCreateParams{Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	gen := int64(0)
	if _, err := f.store.Providers.InventoriesReplace(f.ctx, resources.InventoryParams{ProviderUUID: p.UUID, Generation: &gen},
		[]engine.Inventory{resources.DefaultInventory("VCPU", vcpu)}); err != nil {
		f.t.Fatal(err)
	}
	return p.UUID
}

// sql runs a statement behind the store's back: the store's snapshot does
// not hear of it, as with a write from a process that missed a
// notification.
func (f *fixture) sql(stmt string, args ...any) {
	f.t.Helper()
	ledgertest.Exec(f.t, f.url, stmt, args...)
}

func (f *fixture) claimer(policy string, script string) *claims.Claimer {
	f.t.Helper()
	return f.claimerWith(policy, script, nil)
}

// claimerWith is claimer with cloud as the claimer's view of the cloud.
func (f *fixture) claimerWith(policy, script string, cloud claims.Cloud) *claims.Claimer {
	f.t.Helper()
	cfg, err := scheduler.ParsePolicyConfig([]byte(policy))
	if err != nil {
		f.t.Fatal(err)
	}
	var scripts scheduler.Scriptlets
	if script != "" {
		prog, err := scriptlet.Compile("test.star", []byte(script))
		if err != nil {
			f.t.Fatal(err)
		}
		scripts = scriptlet.NewRuntime(scriptlet.Static{Default: prog}, scriptlet.Limits{})
	}
	p, err := scheduler.NewPolicy(cfg, nil, scripts)
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := claims.New(claims.Deps{Store: f.store, Policy: p, Cloud: cloud}, claims.Config{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) used(rp string) int64 {
	f.t.Helper()
	u, err := f.store.Providers.ProviderUsagesGet(f.ctx, rp)
	if err != nil {
		f.t.Fatal(err)
	}
	return u.Usages["VCPU"]
}

func vcpus(n int64) engine.CandidatesParams {
	return engine.CandidatesParams{NestedAware: true,
		Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: n}}}}}
}

func params(n int64) claims.Params {
	return claims.Params{ConsumerUUID: uuid.NewString(), ProjectID: "p", UserID: "u", ConsumerType: "INSTANCE",
		Candidates: vcpus(n)}
}

func notPlaced(t *testing.T, err error, want claims.Reason) *claims.NotPlacedError {
	t.Helper()
	var np *claims.NotPlacedError
	if !errors.As(err, &np) || np.Reason != want {
		t.Fatalf("got %v, want a NotPlacedError %s", err, want)
	}
	return np
}

func TestClaimPicksByPolicy(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	f.claimer(`{}`, "")
	if _, err := f.claimer(`{}`, "").ClaimUnrecorded(f.ctx, params(4)); err != nil {
		t.Fatal(err)
	}
	if f.used(a) != 4 || f.used(b) != 0 {
		t.Fatalf("first claim: a %d b %d", f.used(a), f.used(b))
	}
	// spread prefers the emptier b; pack the fuller a.
	r, err := f.claimer(`{"weighers": [{"name": "spread"}]}`, "").ClaimUnrecorded(f.ctx, params(1))
	if err != nil || r.Root != b || r.Attempts != 1 {
		t.Fatalf("spread: %+v %v", r, err)
	}
	p := params(1)
	r, err = f.claimer(`{"weighers": [{"name": "pack"}]}`, "").ClaimUnrecorded(f.ctx, p)
	if err != nil || r.Root != a {
		t.Fatalf("pack: %+v %v", r, err)
	}
	got, err := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID)
	if err != nil || got.Consumer == nil || got.Consumer.Type != "INSTANCE" || len(got.Allocations) != 1 ||
		got.Allocations[0].ProviderUUID != a || got.Allocations[0].Used != 1 {
		t.Fatalf("written: %+v %v", got, err)
	}
}

func TestClaimNotPlaced(t *testing.T) {
	f := newFixture(t)
	a := f.provider("a", 8)
	f.provider("b", 8)
	c := f.claimer(`{"filters": [{"name": "max_usage_ratio", "params": {"max": 0.5}}]}`, "")

	_, err := c.ClaimUnrecorded(f.ctx, params(9))
	notPlaced(t, err, claims.NoCandidates)

	_, err = c.ClaimUnrecorded(f.ctx, params(5))
	np := notPlaced(t, err, claims.AllFiltered)
	if np.Roots != 2 || np.Error() != "2 providers; 2 removed by max_usage_ratio (VCPU above 0.5 of capacity: 2)" {
		t.Fatalf("explanation: %v %+v", np, np.Steps)
	}
	_, err = c.ClaimUnrecorded(f.ctx, params(9))
	if np := notPlaced(t, err, claims.NoCandidates); np.Error() != "2 providers; 2 lacked VCPU 9" {
		t.Fatalf("explanation: %v", np)
	}

	p := params(1)
	p.Exclude = []string{"a"}
	r, err := c.ClaimUnrecorded(f.ctx, p)
	if err != nil || r.Root == a {
		t.Fatalf("avoid: %+v %v", r, err)
	}

	refusing := f.claimer(`{}`, "def instance_placement(request, candidate_members):\n    log_warn(\"frozen\")\n    fail(\"frozen for upgrade\")\n")
	p = params(1)
	_, err = refusing.ClaimUnrecorded(f.ctx, p)
	if np := notPlaced(t, err, claims.Refused); np.Refusal != "frozen for upgrade" || len(np.ScriptletLog) == 0 ||
		np.Error() != "2 providers; then Failed instance placement scriptlet: frozen for upgrade" {
		t.Fatalf("refusal %q %v: %s", np.Refusal, np.ScriptletLog, np.Error())
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID); got.Consumer != nil {
		t.Fatal("refused claim wrote a consumer")
	}

	returning := f.claimer(`{}`, "def instance_placement(request, candidate_members):\n    if request.name == \"foo\":\n        return \"Invalid name\"\n")
	p = params(1)
	p.Name = "foo"
	_, err = returning.ClaimUnrecorded(f.ctx, p)
	if np := notPlaced(t, err, claims.Refused); np.Refusal != "Invalid name" {
		t.Fatalf("refusal %q", np.Refusal)
	}
	p = params(1)
	p.Name = "bar"
	if _, err := returning.ClaimUnrecorded(f.ctx, p); err != nil {
		t.Fatalf("scriptlet refused another name: %v", err)
	}

	// A scriptlet that fails refuses, as LXD's does (scheduler.OnErrorRefuse,
	// the default), and writes nothing.
	const broken = "def instance_placement(request, candidate_members):\n    return 1 // 0\n"
	p = params(1)
	_, err = f.claimer(`{}`, broken).ClaimUnrecorded(f.ctx, p)
	if np := notPlaced(t, err, claims.Refused); !strings.Contains(np.Refusal, "division by zero") {
		t.Fatalf("refusal %q", np.Refusal)
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID); got.Consumer != nil {
		t.Fatal("failed scriptlet wrote a consumer")
	}
	// Under on_error "ignore" the claim is placed as if there were none.
	prog, err := scriptlet.Compile("test.star", []byte(broken))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := scheduler.NewPolicy(scheduler.PolicyConfig{}, nil, scriptlet.NewRuntime(scriptlet.Static{Default: prog},
		scriptlet.Limits{OnError: scriptlet.OnErrorIgnore}))
	if err != nil {
		t.Fatal(err)
	}
	ignoring, err := claims.New(claims.Deps{Store: f.store, Policy: pol}, claims.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = ignoring.ClaimUnrecorded(f.ctx, params(1)); err != nil {
		t.Fatalf("script error ignored: got %v", err)
	}
}

// TestClaimRetriesOnStaleSnapshot makes the preferred provider full behind
// the snapshot's back: the write finds the capacity gone and the claim
// moves on to the next candidate.
// TestRefusalSaysWhatRanBefore: a scriptlet handed nothing, because
// state_freshness had removed every host, refuses; the answer words the
// steps before the refusal, so that the refusal does not hide the cause
// (issue 27), and counts the candidate step's shortfall as a 409 does.
func TestRefusalSaysWhatRanBefore(t *testing.T) {
	f := newFixture(t)
	f.provider("a", 8)
	f.provider("b", 8)
	f.provider("small", 2)
	batch := `def instance_placement(request, candidate_members):
    for m in candidate_members:
        vcpu = m.inventories["VCPU"]
        if (vcpu.used + request.resources.get("VCPU", 0)) * 2 <= vcpu.capacity:
            set_target(m.name)
            return None
    return "no half-empty host for batch"
`
	c := f.claimer(`{"filters": [{"name": "state_freshness", "params": {"max_age": "2m"}}]}`, batch)
	p := params(4)
	_, err := c.ClaimUnrecorded(f.ctx, p)
	np := notPlaced(t, err, claims.Refused)
	want := "3 providers; 1 lacked VCPU 4; 2 removed by state_freshness (no state reported: 2); " +
		"then Failed instance placement scriptlet: no half-empty host for batch"
	if np.Refusal != "no half-empty host for batch" || np.Error() != want {
		t.Fatalf("refusal %q:\n got %s\nwant %s", np.Refusal, np.Error(), want)
	}
	if len(np.Steps) != 3 || np.Steps[2].Unit != "state_freshness" || np.Steps[2].Remaining != 0 {
		t.Fatalf("steps %+v", np.Steps)
	}
}

func TestClaimRetriesOnStaleSnapshot(t *testing.T) {
	f := newFixture(t)
	a, b, c := f.provider("a", 8), f.provider("b", 8), f.provider("c", 8)
	claimer := f.claimer(`{}`, "") // ledger order: a, b, c
	// Load the snapshot, give the store's change listener time to connect
	// (connecting marks everything dirty), and load it again.
	for range 2 {
		if _, err := claimer.Explain(f.ctx, params(1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	f.sql(`UPDATE inventories SET reserved = total WHERE resource_provider_id IN
		(SELECT id FROM resource_providers WHERE uuid = ANY($1))`, []string{a, b})
	r, err := claimer.ClaimUnrecorded(f.ctx, params(2))
	if err != nil {
		t.Fatal(err)
	}
	if r.Root != c || r.Attempts != 3 {
		t.Fatalf("result %+v", r)
	}
	if f.used(a) != 0 || f.used(b) != 0 || f.used(c) != 2 {
		t.Fatalf("usage a %d b %d c %d", f.used(a), f.used(b), f.used(c))
	}

	// With one attempt allowed, the claim gives up and says why. (The
	// failed writes did not refresh the snapshot: a and c still look
	// free, c now has 2 used.)
	f.sql(`UPDATE inventories SET reserved = total`)
	p := params(1)
	p.MaxAttempts = 1
	_, err = claimer.ClaimUnrecorded(f.ctx, p)
	np := notPlaced(t, err, claims.ConflictsExhausted)
	if np.Attempts != 1 || !strings.HasSuffix(np.Error(), "; 1 attempts lost to concurrent claims") {
		t.Fatalf("exhausted: %v", np)
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID); got.Consumer != nil {
		t.Fatal("failed claim wrote a consumer")
	}
}

func TestClaimConsumerGenerationAndReschedule(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimer(`{}`, "")
	p := params(2)
	if r, err := c.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != a {
		t.Fatalf("claim: %+v %v", r, err)
	}
	// Same consumer again as if new: a generation conflict, not retried.
	_, err := c.ClaimUnrecorded(f.ctx, p)
	var le *fault.Error
	if !errors.As(err, &le) || le.Code != fault.CodeConcurrentUpdate {
		t.Fatalf("reclaim: %v", err)
	}
	r, err := c.RescheduleUnrecorded(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID, Candidates: vcpus(2)}, "")
	if err != nil || r.Root != b {
		t.Fatalf("reschedule: %+v %v", r, err)
	}
	if f.used(a) != 0 || f.used(b) != 2 {
		t.Fatalf("after reschedule a %d b %d", f.used(a), f.used(b))
	}
	got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID)
	if got.Consumer == nil || got.Consumer.ProjectID != "p" || got.Consumer.Type != "INSTANCE" || got.Consumer.Generation != 2 {
		t.Fatalf("consumer after reschedule: %+v", got.Consumer)
	}
	// Nowhere else to go: b avoided, a too small. The consumer stays.
	f.sql(`UPDATE inventories SET total = 1 WHERE resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = $1)`, a)
	_, err = c.RescheduleUnrecorded(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID, Candidates: vcpus(2)}, "")
	var np *claims.NotPlacedError
	if !errors.As(err, &np) {
		t.Fatalf("reschedule nowhere: %v", err)
	}
	if f.used(b) != 2 {
		t.Fatal("failed reschedule moved the consumer")
	}
	if _, err := c.RescheduleUnrecorded(f.ctx, params(1), ""); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("reschedule unknown consumer: %v", err)
	}
}

// TestConcurrentClaimsNeverOvercommit races 32 claims for 2 VCPU each
// against 4 providers of 8 (room for 16), all ranking with pack so they
// chase the same provider. Nothing is overcommitted, every successful
// claim's allocations are exactly what it reported, failed claims left no
// consumer, and conflicts moved claims to other providers.
func TestConcurrentClaimsNeverOvercommit(t *testing.T) {
	f := newFixture(t)
	var provs []string
	for i := range 4 {
		provs = append(provs, f.provider(fmt.Sprintf("cn%d", i), 8))
	}
	c := f.claimer(`{"weighers": [{"name": "pack"}]}`, "")
	const n = 32
	results := make([]*claims.Result, n)
	errs := make([]error, n)
	ps := make([]claims.Params, n)
	var wg sync.WaitGroup
	for i := range n {
		ps[i] = params(2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = c.ClaimUnrecorded(f.ctx, ps[i])
		}()
	}
	wg.Wait()

	placed, retried := 0, 0
	for i := range n {
		got, err := f.store.Allocations.AllocationsByConsumer(f.ctx, ps[i].ConsumerUUID)
		if err != nil {
			t.Fatal(err)
		}
		if errs[i] != nil {
			var np *claims.NotPlacedError
			if !errors.As(errs[i], &np) {
				t.Errorf("claim %d: unexpected error %v", i, errs[i])
			}
			if got.Consumer != nil {
				t.Errorf("claim %d failed but left allocations %+v", i, got.Allocations)
			}
			continue
		}
		placed++
		r := results[i]
		if len(got.Allocations) != 1 || got.Allocations[0].ProviderUUID != r.Root || got.Allocations[0].Used != 2 {
			t.Errorf("claim %d: reported %s, ledger has %+v", i, r.Root, got.Allocations)
		}
		if r.Attempts > 1 {
			retried++
		}
	}
	var total int64
	for _, p := range provs {
		u := f.used(p)
		if u > 8 {
			t.Errorf("provider %s overcommitted: %d of 8", p, u)
		}
		total += u
	}
	if total != int64(2*placed) {
		t.Errorf("usage %d, but %d claims placed", total, placed)
	}
	if placed < 12 {
		t.Errorf("only %d of 16 possible claims placed", placed)
	}
	// 32 claims ranking at once from the same snapshot all go for the
	// same provider first, so some must have been moved on.
	if retried == 0 {
		t.Error("no claim was retried on another candidate")
	}
	t.Logf("%d placed, %d after retries", placed, retried)
}

func TestClaimMove(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimer(`{}`, "")
	p := params(3)
	if r, err := c.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != a {
		t.Fatalf("claim: %+v %v", r, err)
	}
	migration := uuid.NewString()
	r, err := c.MoveUnrecorded(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID, Candidates: vcpus(3)}, migration)
	if err != nil || r.Root != b || r.Migration == nil || r.Migration.ConsumerUUID != migration {
		t.Fatalf("move: %+v %v", r, err)
	}
	// Source held by the migration, destination by the instance.
	if f.used(a) != 3 || f.used(b) != 3 {
		t.Fatalf("after move a %d b %d", f.used(a), f.used(b))
	}
	mig, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, migration)
	if mig.Consumer == nil || mig.Consumer.Type != resources.MigrationConsumerType || mig.Consumer.ProjectID != "p" ||
		len(mig.Allocations) != 1 || mig.Allocations[0].ProviderUUID != a || mig.Allocations[0].Used != 3 {
		t.Fatalf("migration consumer: %+v", mig)
	}
	inst, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID)
	if len(inst.Allocations) != 1 || inst.Allocations[0].ProviderUUID != b {
		t.Fatalf("instance: %+v", inst)
	}
	// A second move with the same migration uuid: the migration consumer
	// exists, so the write is a generation conflict and nothing changes.
	if _, err := c.MoveUnrecorded(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID, Candidates: vcpus(3)}, migration); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("second move: %v", err)
	}
	if f.used(a) != 3 || f.used(b) != 3 {
		t.Fatalf("after refused move a %d b %d", f.used(a), f.used(b))
	}
}
