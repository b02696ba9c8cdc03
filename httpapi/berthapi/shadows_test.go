package berthapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/fault"
)

// shadowClaim posts a claim for a new consumer named name (VCPU:1), with
// target when set, and checks that it was placed.
func shadowClaim(t *testing.T, s *httpapi.Server, n int, name, target string) string {
	t.Helper()
	body := fmt.Sprintf(`{"consumer_uuid": "00000000-0000-4000-8000-%012d", "project_id": "proj", "user_id": "u",
		"name": %q, "resources": {"VCPU": 1}`, n, name)
	if target != "" {
		body += fmt.Sprintf(`, "target": %q`, target)
	}
	got := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: body + "}"}, 200, "")
	return got["root_provider_name"].(string)
}

// settle waits until s's shadows have judged every claim submitted.
func settle(t *testing.T, s *httpapi.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := catalogOf(s).Shadows().Idle(ctx); err != nil {
		t.Fatal(err)
	}
}

func count(rep map[string]any, key string) float64 {
	if f, ok := rep["failures"].(map[string]any)[key]; ok {
		return f.(float64)
	}
	return rep[key].(float64)
}

// TestShadowsAPI: a scriptlet and a policy run in shadow of real claims at
// once; the claims are placed as without them; the reports count what
// each would have done, on every replica, and survive the replica.
func TestShadowsAPI(t *testing.T) {
	s, store := newSchedulingServer(t)
	seedComputes(t, store, 2)
	put := func(name, src string) {
		wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/" + name, body: src, contentType: "text/plain"}, 201, "")
	}
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"scheduler.scriptlet.max_steps": 100000}`}, 200, "")
	// pick would put everything on cn2 and refuses "foo".
	put("pick", "def instance_placement(request, candidate_members):\n    if request.name == \"foo\":\n        return \"Invalid name\"\n    set_target(\"cn2\")\n")
	// risky spins on vm names and fails on boom: the claims' own policy
	// would go on without it, its shadow counts the failures.
	put("risky", "def instance_placement(request, candidate_members):\n    if request.name.startswith(\"vm\"):\n        for i in range(10000000):\n            pass\n    if request.name == \"boom\":\n        return 1 // 0\n")
	put("units", "def filter(request, candidate):\n    return True\n")
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/risky", body: `{"weighers": [{"name": "spread"}], "scriptlet": "risky"}`}, 201, "")
	wantStatus(t, s, apiCall{method: "POST", path: "/scheduling_policies", body: `{"name": "dflt", "default": true, "weighers": [{"name": "spread"}]}`}, 201, "")
	// A stored scriptlet that no longer compiles (written past the API).
	if _, err := store.Catalogue.ScriptletPut(context.Background(), "stale", "def instance_placement(request, candidate_members):\n    return (\n"); err != nil {
		t.Fatal(err)
	}

	// Refusals: nothing started.
	for _, tc := range []struct {
		path   string
		status int
		code   string
		detail string
	}{
		{"/scriptlets/nope/shadow", 404, fault.CodeShadowNotFound, "No scriptlet named nope"},
		{"/scheduling_policies/nope/shadow", 404, fault.CodeShadowNotFound, "No scheduling policy named nope"},
		{"/scriptlets/units/shadow", 400, fault.CodeShadowInvalid, "defines no instance_placement"},
		{"/scriptlets/stale/shadow", 400, fault.CodeShadowInvalid, "does not compile"},
		{"/scheduling_policies/dflt/shadow", 400, fault.CodeShadowInvalid, "cannot shadow itself"},
	} {
		body := wantStatus(t, s, apiCall{method: "PUT", path: tc.path}, tc.status, tc.detail)
		if c := errorCode(body); c != tc.code {
			t.Errorf("PUT %s: code %q, want %q", tc.path, c, tc.code)
		}
	}
	if active, err := store.Catalogue.Shadows(context.Background()); err != nil || len(active) != 0 {
		t.Fatalf("shadows after refusals: %v %v", active, err)
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/pick/shadow"}, 404, "No shadow of scriptlet pick is running")

	// A body, when there is one, is an empty object: unknown members and
	// other JSON are refused with 400, nothing started.
	for _, path := range []string{"/scriptlets/pick/shadow", "/scheduling_policies/risky/shadow"} {
		for _, junk := range []string{`{"x": 1}`, `[]`, `"go"`, `{`} {
			body := wantStatus(t, s, apiCall{method: "PUT", path: path, body: junk}, 400, "")
			if _, detail := apitest.ErrorDetail(body); !strings.Contains(detail, "JSON does not validate") && !strings.Contains(detail, "Malformed JSON") {
				t.Errorf("PUT %s %s: %v", path, junk, body)
			}
		}
	}
	if active, err := store.Catalogue.Shadows(context.Background()); err != nil || len(active) != 0 {
		t.Fatalf("shadows after junk bodies: %v %v", active, err)
	}
	wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/pick/shadow", body: `{}`}, 201, `"claims_seen":0`)
	wantStatus(t, s, apiCall{method: "DELETE", path: "/scriptlets/pick/shadow"}, 204, "")

	started := wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/pick/shadow"}, 201, `"claims_seen":0`)
	if started["kind"] != "scriptlet" || started["name"] != "pick" {
		t.Errorf("started %v", started)
	}
	body := wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/pick/shadow"}, 409, "already running")
	if c := errorCode(body); c != fault.CodeShadowRunning {
		t.Errorf("second start: code %q", c)
	}
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/risky/shadow"}, 201, "")
	wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/pick/shadow", token: "user"}, 403, "")

	// The claims: placed by the default policy, whatever the shadows do.
	if got := shadowClaim(t, s, 1, "first", "cn2"); got != "cn2" {
		t.Fatalf("targeted claim went to %s", got)
	}
	if got := shadowClaim(t, s, 2, "vm1", ""); got != "cn1" {
		t.Fatalf("spread put vm1 on %s", got)
	}
	shadowClaim(t, s, 3, "foo", "")
	shadowClaim(t, s, 4, "boom", "")
	settle(t, s)

	pick := wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/pick/shadow"}, 200, "")
	if count(pick, "claims_seen") != 4 || count(pick, "would_refuse") != 1 || count(pick, "agreed") < 1 ||
		count(pick, "agreed")+count(pick, "disagreed") != 3 || count(pick, "runtime_error") != 0 {
		t.Errorf("pick counted %v", pick)
	}
	if r := pick["refusals"].([]any); len(r) != 1 || r[0].(map[string]any)["message"] != "Invalid name" || r[0].(map[string]any)["count"] != 1.0 {
		t.Errorf("pick refusals %v", r)
	}
	var vm1 map[string]any
	for _, d := range pick["disagreements"].([]any) {
		if d := d.(map[string]any); d["name"] == "vm1" {
			vm1 = d
		}
	}
	if vm1 == nil || vm1["project_id"] != "proj" || vm1["claim"].(map[string]any)["root_provider_name"] != "cn1" ||
		vm1["shadow"].(map[string]any)["root_provider_name"] != "cn2" || vm1["consumer_uuid"] != "00000000-0000-4000-8000-000000000002" {
		t.Errorf("pick's disagreement on vm1: %v in %v", vm1, pick["disagreements"])
	}
	if pick["cost"].(map[string]any)["total_ms"].(float64) <= 0 {
		t.Errorf("pick cost %v", pick["cost"])
	}
	risky := wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/risky/shadow"}, 200, `"kind":"policy"`)
	if count(risky, "claims_seen") != 4 || count(risky, "steps") != 1 || count(risky, "runtime_error") != 1 ||
		count(risky, "agreed") != 2 || count(risky, "disagreed") != 0 || count(risky, "would_refuse") != 0 {
		t.Errorf("risky counted %v", risky)
	}

	// Another replica over the same database runs the same shadows and
	// adds to the same counts; a report read there includes this one's.
	s2, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	shadowClaim(t, s2, 5, "later", "")
	settle(t, s2)
	if err := catalogOf(s2).Shadows().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/pick/shadow"}, 200, ""); count(got, "claims_seen") != 5 {
		t.Errorf("after a claim on the second replica: %v", got)
	}

	// A dry run and a claim naming another policy are not shadowed.
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: `{"consumer_uuid": "00000000-0000-4000-8000-000000000006",
		"project_id": "proj", "user_id": "u", "resources": {"VCPU": 1}, "dry_run": true}`}, 200, "")
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: `{"consumer_uuid": "00000000-0000-4000-8000-000000000007",
		"project_id": "proj", "user_id": "u", "resources": {"VCPU": 1}, "policy": "risky"}`}, 200, "")
	settle(t, s)
	if got := wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/pick/shadow"}, 200, ""); count(got, "claims_seen") != 5 {
		t.Errorf("after a dry run and a claim of another policy: %v", got)
	}

	wantStatus(t, s, apiCall{method: "DELETE", path: "/scriptlets/pick/shadow"}, 204, "")
	body = wantStatus(t, s, apiCall{method: "DELETE", path: "/scriptlets/pick/shadow"}, 404, "No shadow of scriptlet pick")
	if c := errorCode(body); c != fault.CodeShadowNotFound {
		t.Errorf("second stop: code %q", c)
	}
	// Deleting what a shadow runs stops it.
	wantStatus(t, s, apiCall{method: "DELETE", path: "/scheduling_policies/risky"}, 204, "")
	wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/risky/shadow"}, 404, "")
	if active, err := store.Catalogue.Shadows(context.Background()); err != nil || len(active) != 0 {
		t.Errorf("shadows at the end: %v %v", active, err)
	}
	if catalogOf(s).Shadows().Active() {
		t.Error("the runner still has shadows")
	}
}
