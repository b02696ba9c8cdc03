package shadow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// claim is a claim's Job over two candidates on roots cn1 and cn2 (one
// provider map, as claims build it), cn1 ranked first by spread.
func claim(name string) *Job {
	provs := map[string]*scheduler.ProviderView{}
	var cands []*scheduler.Candidate
	for i, r := range []string{"cn1", "cn2"} {
		provs[r] = &scheduler.ProviderView{Provider: engine.Provider{UUID: r, Name: r, RootUUID: r}, Resources: scheduler.ResourcesOf(
			map[string]engine.InventoryUsage{"VCPU": {Capacity: 8, Used: int64(i), Inventory: engine.Inventory{Total: 8}}})}
		cands = append(cands, &scheduler.Candidate{Index: i, Roots: []string{r}, Providers: provs,
			Allocations: []engine.Allocation{{ProviderUUID: r, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}})
	}
	return &Job{Request: &scheduler.Request{ConsumerUUID: "c-" + name, Name: name, ProjectID: "p", Resources: map[string]int64{"VCPU": 1}},
		Candidates: cands, Root: "cn1"}
}

// policy builds the default policy with src as its scriptlet, refusing on
// failures as the catalogue builds shadows.
func policy(t *testing.T, src string, limits scriptlet.Limits) *scheduler.Policy {
	t.Helper()
	cfg := scheduler.DefaultPolicyConfig()
	var scripts scheduler.Scriptlets
	limits.OnError = scriptlet.OnErrorRefuse
	if src != "" {
		prog, err := scriptlet.Compile("s", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		scripts = scriptlet.NewRuntime(scriptlet.Static{Named: map[string]*scriptlet.Program{"s": prog}}, limits)
		cfg.Scriptlet = "s"
	}
	p, err := scheduler.NewPolicy(cfg, nil, scripts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestJudge: each outcome of a shadow's run on one claim.
func TestJudge(t *testing.T) {
	const head = "def instance_placement(request, candidate_members):\n"
	tight := scriptlet.Limits{MaxSteps: 10000, MaxAlloc: 1 << 20, Timeout: 50 * time.Millisecond}
	for _, tc := range []struct {
		name, src string
		limits    scriptlet.Limits
		want      outcome
		refusal   string
		root      string
	}{
		{"same", "", tight, agreed, "", "cn1"},
		{"other root", head + "    set_target(\"cn2\")\n", tight, disagreed, "", "cn2"},
		{"refusal", head + "    return \"not today\"\n", tight, wouldRefuse, "not today", ""},
		{"fail()", head + "    fail(\"no room\")\n", tight, wouldRefuse, "no room", ""},
		{"steps", head + "    for i in range(1000000):\n        pass\n", tight, failedSteps, "", ""},
		{"memory", head + "    x = \"a\" * (8 << 20)\n", tight, failedMemory, "", ""},
		{"deadline", head + "    for i in range(100000000):\n        pass\n", scriptlet.Limits{MaxSteps: 1 << 40, Timeout: 20 * time.Millisecond}, failedDeadline, "", ""},
		{"runtime error", head + "    return 1 // 0\n", tight, failedError, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := claim("vm")
			v := judge(Options{Deadline: 10 * time.Second}, Shadow{ID: 1, Policy: policy(t, tc.src, tc.limits)}, j)
			if v.outcome != tc.want || !strings.Contains(v.refusal, tc.refusal) || v.root != tc.root || v.took <= 0 {
				t.Errorf("verdict %+v, want outcome %d refusal %q root %q", v, tc.want, tc.refusal, tc.root)
			}
		})
	}

	// Nothing passes the shadow's filters: it would refuse.
	j := claim("big")
	j.Request.Resources["VCPU"] = 100
	j.Candidates[0].Allocations[0].Resources[0].Amount = 100
	j.Candidates[1].Allocations[0].Resources[0].Amount = 100
	if v := judge(Options{Deadline: time.Second}, Shadow{Policy: policy(t, "", tight)}, j); v.outcome != wouldRefuse || v.refusal != NothingPassed {
		t.Errorf("nothing fits: %+v", v)
	}
}

// fakeCloud fills State on every provider and counts its calls.
type fakeCloud struct{ calls int }

func (f *fakeCloud) Enrich(_ context.Context, needs scheduler.Needs, provs map[string]*scheduler.ProviderView) error {
	f.calls++
	for _, p := range provs {
		if needs.State {
			p.State = &engine.ProviderState{Load1: 1}
		}
	}
	return nil
}

// TestEnrichedCopies: a shadow that needs more provider fields than the
// claim's policy enriches copies; the claim's candidates stay as they
// were.
func TestEnrichedCopies(t *testing.T) {
	j := claim("vm")
	cloud := &fakeCloud{}
	got, err := enriched(context.Background(), cloud, scheduler.Needs{State: true}, j)
	if err != nil {
		t.Fatal(err)
	}
	if cloud.calls != 1 || got[0] == j.Candidates[0] || got[0].Providers["cn1"].State == nil || got[0].Providers["cn2"] != got[1].Providers["cn2"] {
		t.Errorf("copies %+v", got)
	}
	if j.Candidates[0].Providers["cn1"].State != nil {
		t.Error("the claim's provider was written")
	}
	j.Enriched = scheduler.Needs{State: true}
	if got, _ := enriched(context.Background(), cloud, scheduler.Needs{State: true}, j); got[0] != j.Candidates[0] || cloud.calls != 1 {
		t.Error("enriched again what the claim had")
	}
}

// TestRunnerQueue: only claims of the default policy are taken; a full
// queue drops and counts; verdicts are tallied with bounded refusals and
// disagreements.
func TestRunnerQueue(t *testing.T) {
	def := policy(t, "", scriptlet.Limits{})
	r := New(Options{Queue: 2})
	defer r.Close()
	if r.Active() {
		t.Fatal("active before Set")
	}
	r.Set([]Shadow{{ID: 7, Policy: def}})
	// Not the default policy: ignored, starts no worker.
	j := claim("vm")
	j.Default = false
	r.Submit(*j)
	if len(r.queue) != 0 || r.pending.Load() != 0 {
		t.Fatal("a claim of another policy was queued")
	}
	// The default policy's claim is taken, though the catalogue loaded
	// again (rebuilding the default policy) after the claim resolved it.
	j.Default = true
	r.start.Do(func() {}) // keep the workers off while the queue fills
	r.Set([]Shadow{{ID: 7, Policy: policy(t, "", scriptlet.Limits{})}})
	r.Submit(*j)
	if len(r.queue) != 1 || r.pending.Load() != 1 {
		t.Fatal("a claim of the default policy was not queued after a reload")
	}
	// A full queue drops and counts.
	r.queue <- queued{job: *j, set: r.cur.Load()}
	r.pending.Add(1)
	r.Submit(*j)
	if d := r.tallies[7]; d == nil || d.Counts.Dropped != 1 {
		t.Fatalf("dropped %+v", d)
	}

	for i := range scheduling.ShadowMaxRefusals + 5 {
		r.record(7, j, verdict{outcome: wouldRefuse, refusal: "no " + string(rune('A'+i))})
	}
	for range scheduling.ShadowMaxDisagreements + 3 {
		r.record(7, j, verdict{outcome: disagreed, root: "cn2", rootName: "cn2"})
	}
	d := r.tallies[7]
	if len(d.Refusals) != scheduling.ShadowMaxRefusals+1 || d.Refusals[scheduling.ShadowOtherRefusals] != 5 ||
		len(d.Disagreements) != scheduling.ShadowMaxDisagreements || d.Counts.ClaimsSeen != int64(scheduling.ShadowMaxRefusals+5+scheduling.ShadowMaxDisagreements+3) {
		t.Errorf("tally %d refusals, %d disagreements, %+v", len(d.Refusals), len(d.Disagreements), d.Counts)
	}
	if x := d.Disagreements[0]; x.Name != "vm" || x.ClaimRoot != "cn1" || x.ClaimRootName != "cn1" || x.ShadowRoot != "cn2" || x.ProjectID != "p" {
		t.Errorf("disagreement %+v", x)
	}
}

// BenchmarkSubmit is what a shadow adds to a claim's path: building the
// Job and sending it on the queue (the worker is kept off, so the queue
// fills and the rest are counted as dropped, the costlier path).
func BenchmarkSubmit(b *testing.B) {
	def := policy(&testing.T{}, "", scriptlet.Limits{})
	r := New(Options{Queue: DefaultQueue})
	r.Set([]Shadow{{ID: 1, Policy: def}})
	r.start.Do(func() {})
	j := claim("vm")
	j.Default = true
	b.ReportAllocs()
	for b.Loop() {
		r.Submit(*j)
	}
}

// TestBudget: a worker judges while its allowance lasts, then drops
// until wall time has refilled it at the budget's rate.
func TestBudget(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := newBudget(0.2, t0)
	if !b.allow(t0) {
		t.Fatal("a fresh budget refused")
	}
	if wait := b.spend(150 * time.Millisecond); wait < 250*time.Millisecond || wait > 251*time.Millisecond { // 50 ms over at 0.2
		t.Errorf("wait %v after spending 50 ms over", wait)
	}
	if b.allow(t0.Add(100 * time.Millisecond)) {
		t.Error("allowed with 30 ms still owed")
	}
	if !b.allow(t0.Add(400 * time.Millisecond)) {
		t.Error("refused after the debt was refilled")
	}
	// Idle for long: at most a burst is saved up.
	b.allow(t0.Add(time.Hour))
	if b.tokens != budgetBurst {
		t.Errorf("after an hour idle: %v", b.tokens)
	}
	if !newBudget(1, t0).allow(t0) {
		t.Error("no bound refused")
	}
}
