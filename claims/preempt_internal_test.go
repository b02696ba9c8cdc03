package claims

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/telemetry"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// TestVictimChoice: per root, the fewest victims that make the claim fit,
// then the lowest priorities, then the most recently created, and no
// more than needed; a root where even all of them are too little has no
// plan; the roots' plans are ordered the same way.
func TestVictimChoice(t *testing.T) {
	names := engine.NewNames()
	names.AddClass(0, "VCPU")
	root := func(i int, used int64) *engine.ProviderRecord {
		return engine.NewRecord(&engine.ProviderRecord{ID: int64(i), RootID: int64(i), Name: fmt.Sprintf("cn%d", i),
			UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Generation: 1,
			Inventories: []engine.InventoryRecord{{Class: 0, Total: 8, MinUnit: 1, MaxUnit: 8, StepSize: 1, Ratio: 1, Used: used}}})
	}
	snap := engine.New([]*engine.ProviderRecord{root(1, 8), root(2, 8), root(3, 8)}, names)
	cn := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	victim := func(name string, rp int, vcpu, prio int64, minute int) *resources.Preemptible {
		return &resources.Preemptible{ConsumerUUID: name, Priority: prio, CreatedAt: t0.Add(time.Duration(minute) * time.Minute),
			Roots: []string{cn(rp)}, Allocations: []engine.Allocation{{ProviderUUID: cn(rp), Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: vcpu}}}}}
	}
	pe := preempter{&Claimer{}}
	p := &Params{Candidates: engine.CandidatesParams{NestedAware: true,
		Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 4}}}}}}
	names4 := func(set []*resources.Preemptible) []string {
		var out []string
		for _, v := range set {
			out = append(out, v.ConsumerUUID)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name    string
		victims []*resources.Preemptible
		want    []string // nil: no plan
	}{
		{"one big beats two small", []*resources.Preemptible{
			victim("a", 1, 2, 0, 1), victim("b", 1, 2, 0, 2), victim("c", 1, 4, 5, 0)}, []string{"c"}},
		{"lowest priority among as few", []*resources.Preemptible{
			victim("a", 1, 4, 3, 1), victim("b", 1, 4, 1, 0), victim("c", 1, 4, 2, 2)}, []string{"b"}},
		{"newest among equal priorities", []*resources.Preemptible{
			victim("a", 1, 4, 0, 1), victim("b", 1, 4, 0, 9), victim("c", 1, 4, 0, 5)}, []string{"b"}},
		// Four pairs fit, and b with d is more than needed: the newest
		// pair whose oldest is newest.
		{"the newest of the fewest", []*resources.Preemptible{
			victim("a", 1, 1, 0, 1), victim("b", 1, 3, 0, 2), victim("c", 1, 1, 0, 3), victim("d", 1, 3, 0, 4)}, []string{"c", "d"}},
		{"too little", []*resources.Preemptible{victim("a", 1, 1, 0, 1), victim("b", 1, 2, 0, 2)}, nil},
	} {
		budget := preemptSearchBudget
		got, ok := pe.planRoot(context.Background(), p, snap, cn(1), tc.victims, &budget)
		if ok != (tc.want != nil) || fmt.Sprint(names4(got)) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, names4(got), ok, tc.want)
		}
	}

	// Past the search budget, victims in order (lowest priority, newest
	// first) until it fits, then without those not needed.
	budget := 1
	got, ok := pe.planRoot(context.Background(), p, snap, cn(1), []*resources.Preemptible{
		victim("a", 1, 1, 0, 4), victim("b", 1, 1, 0, 3), victim("c", 1, 4, 1, 2), victim("d", 1, 1, 0, 1)}, &budget)
	if !ok || fmt.Sprint(names4(got)) != "[c]" {
		t.Errorf("past the budget: %v %v, want [c]", names4(got), ok)
	}

	// Across roots: cn2 needs two victims, cn3 one of priority 2, cn1
	// one of priority 1: cn1, then cn3, then cn2. The claim's own
	// consumer (a reschedule) is not its victim.
	r := &resolved{snap: snap}
	found := []resources.Preemptible{*victim("x", 2, 2, 0, 1), *victim("y", 2, 2, 0, 2), *victim("z", 3, 4, 2, 3), *victim("w", 1, 4, 1, 4)}
	plans, step := pe.plans(context.Background(), p, r, 3, found)
	var order []string
	for _, pl := range plans {
		order = append(order, pl.root)
	}
	if fmt.Sprint(order) != fmt.Sprint([]string{cn(1), cn(3), cn(2)}) || step.Remaining != 3 || step.Removed != 0 {
		t.Errorf("plans on %v, step %+v", order, step)
	}
	// Excluded and target roots are not planned on.
	r = &resolved{snap: snap, exclude: []string{cn(1)}, target: cn(2)}
	plans, step = pe.plans(context.Background(), p, r, 3, found)
	if len(plans) != 1 || plans[0].root != cn(2) || step.Reasons[ReasonPreemptExcluded] != 2 {
		t.Errorf("with exclude and target: %v, step %+v", plans, step)
	}
}

func TestCombinations(t *testing.T) {
	var got []string
	combinations(4, 2, func(idx []int) bool {
		got = append(got, fmt.Sprint(idx))
		return true
	})
	if want := "[[0 1] [0 2] [0 3] [1 2] [1 3] [2 3]]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestObservePreemptions: the preemption counters reach /metrics at 0
// from the start, and move with the claimer's counts.
func TestObservePreemptions(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{Prometheus: true, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	c, err := New(Deps{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	un, err := ObservePreemptions(c)
	if err != nil {
		t.Fatal(err)
	}
	defer un()
	scrape := func() string {
		rec := httptest.NewRecorder()
		tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	body := scrape()
	for _, want := range []string{"berth_claim_preemptions_total 0", "berth_claim_preemption_victims_total 0",
		"berth_claim_preemption_searches_total 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	c.preempted.claims.Add(1)
	c.preempted.victims.Add(3)
	body = scrape()
	if !strings.Contains(body, "berth_claim_preemptions_total 1") || !strings.Contains(body, "berth_claim_preemption_victims_total 3") {
		t.Errorf("the counters did not move:\n%s", body)
	}
}
