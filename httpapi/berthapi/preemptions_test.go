package berthapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestPreemptionAPI: a claim's priority and preemptible fields are
// checked, stored and shown; a claim that fits nowhere displaces the
// preemptible consumers of lower priority that make it fit (the fewest,
// then the lowest priorities, then the newest), names them, and they
// answer GET /claims as preempted and appear in the feed, page by page;
// a dry run names its victims and writes nothing; a non-preemptible or
// equal-priority consumer is never displaced.
func TestPreemptionAPI(t *testing.T) {
	store := ledgertest.NewStore(t)
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Providers.ResourceClassCreate(context.Background(), "CUSTOM_R"); err != nil {
		t.Fatal(err)
	}
	cn1 := ledgertest.Provider(t, store, "cn1", resources.DefaultInventory("VCPU", 4))
	cn2 := ledgertest.Provider(t, store, "cn2", resources.DefaultInventory("VCPU", 4))
	ledgertest.Provider(t, store, "cnR", resources.DefaultInventory("CUSTOM_R", 4))
	ledgertest.Provider(t, store, "cnR2", resources.DefaultInventory("CUSTOM_R", 4))
	ledgertest.Provider(t, store, "cnR3", resources.DefaultInventory("CUSTOM_R", 4))

	claim := func(consumer, extra string) (int, map[string]any) {
		t.Helper()
		return apitest.Call(t, s, http.MethodPost, "/claims", "admin", `{"consumer_uuid": "`+consumer+
			`", "project_id": "p", "user_id": "u", `+extra+`}`)
	}
	show := func(consumer string) map[string]any {
		t.Helper()
		code, body := apitest.Call(t, s, http.MethodGet, "/claims/"+consumer, "admin", "")
		if code != 200 {
			t.Fatalf("GET /claims/%s: %d %v", consumer, code, body)
		}
		return body
	}

	// Bad types are 400 in Placement's format, nothing written.
	for _, bad := range []string{`"priority": "high"`, `"priority": 1.5`, `"priority": 10000000000`, `"preemptible": "yes"`, `"preemptible": 1`} {
		code, body := claim("c0000000-0000-4000-8000-0000000000ff", `"resources": {"VCPU": 1}, `+bad)
		if errs, _ := body["errors"].([]any); code != 400 || len(errs) != 1 {
			t.Errorf("%s: %d %v", bad, code, body)
		}
	}

	// Stored, shown, and kept by a reschedule that does not say.
	const r1 = "c0000000-0000-4000-8000-0000000000a1"
	if code, body := claim(r1, `"resources": {"CUSTOM_R": 1}, "priority": 3, "preemptible": true`); code != 200 {
		t.Fatalf("claim r1: %d %v", code, body)
	}
	if b := show(r1); b["priority"] != 3.0 || b["preemptible"] != true {
		t.Fatalf("r1 shown: %v", b)
	}
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims/"+r1+"/reschedule", "admin", `{}`); code != 200 {
		t.Fatalf("reschedule r1: %d %v", code, body)
	}
	if b := show(r1); b["priority"] != 3.0 || b["preemptible"] != true || b["op"] != "reschedule" {
		t.Fatalf("r1 after reschedule: %v", b)
	}
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims/"+r1+"/reschedule", "admin", `{"priority": 4, "preemptible": false}`); code != 200 {
		t.Fatalf("reschedule r1 again: %d %v", code, body)
	}
	if b := show(r1); b["priority"] != 4.0 || b["preemptible"] != false {
		t.Fatalf("r1 after a reschedule that said: %v", b)
	}

	// Fill both hosts with spot claims, created in this order: s1 (1) and
	// s2 (0) on cn1, s3 (0) and s4 (0) on cn2.
	spots := []struct{ uuid, root, prio string }{
		{"c0000000-0000-4000-8000-000000000001", cn1, "1"},
		{"c0000000-0000-4000-8000-000000000002", cn1, "0"},
		{"c0000000-0000-4000-8000-000000000003", cn2, "0"},
		{"c0000000-0000-4000-8000-000000000004", cn2, "0"},
	}
	for _, sp := range spots {
		if code, body := claim(sp.uuid, `"resources": {"VCPU": 2}, "preemptible": true, "priority": `+sp.prio+`, "target": "`+sp.root+`"`); code != 200 {
			t.Fatalf("spot %s: %d %v", sp.uuid, code, body)
		}
	}
	if b := show(spots[1].uuid); b["preemptible"] != true || b["priority"] != 0.0 || b["state"] != "permanent" {
		t.Fatalf("spot shown: %v", b)
	}

	// Equal priority displaces nothing: a 409 as before preemption
	// existed, for there is nothing of lower priority to preempt.
	const hp1, hp2 = "c0000000-0000-4000-8000-000000000101", "c0000000-0000-4000-8000-000000000102"
	code, body := claim(hp1, `"resources": {"VCPU": 2}`)
	if steps := stepsOf(body); code != 409 || len(steps) == 0 || steps[len(steps)-1]["unit"] == "preemption" {
		t.Fatalf("priority 0 over priority 0: %d %v", code, body)
	}
	// Priority 1 may preempt s2, s3 and s4 but, cn2 excluded, s2 alone
	// is too little: the preemption step counts it.
	code, body = claim(hp1, `"resources": {"VCPU": 4}, "priority": 1, "exclude_providers": ["cn2"]`)
	steps := stepsOf(body)
	if code != 409 || len(steps) == 0 {
		t.Fatalf("priority 1 without cn2: %d %v", code, body)
	}
	last := steps[len(steps)-1]
	reasons, _ := last["reasons"].(map[string]any)
	if last["unit"] != "preemption" || last["remaining"] != 0.0 || last["removed"] != 5.0 ||
		reasons["does not fit even with every preemptible consumer of lower priority preempted"] != 1.0 ||
		reasons["excluded or not the target"] != 1.0 || reasons["no preemptible consumer of lower priority"] != 3.0 {
		t.Fatalf("preemption step: %v", last)
	}
	if b := show(spots[1].uuid); b["state"] != "permanent" {
		t.Fatalf("a refused claim displaced: %v", b)
	}

	// A dry run names the victim and writes nothing.
	code, body = claim(hp1, `"resources": {"VCPU": 2}, "priority": 10, "dry_run": true`)
	if code != 200 {
		t.Fatalf("dry run: %d %v", code, body)
	}
	if v := victims(t, body); len(v) != 1 || v[0]["consumer_uuid"] != spots[3].uuid || v[0]["root_provider_uuid"] != cn2 ||
		v[0]["priority"] != 0.0 || v[0]["project_id"] != "p" {
		t.Fatalf("dry run's victims: %v", body["preempted"])
	}
	if b := show(spots[3].uuid); b["state"] != "permanent" {
		t.Fatalf("dry run displaced: %v", b)
	}

	// The claim displaces the newest of the lowest priority: s4.
	code, body = claim(hp1, `"resources": {"VCPU": 2}, "priority": 10`)
	if code != 200 || body["root_provider_uuid"] != cn2 {
		t.Fatalf("claim hp1: %d %v", code, body)
	}
	if v := victims(t, body); len(v) != 1 || v[0]["consumer_uuid"] != spots[3].uuid {
		t.Fatalf("hp1's victims: %v", body["preempted"])
	}
	b := show(spots[3].uuid)
	if b["state"] != "preempted" || b["preempted_by"] != hp1 || b["preempted_at"] == nil || b["root_provider_uuid"] != cn2 ||
		len(b["allocations"].(map[string]any)) != 0 {
		t.Fatalf("victim shown: %v", b)
	}
	if _, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+spots[3].uuid, "admin", ""); len(got["allocations"].(map[string]any)) != 0 {
		t.Fatalf("victim still holds %v", got)
	}
	if b := show(hp1); b["priority"] != 10.0 || b["preemptible"] != false {
		t.Fatalf("hp1 shown: %v", b)
	}

	// Four VCPU: cn2 holds hp1 (not preemptible), so cn1's two spots go.
	code, body = claim(hp2, `"resources": {"VCPU": 4}, "priority": 10`)
	if code != 200 || body["root_provider_uuid"] != cn1 {
		t.Fatalf("claim hp2: %d %v", code, body)
	}
	if v := victims(t, body); len(v) != 2 {
		t.Fatalf("hp2's victims: %v", body["preempted"])
	}
	// Nothing left to displace for a third: hp1 and hp2 are not
	// preemptible, s3 is not enough.
	if code, body := claim("c0000000-0000-4000-8000-000000000103", `"resources": {"VCPU": 4}, "priority": 100`); code != 409 {
		t.Fatalf("third claim: %d %v", code, body)
	}
	if b := show(hp1); b["state"] != "permanent" {
		t.Fatalf("hp1 after the third claim: %v", b)
	}

	// The feed, two at a time: s4, then s1 and s2 (in either order).
	if code, _ := apitest.Call(t, s, http.MethodGet, "/preemptions", "user", ""); code != 403 {
		t.Errorf("feed for a user: %d", code)
	}
	code, body = apitest.Call(t, s, http.MethodGet, "/preemptions?limit=2", "admin", "")
	page := body["preemptions"].([]any)
	if code != 200 || len(page) != 2 || body["next"] == nil {
		t.Fatalf("feed page 1: %d %v", code, body)
	}
	first := page[0].(map[string]any)
	if first["consumer_uuid"] != spots[3].uuid || first["preempted_by"] != hp1 || first["root_provider_uuid"] != cn2 ||
		first["priority"] != 0.0 || first["preemptor_priority"] != 10.0 || first["preempted_at"] == nil {
		t.Fatalf("feed's first: %v", first)
	}
	next := body["next"].(string)
	code, body = apitest.Call(t, s, http.MethodGet, next, "admin", "")
	if code != 200 || len(body["preemptions"].([]any)) != 1 || body["next"] != nil {
		t.Fatalf("feed page 2 (%s): %d %v", next, code, body)
	}
	seen := map[string]bool{}
	for _, p := range append(page[1:], body["preemptions"].([]any)...) {
		seen[p.(map[string]any)["consumer_uuid"].(string)] = true
	}
	if !seen[spots[0].uuid] || !seen[spots[1].uuid] {
		t.Fatalf("feed: %v", seen)
	}
	since := url.QueryEscape(first["preempted_at"].(string))
	if code, body := apitest.Call(t, s, http.MethodGet, "/preemptions?since="+since, "admin", ""); code != 200 || len(body["preemptions"].([]any)) != 3 {
		t.Fatalf("feed since the first: %d %v", code, body)
	}
	if code, body := apitest.Call(t, s, http.MethodGet, "/preemptions?since=2000-01-01T01:00:00+01:00", "admin", ""); code != 200 || len(body["preemptions"].([]any)) != 3 {
		t.Fatalf("feed since 2000, an offset unencoded: %d %v", code, body)
	}
	if code, body := apitest.Call(t, s, http.MethodGet, "/preemptions?since=2999-01-01T00:00:00Z", "admin", ""); code != 200 || len(body["preemptions"].([]any)) != 0 {
		t.Fatalf("feed since the future: %d %v", code, body)
	}
	// The console lists them.
	req := httptest.NewRequest(http.MethodGet, "/ui/preemptions", nil)
	req.Header.Set("X-Auth-Token", "admin")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if page := rec.Body.String(); rec.Code != 200 || !strings.Contains(page, spots[3].uuid) || !strings.Contains(page, spots[0].uuid) ||
		!strings.Contains(page, hp2) {
		t.Errorf("console: %d %s", rec.Code, page)
	}
	for _, q := range []string{"since=yesterday", "limit=0", "limit=x", "marker=-1", "color=red"} {
		if code, body := apitest.Call(t, s, http.MethodGet, "/preemptions?"+q, "admin", ""); code != 400 {
			t.Errorf("feed ?%s: %d %v", q, code, body)
		} else if _, detail := apitest.ErrorDetail(body); detail == "" {
			t.Errorf("feed ?%s: %d %v", q, code, body)
		}
	}
}

// victims is a claim answer's "preempted".
func victims(t *testing.T, body map[string]any) []map[string]any {
	t.Helper()
	list, _ := body["preempted"].([]any)
	out := make([]map[string]any, len(list))
	for i, v := range list {
		out[i] = v.(map[string]any)
	}
	return out
}

// stepsOf is a 409's steps.
func stepsOf(body map[string]any) []map[string]any {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return nil
	}
	list, _ := errs[0].(map[string]any)["steps"].([]any)
	out := make([]map[string]any, len(list))
	for i, st := range list {
		out[i] = st.(map[string]any)
	}
	return out
}
