package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

func TestCatalogResolvePolicies(t *testing.T) {
	ctx := context.Background()
	store := ledgertest.NewStore(t)
	src := catalog.New(catalog.Options{Store: store})

	// No stored default: the built-in policy, or the fallback when set.
	builtin, isDefault, err := src.Policy(ctx, "")
	if err != nil || !isDefault {
		t.Fatal(isDefault, err)
	}
	if f, _ := builtin.Describe(); len(f) == 0 || f[0] != scheduler.CapacityName {
		t.Errorf("built-in filters %v", f)
	}
	fallback, err := scheduler.NewPolicy(scheduler.PolicyConfig{Weighers: []scheduler.PluginConfig{{Name: scheduler.PackName}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	withFallback := catalog.New(catalog.Options{Store: store, Fallback: fallback})
	if p, isDefault, _ := withFallback.Policy(ctx, ""); p != fallback || !isDefault {
		t.Error("fallback not used")
	}
	_, _, err = src.Policy(ctx, "gold")
	if !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown policy: %v", err)
	}

	// A stored default replaces both; it uses a stored scriptlet.
	if _, err := store.Catalogue.ScriptletPut(ctx, "s", "def instance_placement(request, candidate_members):\n    return None\n"); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := scheduler.PolicyConfig{Weighers: []scheduler.PluginConfig{{Name: scheduler.SpreadName}}, Scriptlet: "s"}
	built, err := src.CheckPolicy(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(cfg)
	if _, _, err := store.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "gold", Default: true, Spec: spec,
		Scriptlets: built.Scriptlets()}, scheduling.SchedulingPolicyPutParams{}); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	def, isDefault, err := src.Policy(ctx, "")
	if err != nil || !isDefault || def.Config().Scriptlet != "s" {
		t.Fatalf("default: %v %v %v", def, isDefault, err)
	}
	if err := withFallback.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if p, _, err := withFallback.Policy(ctx, ""); err != nil || p == fallback || p.Config().Scriptlet != "s" {
		t.Fatalf("default with a fallback: %v %v", p, err)
	}
	// By its name, the default is the default too (its claims are
	// shadowed).
	if named, isDefault, _ := src.Policy(ctx, "gold"); named != def || !isDefault {
		t.Error("by name and as default differ")
	}

	// A stored policy that no longer builds is an error when asked for,
	// not a failed reload.
	if _, _, err := store.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "old", Spec: json.RawMessage(`{"filters": [{"name": "retired_unit"}]}`)},
		scheduling.SchedulingPolicyPutParams{}); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, isDefault, err := src.Policy(ctx, "old"); !errors.Is(err, fault.ErrInvalid) || isDefault {
		t.Errorf("broken policy: %v", err)
	}

	// Invalid input is refused with the unit named.
	_, err = src.CheckPolicy(ctx, scheduler.PolicyConfig{Filters: []scheduler.PluginConfig{{Name: "nope"}}})
	if !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("unknown unit: %v", err)
	}
	var se *scriptlet.CompileError
	if err := src.CheckScriptlet("x", []byte("def instance_placement(a, b):\n    return (\n")); !errors.As(err, &se) || se.Line != 3 {
		t.Errorf("compile error: %v", err)
	}
}

func TestCatalogRunFollowsNotifications(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url := ledgertest.NewDB(t)
	open := func() *ledger.Store {
		s, err := ledger.Open(ctx, ledger.Config{DatabaseURL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	writer, reader := open(), open()
	src := catalog.New(catalog.Options{Store: reader, Refresh: time.Hour})
	done := make(chan struct{})
	go func() { defer close(done); src.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// A write through another store reaches src without a Reload call.
	if err := writer.Catalogue.ConfigPatch(ctx, map[string]json.RawMessage{
		catalog.ConfigDefaultScriptlet: json.RawMessage(`"def instance_placement(request, candidate_members):\n    return 'no'\n"`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _, err := src.Policy(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if hasDefaultScriptlet(p) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the default scriptlet written through another store never arrived")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The run that refused was counted.
	if m := src.Metrics(); m.Runs.Load() == 0 || m.Refused.Load() == 0 {
		t.Errorf("scriptlet runs %d, refused %d", m.Runs.Load(), m.Refused.Load())
	}
}

// hasDefaultScriptlet reports whether p's ranking runs the server's
// default scriptlet, by ranking one candidate.
func hasDefaultScriptlet(p *scheduler.Policy) bool {
	prov := &scheduler.ProviderView{Provider: engine.Provider{UUID: "u", Name: "n", RootUUID: "u"}, Resources: scheduler.ResourcesOf(map[string]engine.InventoryUsage{"VCPU": {Capacity: 8}})}
	cand := &scheduler.Candidate{Roots: []string{"u"}, Providers: map[string]*scheduler.ProviderView{"u": prov},
		Allocations: []engine.Allocation{{ProviderUUID: "u", Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}
	r, _ := p.Rank(context.Background(), &scheduler.Request{Resources: map[string]int64{"VCPU": 1}}, []*scheduler.Candidate{cand})
	return r != nil && r.Scriptlet == scriptlet.DefaultName
}

// The writes check first (nothing is stored when the check fails), store,
// and reload, so the writing replica sees its write at once, without Run.
func TestCatalogWritesCheckStoreReload(t *testing.T) {
	ctx := context.Background()
	store := ledgertest.NewStore(t)
	src := catalog.New(catalog.Options{Store: store})

	var se *scriptlet.CompileError
	if _, err := src.ScriptletPut(ctx, "bad", []byte("def weigh(r, c):\n    return (\n")); !errors.As(err, &se) {
		t.Fatalf("bad scriptlet: %v", err)
	}
	if _, err := store.Catalogue.ScriptletGet(ctx, "bad"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a scriptlet that does not compile was stored: %v", err)
	}
	created, err := src.ScriptletPut(ctx, "w", []byte("def weigh(request, candidate):\n    return 1.0\n"))
	if err != nil || !created {
		t.Fatalf("ScriptletPut: %v %v", created, err)
	}
	if created, err := src.ScriptletPut(ctx, "w", []byte("def weigh(request, candidate):\n    return 2.0\n")); err != nil || created {
		t.Fatalf("ScriptletPut again: %v %v", created, err)
	}
	units, err := src.StarlarkUnits(ctx)
	if err != nil || len(units) != 1 || units[0].Name != scheduler.StarlarkUnitPrefix+"w" {
		t.Fatalf("units after ScriptletPut: %v %v", units, err)
	}

	if _, _, err := src.PolicyPut(ctx, catalog.PolicyPutParams{Name: "x",
		Spec: scheduler.PolicyConfig{Filters: []scheduler.PluginConfig{{Name: "nope"}}}}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("invalid policy: %v", err)
	}
	if _, err := store.Catalogue.SchedulingPolicyGet(ctx, "x"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("an invalid policy was stored: %v", err)
	}
	spec := scheduler.PolicyConfig{Weighers: []scheduler.PluginConfig{{Name: scheduler.StarlarkUnitPrefix + "w"}}}
	p, created, err := src.PolicyPut(ctx, catalog.PolicyPutParams{Name: "gold", Default: true, Spec: spec, Create: true})
	if err != nil || !created || p.Name != "gold" || len(p.Scriptlets) != 1 {
		t.Fatalf("PolicyPut: %+v %v %v", p, created, err)
	}
	if _, _, err := src.PolicyPut(ctx, catalog.PolicyPutParams{Name: "gold", Spec: spec, Create: true}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("PolicyPut create over a stored policy: %v", err)
	}
	if def, _, err := src.Policy(ctx, ""); err != nil || def.Config().Weighers[0].Name != scheduler.StarlarkUnitPrefix+"w" {
		t.Fatalf("default after PolicyPut: %v", err)
	}
	if err := src.ScriptletDelete(ctx, "w"); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("deleting a scriptlet a policy names: %v", err)
	}
	if err := src.PolicyDelete(ctx, "gold"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.Policy(ctx, "gold"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("policy after PolicyDelete: %v", err)
	}
	if err := src.ScriptletDelete(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if units, _ := src.StarlarkUnits(ctx); len(units) != 0 {
		t.Errorf("units after ScriptletDelete: %v", units)
	}

	if err := src.ConfigPatch(ctx, map[string]json.RawMessage{"no.such.key": json.RawMessage(`1`)}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("unknown config key: %v", err)
	}
	if err := src.ConfigPatch(ctx, map[string]json.RawMessage{catalog.ConfigScriptletMaxSteps: json.RawMessage(`1000`)}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := store.Catalogue.Config(ctx); err != nil || string(cfg[catalog.ConfigScriptletMaxSteps]) != "1000" {
		t.Errorf("config after ConfigPatch: %s %v", cfg, err)
	}
}
