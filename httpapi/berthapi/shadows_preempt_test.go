package berthapi_test

import (
	"fmt"
	"testing"
)

// TestShadowsCountPreemption: beside a claim that preempted, a shadow
// goes through the claim's preemption plans with its own policy and
// counts what it would preempt: the same victims (agreed), another
// host's (disagreed, with the disagreement kept), or nothing (its
// scriptlet refused).
func TestShadowsCountPreemption(t *testing.T) {
	s, store := newSchedulingServer(t)
	seedComputes(t, store, 2)
	put := func(name, src string) {
		wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/" + name, body: src, contentType: "text/plain"}, 201, "")
	}
	put("pass", "def instance_placement(request, candidate_members):\n    return None\n")
	put("no-cn1", "def filter(request, candidate):\n    return candidate.name != \"cn1\"\n")
	put("refuse", "def instance_placement(request, candidate_members):\n    return \"not for \" + request.name\n")
	wantStatus(t, s, apiCall{method: "POST", path: "/scheduling_policies", body: `{"name": "dflt", "default": true, "weighers": [{"name": "spread"}]}`}, 201, "")
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/avoid", body: `{"filters": [{"name": "starlark:no-cn1"}]}`}, 201, "")

	// Spot instances fill both hosts, those on cn1 of the lower priority.
	for i, spot := range []struct {
		host string
		prio int
	}{{"cn1", -5}, {"cn1", -5}, {"cn2", -1}, {"cn2", -1}} {
		wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(`{"consumer_uuid": "5b000000-0000-4000-8000-%012d",
			"project_id": "spot", "user_id": "u", "resources": {"VCPU": 4}, "target": %q, "preemptible": true, "priority": %d}`,
			i+1, spot.host, spot.prio)}, 200, "")
	}
	for _, path := range []string{"/scriptlets/pass/shadow", "/scriptlets/refuse/shadow", "/scheduling_policies/avoid/shadow"} {
		wantStatus(t, s, apiCall{method: "PUT", path: path}, 201, `"would_preempt":{"claims":0,"victims":0}`)
	}

	// The on-demand claim preempts one spot instance of cn1 (the lowest
	// priority); the shadows are beside it.
	got := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: `{"consumer_uuid": "0d000000-0000-4000-8000-000000000001",
		"project_id": "demo", "user_id": "u", "name": "urgent", "resources": {"VCPU": 4}, "priority": 10}`}, 200, "")
	if got["root_provider_name"] != "cn1" || len(got["preempted"].([]any)) != 1 {
		t.Fatalf("the claim: %v", got)
	}
	settle(t, s)

	preempts := func(rep map[string]any) (claims, victims float64) {
		wp := rep["would_preempt"].(map[string]any)
		return wp["claims"].(float64), wp["victims"].(float64)
	}
	pass := wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/pass/shadow"}, 200, "")
	if c, v := preempts(pass); c != 1 || v != 1 || count(pass, "claims_seen") != 1 || count(pass, "agreed") != 1 {
		t.Errorf("pass counted %v", pass)
	}
	avoid := wantStatus(t, s, apiCall{method: "GET", path: "/scheduling_policies/avoid/shadow"}, 200, "")
	if c, v := preempts(avoid); c != 1 || v != 1 || count(avoid, "disagreed") != 1 {
		t.Errorf("avoid counted %v", avoid)
	}
	if d := avoid["disagreements"].([]any); len(d) != 1 ||
		d[0].(map[string]any)["claim"].(map[string]any)["root_provider_name"] != "cn1" ||
		d[0].(map[string]any)["shadow"].(map[string]any)["root_provider_name"] != "cn2" {
		t.Errorf("avoid's disagreement: %v", d)
	}
	refuse := wantStatus(t, s, apiCall{method: "GET", path: "/scriptlets/refuse/shadow"}, 200, "")
	if c, v := preempts(refuse); c != 0 || v != 0 || count(refuse, "would_refuse") != 1 {
		t.Errorf("refuse counted %v", refuse)
	}
	if r := refuse["refusals"].([]any); len(r) != 1 || r[0].(map[string]any)["message"] != "not for urgent" {
		t.Errorf("refuse's refusals: %v", r)
	}
}
