package berthapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

func TestPolicyUnitsAPI(t *testing.T) {
	s, _ := newSchedulingServer(t)
	body := wantStatus(t, s, apiCall{method: "GET", path: "/policy_units"}, 200, `"name":"capacity"`)
	units := body["policy_units"].([]any)
	kinds := map[string]bool{}
	for _, u := range units {
		m := u.(map[string]any)
		kinds[m["kind"].(string)] = true
		if _, ok := m["parameters"].([]any); !ok {
			t.Errorf("unit %v: no parameter list", m["name"])
		}
	}
	if !kinds["filter"] || !kinds["weigher"] {
		t.Errorf("kinds %v", kinds)
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/policy_units", token: "user"}, 403, "berth:policy_units:list")

	// A stored scriptlet defining weigh is a unit too.
	wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/w", contentType: "text/plain",
		body: "def weigh(request, candidate):\n    return 1\n"}, 201, "")
	wantStatus(t, s, apiCall{method: "GET", path: "/policy_units"}, 200, `"name":"starlark:w","kind":"weigher"`)
}

func TestSchedulingPoliciesAPI(t *testing.T) {
	s, _ := newSchedulingServer(t)
	gold := `{"name": "gold", "description": "spread memory", "default": true,
		"filters": [{"name": "max_consumers", "params": {"max": 10}}],
		"weighers": [{"name": "spread", "factor": 2}], "balancer": {"mode": "even", "high": 0.7}}`
	created := wantStatus(t, s, apiCall{method: "POST", path: "/scheduling_policies", body: gold}, 201, `"name":"gold"`)
	if created["default"] != true || created["scriptlet"] != nil || created["generation"] != 1.0 {
		t.Errorf("created %v", created)
	}
	wantStatus(t, s, apiCall{method: "POST", path: "/scheduling_policies", body: gold}, 409, "already exists")
	wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/gold"}, 200, `"weighers":[{"factor":2,"name":"spread","params":{}}]`)

	// Validation names the unit or parameter at fault; nothing is stored.
	for _, tc := range []struct{ body, detail string }{
		{`{"name": "x", "filters": [{"name": "no_such_unit"}]}`, "no_such_unit"},
		{`{"name": "x", "filters": [{"name": "max_consumers", "params": {"max": 0}}]}`, "max_consumers"},
		{`{"name": "x", "filters": [{"name": "max_consumers", "params": {"max": 1, "typo": 2}}]}`, "typo"},
		// Go's decoding errors are worded without Go's type names.
		{`{"name": "x", "filters": [{"name": "max_consumers", "params": {"max": "ten"}}]}`,
			"max_consumers: params: max: a string is not an integer"},
		{`{"name": "x", "filters": [{"name": "max_consumers", "params": {"max": 1e30}}]}`,
			"max_consumers: params: max: 1e30 is not an integer"},
		{`{"name": "x", "weighers": [{"name": "max_consumers"}]}`, "max_consumers"},
		{`{"name": "x", "scriptlet": "missing"}`, "missing"},
		{`{"name": "x", "weighers": [{"name": "starlark:missing"}]}`, "missing"},
		{`{"name": "x", "balancer": {"mode": "sideways"}}`, "JSON does not validate"},
		{`{"name": "x", "balancer": {"mode": "even", "high": 0.1, "low": 0.5}}`, "low"},
		{`{"name": "bad name"}`, "JSON does not validate"},
		{`{"name": "x", "colour": "red"}`, "JSON does not validate"},
	} {
		wantStatus(t, s, apiCall{method: "POST", path: "/scheduling_policies", body: tc.body}, 400, tc.detail)
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/x"}, 404, "No scheduling policy named x")

	// PUT creates, then replaces; at most one default.
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/silver", body: `{"default": true}`}, 201, `"default":true`)
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/silver", body: `{"default": true, "description": "two"}`}, 200, `"generation":2`)
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/silver", body: `{"name": "other"}`}, 400, "differs")
	list := wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies"}, 200, "")
	defaults := 0
	for _, p := range list["scheduling_policies"].([]any) {
		if p.(map[string]any)["default"] == true {
			defaults++
		}
	}
	if defaults != 1 {
		t.Errorf("%d default policies: %v", defaults, list)
	}

	wantStatus(t, s, apiCall{method: "DELETE", path: "/scheduling_policies/silver"}, 204, "")
	wantStatus(t, s, apiCall{method: "DELETE", path: "/scheduling_policies/silver"}, 404, "silver")
	wantStatus(t, s, apiCall{method: "POST", path: "/scheduling_policies", body: gold, token: "user"}, 403, "berth:scheduling_policies:create")
}

func TestScriptletsAPI(t *testing.T) {
	s, _ := newSchedulingServer(t)
	src := "def instance_placement(request, candidate_members):\n    if request.name == \"foo\":\n        return \"Invalid name\"\n"
	put := func(name, body string) apiCall {
		return apiCall{method: "PUT", path: "/scriptlets/" + name, body: body, contentType: "text/plain"}
	}
	wantStatus(t, s, put("refuse-foo", src), 201, "")
	wantStatus(t, s, put("refuse-foo", src), 204, "")
	if code, raw, _ := do(t, s, apiCall{method: "GET", path: "/scriptlets/refuse-foo"}); code != 200 || raw != src {
		t.Errorf("get: %d %q", code, raw)
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets"}, 200, `"name":"refuse-foo"`)

	// Compile errors: 400 with line and column; nothing stored.
	for _, tc := range []struct{ src, detail string }{
		{"def instance_placement(request, candidate_members):\n    return (\n", "line 3, column 1"},
		{"def instance_placement(request, candidate_members):\n    return undefined_name\n", "line 2, column 12: undefined: undefined_name"},
		{"x = 1\n", "defines none of"},
	} {
		body := wantStatus(t, s, put("broken", tc.src), 400, tc.detail)
		if code := errorCode(body); code != fault.CodeScriptletInvalid {
			t.Errorf("code %q", code)
		}
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/broken"}, 404, "No scriptlet named broken")
	wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/x", body: src}, 415, "text/plain")
	wantStatus(t, s, put("bad%20name", src), 400, "Invalid scriptlet name")

	// In use by a policy: 409 on delete.
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/p", body: `{"scriptlet": "refuse-foo"}`}, 201, `"scriptlet":"refuse-foo"`)
	wantStatus(t, s, apiCall{method: "DELETE", path: "/scriptlets/refuse-foo"}, 409, "used by scheduling policy p")
	wantStatus(t, s, apiCall{method: "DELETE", path: "/scheduling_policies/p"}, 204, "")
	wantStatus(t, s, apiCall{method: "DELETE", path: "/scriptlets/refuse-foo"}, 204, "")
	wantStatus(t, s, apiCall{method: "DELETE", path: "/scriptlets/refuse-foo"}, 404, "")
}

func TestConfigAPI(t *testing.T) {
	s, _ := newSchedulingServer(t)
	wantStatus(t, s, apiCall{method: "GET", path: "/config"}, 200, `{}`)
	ok := `{"instances.placement.scriptlet": "def instance_placement(request, candidate_members):\n    return None\n",
		"scheduler.scriptlet.max_steps": 5000, "scheduler.scriptlet.timeout": "250ms"}`
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: ok}, 200, `"scheduler.scriptlet.max_steps":5000`)
	for _, tc := range []struct{ body, detail string }{
		{`{"no.such.key": 1}`, "Unknown config key no.such.key"},
		{`{"instances.placement.scriptlet": "def instance_placement(request, candidate_members):\n  return (\n"}`, "line 3, column 1"},
		{`{"instances.placement.scriptlet": 5}`, "must be a string"},
		{`{"scheduler.scriptlet.max_steps": "many"}`, "scheduler.scriptlet.max_steps must be an integer"},
		{`{"scheduler.scriptlet.max_steps": 0}`, "scheduler.scriptlet.max_steps"},
		{`{"scheduler.scriptlet.timeout": "forever"}`, "scheduler.scriptlet.timeout must be a duration"},
		{`{"scheduler.scriptlet.timeout": "2h"}`, "scheduler.scriptlet.timeout"},
		{`[1]`, "JSON does not validate"},
		// One bad key refuses the whole patch.
		{`{"scheduler.scriptlet.max_steps": 7, "bogus": 1}`, "bogus"},
	} {
		wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: tc.body}, 400, tc.detail)
	}
	got := wantStatus(t, s, apiCall{method: "GET", path: "/config"}, 200, `"scheduler.scriptlet.timeout":"250ms"`)
	if got["scheduler.scriptlet.max_steps"] != 5000.0 {
		t.Errorf("config after refused patches %v", got)
	}
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"scheduler.scriptlet.timeout": null}`}, 200, "")
	if got := wantStatus(t, s, apiCall{method: "GET", path: "/config"}, 200, ""); len(got) != 2 {
		t.Errorf("config after removing a key %v", got)
	}
}

// seedComputes makes n compute nodes cn1..cnN with VCPU and MEMORY_MB.
func seedComputes(t *testing.T, store *ledger.Store, n int) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for i := 1; i <= n; i++ {
		u := mustProvider(t, store, "cn"+string(rune('0'+i)))
		if _, err := store.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: u, Generation: new(int64)},
			[]engine.Inventory{resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 8192)}); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func TestScriptletTestAPI(t *testing.T) {
	s, store := newSchedulingServer(t)
	rps := seedComputes(t, store, 2)
	src := `def instance_placement(request, candidate_members):
    log_info("placing", request.name, "among", len(candidate_members))
    if request.name == "foo":
        return "Invalid name"
    set_target("cn2")
`
	wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/pick", body: src, contentType: "text/plain"}, 201, "")
	path := "/scriptlets/pick/test"
	got := wantStatus(t, s, apiCall{method: "POST", path: path, body: `{"name": "bar", "resources": {"VCPU": 1}}`}, 200, `"message":"placing bar among 2"`)
	d := got["decision"].(map[string]any)
	if d["target"] != rps[1] || d["target_name"] != "cn2" || d["refused"] != nil || len(got["ranking"].([]any)) != 2 {
		t.Errorf("decision %v", got)
	}
	got = wantStatus(t, s, apiCall{method: "POST", path: path, body: `{"name": "foo", "resources": {"VCPU": 1}}`}, 200, "")
	if d := got["decision"].(map[string]any); d["target"] != nil || !strings.Contains(d["refused"].(string), "Invalid name") {
		t.Errorf("refusal %v", got)
	}
	// Nothing was written.
	if u, err := store.Providers.ProviderUsagesGet(context.Background(), rps[1]); err != nil || len(u.Usages) != 0 && u.Usages["VCPU"] != 0 {
		t.Errorf("usages after tests: %+v %v", u, err)
	}
	wantStatus(t, s, apiCall{method: "POST", path: "/scriptlets/nope/test", body: `{"resources": {"VCPU": 1}}`}, 404, "No scriptlet named nope")
	// A scriptlet of units only (no instance_placement) has nothing to
	// test: 400, not the 500 it was.
	wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/units", body: "def weigh(request, candidate):\n    return 1.0\n", contentType: "text/plain"}, 201, "")
	got = wantStatus(t, s, apiCall{method: "POST", path: "/scriptlets/units/test", body: `{"resources": {"VCPU": 1}}`}, 400, "defines no instance_placement")
	if code := errorCode(got); code != fault.CodeScriptletInvalid {
		t.Errorf("a scriptlet of units only: code %q", code)
	}
	wantStatus(t, s, apiCall{method: "POST", path: path, body: `{"resources": {"VCPU": 1}, "policy": "nope"}`}, 404, "No scheduling policy named nope")
	wantStatus(t, s, apiCall{method: "POST", path: path, body: `{"resources": {"NOPE": 1}}`}, 400, "NOPE")
	wantStatus(t, s, apiCall{method: "POST", path: path, body: `{}`}, 400, "JSON does not validate")
	// The sample is a POST /claims body: exclude_providers and target
	// (by name) narrow what the scriptlet sees.
	got = wantStatus(t, s, apiCall{method: "POST", path: path, body: `{"name": "bar", "resources": {"VCPU": 1}, "exclude_providers": ["cn1"]}`}, 200, `"message":"placing bar among 1"`)
	if d := got["decision"].(map[string]any); d["target"] != rps[1] || len(got["ranking"].([]any)) != 1 {
		t.Errorf("excluded cn1: %v", got)
	}
	wantStatus(t, s, apiCall{method: "POST", path: path, body: `{"resources": {"VCPU": 1}, "target": "cn9"}`}, 400, "cn9")
}

func TestBalanceAPI(t *testing.T) {
	s, store := newSchedulingServer(t)
	rps := seedComputes(t, store, 2)
	ctx := context.Background()
	// cn1 is 7/8 busy; cn2 is empty.
	for i, n := range []int64{4, 3} {
		uuid := "dddddddd-0000-4000-8000-00000000000" + string(rune('1'+i))
		if err := store.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{{ConsumerUUID: uuid, ProjectID: "p", UserID: "u",
			Allocations: []engine.Allocation{{ProviderUUID: rps[0], Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: n}}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/even", body: `{"balancer": {"mode": "even", "high": 0.8}}`}, 201, "")
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/plain", body: `{}`}, 201, "")
	got := wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/even/balance"}, 200, `"mode":"even"`)
	src, _ := got["source"].(map[string]any)
	dests, _ := got["destinations"].([]any)
	if src["uuid"] != rps[0] || len(dests) != 1 || dests[0].(map[string]any)["uuid"] != rps[1] {
		t.Errorf("suggestion %v", got)
	}
	// In an aggregate that holds only cn2 there is nothing to move.
	agg := "f918801a-5e54-4bee-9095-09a9d0c786b8"
	if _, err := store.Providers.ProviderAggregatesReplace(ctx, rps[1], []string{agg}, resources.AggregatesReplaceParams{}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/even/balance?aggregate=" + agg}, 200,
		`"reason":"no consumer of the 1 provider can move under mode even (high 0.8, low 0.2)","suggestion":null`)
	wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/even/balance?aggregate=x"}, 400, "want a uuid")
	wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/plain/balance"}, 400, "has no balancer")
	wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/nope/balance"}, 404, "nope")
}
