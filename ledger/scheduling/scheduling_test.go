package scheduling_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/scheduling"
)

func TestSchedulingPolicyCRUD(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx

	_, err := s.Catalogue.SchedulingPolicyGet(ctx, "gold")
	ledgertest.Rejection(t, err, fault.ErrNotFound)

	spec := json.RawMessage(`{"filters": [], "weighers": [{"name": "spread", "factor": 2}]}`)
	p, created, err := s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "gold", Description: "d", Default: true, Spec: spec},
		scheduling.SchedulingPolicyPutParams{Create: true})
	if err != nil || !created || p.Generation != 1 || !p.Default {
		t.Fatalf("create: %+v %v %v", p, created, err)
	}
	_, _, err = s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "gold", Spec: spec}, scheduling.SchedulingPolicyPutParams{Create: true})
	if le := ledgertest.Rejection(t, err, fault.ErrConflict); le.Code != fault.CodeDuplicateName {
		t.Errorf("code %q", le.Code)
	}

	// A second default takes the mark from the first, in one transaction.
	p2, created, err := s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "silver", Default: true, Spec: spec}, scheduling.SchedulingPolicyPutParams{})
	if err != nil || !created || !p2.Default {
		t.Fatalf("silver: %+v %v", p2, err)
	}
	all, err := s.Catalogue.SchedulingPolicies(ctx)
	if err != nil || len(all) != 2 || all[0].Name != "gold" || all[0].Default || !all[1].Default {
		t.Fatalf("list: %+v %v", all, err)
	}

	// Replace: generation moves on.
	p, created, err = s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "gold", Description: "new", Spec: spec}, scheduling.SchedulingPolicyPutParams{})
	if err != nil || created || p.Generation != 2 || p.Description != "new" {
		t.Fatalf("replace: %+v %v %v", p, created, err)
	}

	// A spec naming a scriptlet that does not exist is refused.
	_, _, err = s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "x", Spec: json.RawMessage(`{"scriptlet": "nope"}`), Scriptlets: []string{"nope"}}, scheduling.SchedulingPolicyPutParams{})
	ledgertest.Rejection(t, err, fault.ErrInvalid)
	if _, err := s.Catalogue.SchedulingPolicyGet(ctx, "x"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("refused policy stored: %v", err)
	}

	if err := s.Catalogue.SchedulingPolicyDelete(ctx, "silver"); err != nil {
		t.Fatal(err)
	}
	ledgertest.Rejection(t, s.Catalogue.SchedulingPolicyDelete(ctx, "silver"), fault.ErrNotFound)
}

// TestSchedulingPolicyOneDefaultUnderConcurrency makes policies the
// default at once: one is, the others' writes succeed or are conflicts
// (the one-default index). In every query mode of pgx: with
// simple_protocol PostgreSQL reports the index's violation before any
// row, so the INSERT ... RETURNING's Query itself returns it.
func TestSchedulingPolicyOneDefaultUnderConcurrency(t *testing.T) {
	for _, mode := range ledgertest.ExecModes() {
		t.Run(mode, func(t *testing.T) {
			f := newFixtureOn(t, ledgertest.NewDBInMode(t, mode))
			s, ctx := f.Store, f.Ctx
			spec := json.RawMessage(`{}`)
			names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
			errs := make(chan error, len(names))
			for _, n := range names {
				go func() {
					_, _, err := s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: n, Default: true, Spec: spec}, scheduling.SchedulingPolicyPutParams{})
					errs <- err
				}()
			}
			for range names {
				if err := <-errs; err != nil && !errors.Is(err, fault.ErrConflict) {
					t.Fatalf("put: %v", err)
				}
			}
			all, err := s.Catalogue.SchedulingPolicies(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defaults := 0
			for _, p := range all {
				if p.Default {
					defaults++
				}
			}
			if defaults != 1 {
				t.Fatalf("%d defaults among %d policies", defaults, len(all))
			}
		})
	}
}

func TestScriptletCRUD(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx

	created, err := s.Catalogue.ScriptletPut(ctx, "s1", "def instance_placement(request, candidate_members):\n    return None\n")
	if err != nil || !created {
		t.Fatalf("put: %v %v", created, err)
	}
	if created, err = s.Catalogue.ScriptletPut(ctx, "s1", "x = 1\n"); err != nil || created {
		t.Fatalf("replace: %v %v", created, err)
	}
	sc, err := s.Catalogue.ScriptletGet(ctx, "s1")
	if err != nil || sc.Source != "x = 1\n" {
		t.Fatalf("get: %+v %v", sc, err)
	}
	_, err = s.Catalogue.ScriptletGet(ctx, "nope")
	ledgertest.Rejection(t, err, fault.ErrNotFound)

	// In use by a policy: not deleted.
	if _, _, err := s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "p", Spec: json.RawMessage(`{"weighers": [{"name": "starlark:s1"}]}`), Scriptlets: []string{"s1"}}, scheduling.SchedulingPolicyPutParams{}); err != nil {
		t.Fatal(err)
	}
	ledgertest.Rejection(t, s.Catalogue.ScriptletDelete(ctx, "s1"), fault.ErrConflict)
	if err := s.Catalogue.SchedulingPolicyDelete(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if err := s.Catalogue.ScriptletDelete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	ledgertest.Rejection(t, s.Catalogue.ScriptletDelete(ctx, "s1"), fault.ErrNotFound)
	list, err := s.Catalogue.Scriptlets(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("list: %v %v", list, err)
	}
}

func TestConfigPatch(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx
	if err := s.Catalogue.ConfigPatch(ctx, map[string]json.RawMessage{"a": json.RawMessage(`"x"`), "b": json.RawMessage(`5`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Catalogue.ConfigPatch(ctx, map[string]json.RawMessage{"a": nil, "b": json.RawMessage(`6`)}); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Catalogue.Config(ctx)
	if err != nil || len(cfg) != 1 || string(cfg["b"]) != "6" {
		t.Fatalf("config %v %v", cfg, err)
	}
}

func TestListenSchedulingSeesCommittedChanges(t *testing.T) {
	f := newFixture(t)
	s := f.Store
	ctx, cancel := context.WithCancel(f.Ctx)
	var calls atomic.Int64
	done := make(chan struct{})
	go func() { defer close(done); s.Catalogue.ListenScheduling(ctx, func() { calls.Add(1) }) }()
	defer func() { cancel(); <-done }()
	ledgertest.WaitFor(t, func() bool { return calls.Load() >= 1 }) // connected

	// A refused write notifies nobody; a committed one does.
	before := calls.Load()
	ledgertest.Rejection(t, s.Catalogue.ScriptletDelete(f.Ctx, "nope"), fault.ErrNotFound)
	if _, err := s.Catalogue.ScriptletPut(f.Ctx, "s", "x = 1\n"); err != nil {
		t.Fatal(err)
	}
	ledgertest.WaitFor(t, func() bool { return calls.Load() > before })
}

func TestProviderStateAndKeys(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx
	rp := f.Provider("cn1", ledgertest.Inv("VCPU", 8))

	_, err := s.Cloud.ProviderStateGet(ctx, rp)
	ledgertest.Rejection(t, err, fault.ErrNotFound)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := engine.ProviderState{Load1: 1.5, Load5: 1, Load15: 0.5, MemoryFreeMB: 1024, CPUUtilization: 0.25, ReportedAt: at}
	if err := s.Cloud.ProviderStatePut(ctx, rp, st); err != nil {
		t.Fatal(err)
	}
	got, err := s.Cloud.ProviderStateGet(ctx, rp)
	if err != nil || got.Load1 != 1.5 || got.MemoryFreeMB != 1024 || !got.ReportedAt.Equal(at) {
		t.Fatalf("state %+v %v", got, err)
	}
	ledgertest.Rejection(t, s.Cloud.ProviderStatePut(ctx, uuidD, st), fault.ErrNotFound)
	states, err := s.Cloud.ProviderStates(ctx, []string{rp, uuidD, "junk"})
	if err != nil || len(states) != 1 || states[rp].CPUUtilization != 0.25 {
		t.Fatalf("states %v %v", states, err)
	}

	keys := []scheduling.PlacementKey{{Name: "rack", Value: 0.3, Sticky: true}, {Name: "_tier", Value: 1}}
	err = s.Cloud.PlacementKeysReplace(ctx, rp, keys, scheduling.PlacementKeysReplaceParams{})
	var rk *scheduling.ReservedKeyError
	if !errors.As(err, &rk) || rk.Name != "_tier" {
		t.Fatalf("reserved: %v", err)
	}
	if err := s.Cloud.PlacementKeysReplace(ctx, rp, keys, scheduling.PlacementKeysReplaceParams{Reserved: true}); err != nil {
		t.Fatal(err)
	}
	// Without leave, the reserved key must be kept as it is.
	if err := s.Cloud.PlacementKeysReplace(ctx, rp, keys[:1], scheduling.PlacementKeysReplaceParams{}); !errors.As(err, &rk) {
		t.Fatalf("removing a reserved key: %v", err)
	}
	keys[0].Value = 0.4
	if err := s.Cloud.PlacementKeysReplace(ctx, rp, keys, scheduling.PlacementKeysReplaceParams{}); err != nil {
		t.Fatalf("unreserved change: %v", err)
	}
	got2, err := s.Cloud.PlacementKeys(ctx, rp)
	if err != nil || len(got2) != 2 || got2[0].Name != "_tier" || got2[1].Value != 0.4 {
		t.Fatalf("keys %+v %v", got2, err)
	}
	ledgertest.Rejection(t, s.Cloud.PlacementKeysReplace(ctx, rp, []scheduling.PlacementKey{{Name: "a"}, {Name: "a"}}, scheduling.PlacementKeysReplaceParams{Reserved: true}), fault.ErrInvalid)
	ledgertest.Rejection(t, s.Cloud.PlacementKeysReplace(ctx, rp, []scheduling.PlacementKey{{Name: "a", Value: math.Inf(1)}}, scheduling.PlacementKeysReplaceParams{Reserved: true}), fault.ErrInvalid)
	_, err = s.Cloud.PlacementKeys(ctx, uuidD)
	ledgertest.Rejection(t, err, fault.ErrNotFound)

	// Deleting the provider removes its state and keys.
	if err := s.Providers.ProviderDelete(ctx, rp); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := f.DB.QueryRow(ctx, `SELECT (SELECT count(*) FROM provider_state) + (SELECT count(*) FROM provider_placement_keys)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("left behind: %d %v", n, err)
	}
}

func TestConsumerDetailsAndStickyKeys(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx
	rp1 := f.Provider("cn1", ledgertest.Inv("VCPU", 8))
	rp2 := f.Provider("cn2", ledgertest.Inv("VCPU", 8))
	if err := s.Cloud.PlacementKeysReplace(ctx, rp1, []scheduling.PlacementKey{{Name: "rack", Value: 0.3, Sticky: true}, {Name: "row", Value: 7}},
		scheduling.PlacementKeysReplaceParams{}); err != nil {
		t.Fatal(err)
	}
	c1, c2 := "cccccccc-0000-4000-8000-000000000001", "cccccccc-0000-4000-8000-000000000002"
	w := ledgertest.Alloc(c1, rp1, ledgertest.Res("VCPU", 2))
	w.Name, w.Properties, w.CopyStickyKeys = "web-1", map[string]any{"group": "web"}, true
	if err := s.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{w}); err != nil {
		t.Fatal(err)
	}
	w2 := ledgertest.Alloc(c2, rp2, ledgertest.Res("VCPU", 1))
	w2.Properties = map[string]any{"group": "web"}
	if err := s.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{w2}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.Cloud.ConsumerKeys(ctx, c1)
	if err != nil || len(keys) != 1 || keys[0].Name != "rack" || keys[0].Value != 0.3 {
		t.Fatalf("consumer keys %+v %v", keys, err)
	}
	if keys, _ := s.Cloud.ConsumerKeys(ctx, c2); len(keys) != 0 {
		t.Errorf("c2 keys %+v", keys)
	}

	// Moved elsewhere, the consumer keeps its keys (and its name: a write
	// without one leaves it).
	w.Allocations[0].ProviderUUID, w.Generation, w.CheckGeneration = rp2, ledgertest.Gen(1), true
	w.Name = ""
	if err := s.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{w}); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.Cloud.ConsumerKeys(ctx, c1); len(keys) != 1 {
		t.Errorf("keys after move %+v", keys)
	}
	ins, err := s.Cloud.Instances(ctx, scheduling.InstancesParams{})
	if err != nil || len(ins) != 2 || ins[0].Name != "web-1" || ins[0].RootName != "cn2" || ins[0].Resources["VCPU"] != 2 {
		t.Fatalf("instances %+v %v", ins, err)
	}
	if ins, _ := s.Cloud.Instances(ctx, scheduling.InstancesParams{Location: "cn1"}); len(ins) != 0 {
		t.Errorf("cn1 instances %+v", ins)
	}
	if ins, _ := s.Cloud.Instances(ctx, scheduling.InstancesParams{Location: rp2, Project: "proj"}); len(ins) != 2 {
		t.Errorf("cn2 instances %+v", ins)
	}
	// Max reads one more than it allows, to say there are more; the
	// count counts without listing.
	if ins, err := s.Cloud.Instances(ctx, scheduling.InstancesParams{Max: 1}); err != nil || len(ins) != 2 {
		t.Errorf("max 1: %+v %v", ins, err)
	}
	if ins, err := s.Cloud.Instances(ctx, scheduling.InstancesParams{Max: 2}); err != nil || len(ins) != 2 || ins[1].Resources["VCPU"] == 0 {
		t.Errorf("max 2: %+v %v", ins, err)
	}
	for params, want := range map[scheduling.InstancesParams]int{{}: 2, {Location: "cn1"}: 0, {Location: rp2, Project: "proj"}: 2,
		{Project: "other"}: 0} {
		if n, err := s.Cloud.InstancesCount(ctx, params); err != nil || n != want {
			t.Errorf("count %+v: %d %v, want %d", params, n, err, want)
		}
	}
	members, err := s.Cloud.GroupMembers(ctx, "group", "web")
	if err != nil || len(members) != 1 || members[rp2] != 2 {
		t.Fatalf("group members %v %v", members, err)
	}
	counts, err := s.Cloud.ConsumerCounts(ctx, []string{rp1, rp2})
	if err != nil || counts[rp2] != 2 || counts[rp1] != 0 {
		t.Fatalf("counts %v %v", counts, err)
	}

	// A refused write stores nothing of the details.
	bad := ledgertest.Alloc("cccccccc-0000-4000-8000-000000000003", rp1, ledgertest.Res("VCPU", 100))
	bad.Name, bad.CopyStickyKeys = "big", true
	ledgertest.Rejection(t, s.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{bad}), fault.ErrConflict)
	if ins, _ := s.Cloud.Instances(ctx, scheduling.InstancesParams{}); len(ins) != 2 {
		t.Errorf("instances after refused write %+v", ins)
	}
}

func TestClusterProviders(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx
	rp1 := f.Provider("cn1", ledgertest.Inv("VCPU", 8), ledgertest.Inv("MEMORY_MB", 1024))
	rp2 := f.Provider("cn2", ledgertest.Inv("VCPU", 4))
	agg := "f918801a-5e54-4bee-9095-09a9d0c786b8"
	if _, err := s.Providers.ProviderAggregatesReplace(ctx, rp2, []string{agg}, resources.AggregatesReplaceParams{}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Cloud.ProviderSummaries(ctx, scheduling.ProviderSummariesParams{RootsOnly: true})
	if err != nil || len(all) != 2 || all[0].UUID != rp1 || len(all[0].Resources) != 2 || all[0].Resources[0].Capacity != 8 {
		t.Fatalf("all %+v %v", all, err)
	}
	one, err := s.Cloud.ProviderSummaries(ctx, scheduling.ProviderSummariesParams{Ref: "cn2"})
	if err != nil || len(one) != 1 || !slices.Equal(one[0].Aggregates, []string{agg}) {
		t.Fatalf("by name %+v %v", one, err)
	}
	one, err = s.Cloud.ProviderSummaries(ctx, scheduling.ProviderSummariesParams{Ref: rp1})
	if err != nil || len(one) != 1 || one[0].Name != "cn1" {
		t.Fatalf("by uuid %+v %v", one, err)
	}
	in, err := s.Cloud.ProviderSummaries(ctx, scheduling.ProviderSummariesParams{Aggregate: agg})
	if err != nil || len(in) != 1 || in[0].UUID != rp2 {
		t.Fatalf("by aggregate %+v %v", in, err)
	}
	if none, err := s.Cloud.ProviderSummaries(ctx, scheduling.ProviderSummariesParams{Aggregate: "junk"}); err != nil || len(none) != 0 {
		t.Fatalf("junk aggregate %+v %v", none, err)
	}
}

// A scriptlet is never deleted while a policy naming it is stored, however
// the two writes interleave.
func TestScriptletDeleteRacesPolicyWrite(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx
	for round := range 20 {
		if _, err := s.Catalogue.ScriptletPut(ctx, "s", "x = 1\n"); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		go func() {
			_, _, err := s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "p", Spec: json.RawMessage(`{}`), Scriptlets: []string{"s"}},
				scheduling.SchedulingPolicyPutParams{})
			errs <- err
		}()
		go func() { errs <- s.Catalogue.ScriptletDelete(ctx, "s") }()
		for range 2 {
			if err := <-errs; err != nil && !errors.Is(err, fault.ErrConflict) && !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		var dangling int
		if err := f.DB.QueryRow(ctx, `SELECT count(*) FROM scheduling_policies p
			WHERE EXISTS (SELECT 1 FROM unnest(p.scriptlets) n WHERE NOT EXISTS (SELECT 1 FROM scriptlets s WHERE s.name = n))`).Scan(&dangling); err != nil {
			t.Fatal(err)
		}
		if dangling != 0 {
			t.Fatalf("round %d: a policy names a deleted scriptlet", round)
		}
		if _, err := f.DB.Exec(ctx, `DELETE FROM scheduling_policies`); err != nil {
			t.Fatal(err)
		}
	}
}
