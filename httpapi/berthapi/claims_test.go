package berthapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/scheduler"
)

func TestClaimsAPI(t *testing.T) {
	store := ledgertest.NewStore(t)
	var rps []string
	for _, name := range []string{"cn1", "cn2"} {
		rps = append(rps, ledgertest.Provider(t, store, name,
			resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096)))
	}
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "max_usage_ratio", "params": {"max": 0.75}}], "weighers": [{"name": "pack"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := scheduler.NewPolicy(pc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := build(httpapi.Config{}, store, policy, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	const consumer = "11111111-2222-3333-4444-555555555555"
	claim := `{"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u", "consumer_type": "INSTANCE",
		"name": "web-1", "resources": {"VCPU": 4, "MEMORY_MB": 1024}, "alternates": 1}`

	if code, _ := apitest.Call(t, s, http.MethodPost, "/claims", "user", claim); code != http.StatusForbidden {
		t.Errorf("non-admin: %d", code)
	}
	// A dry run answers with the full ranking and writes nothing.
	dry := strings.Replace(claim, `"alternates": 1`, `"alternates": 1, "dry_run": true`, 1)
	code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", dry)
	if code != http.StatusOK || body["dry_run"] != true || len(body["ranking"].([]any)) != 2 ||
		body["attempts"].(float64) != 0 || body["scriptlet_log"] == nil {
		t.Fatalf("dry run: %d %v", code, body)
	}
	if w := body["ranking"].([]any)[0].(map[string]any)["weights"].(map[string]any); w["pack"] == nil {
		t.Fatalf("dry run weights: %v", w)
	}
	if code, _ := apitest.Call(t, s, http.MethodGet, "/allocations/"+consumer, "admin", ""); code != 200 {
		t.Fatalf("GET allocations after dry run: %d", code)
	} else if _, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+consumer, "admin", ""); len(got["allocations"].(map[string]any)) != 0 {
		t.Fatalf("dry run wrote %v", got)
	}

	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", claim)
	if code != http.StatusOK {
		t.Fatalf("claim: %d %v", code, body)
	}
	root := body["root_provider_uuid"].(string)
	allocs := body["allocations"].(map[string]any)
	if _, ok := allocs[root]; !ok || body["attempts"].(float64) != 1 || body["consumer_generation"].(float64) != 1 ||
		len(body["alternates"].([]any)) != 1 || body["dry_run"] != false || body["root_provider_name"] == "" {
		t.Fatalf("claim body %v", body)
	}
	steps := body["steps"].([]any)
	if st := steps[0].(map[string]any); st["unit"] != "allocation_candidates" || st["remaining"].(float64) != 2 {
		t.Fatalf("steps %v", steps)
	}
	// The allocations are there, as GET /allocations shows them.
	code, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+consumer, "admin", "")
	if code != 200 || got["allocations"].(map[string]any)[root] == nil || got["consumer_type"] != "INSTANCE" {
		t.Fatalf("GET allocations: %d %v", code, got)
	}

	// Nothing fits: 409 berth.no_valid_host with counts per step. The
	// used provider has 4 of 8 VCPU left; on the other, 7 would be above
	// 0.75 of its capacity; neither has 9.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin",
		`{"consumer_uuid": "`+rps[0]+`", "project_id": "p", "user_id": "u", "resources": {"VCPU": 7}}`)
	ecode, detail := apitest.ErrorDetail(body)
	if code != http.StatusConflict || ecode != fault.CodeNoValidHost ||
		!strings.Contains(detail, "2 providers; 1 lacked VCPU 7; 1 removed by max_usage_ratio (VCPU above 0.75 of capacity: 1)") {
		t.Fatalf("not placed: %d %v", code, body)
	}
	// The same counts as JSON, in the error object's "steps".
	var removed []string
	for _, st := range body["errors"].([]any)[0].(map[string]any)["steps"].([]any) {
		st := st.(map[string]any)
		if st["removed"].(float64) > 0 {
			removed = append(removed, fmt.Sprintf("%s:%v:%v", st["unit"], st["removed"], st["remaining"]))
		}
	}
	if strings.Join(removed, " ") != "allocation_candidates:1:1 max_usage_ratio:1:0" {
		t.Fatalf("steps of the 409: %v (from %v)", removed, body)
	}
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin",
		`{"consumer_uuid": "`+rps[0]+`", "project_id": "p", "user_id": "u", "resources": {"VCPU": 9}}`)
	if ecode, detail := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeNoValidHost ||
		!strings.HasSuffix(strings.TrimSpace(detail), " 2 providers; 2 lacked VCPU 9") {
		t.Fatalf("nothing fits: %d %v", code, body)
	}

	// The same request again (a retry after a lost answer): the
	// original answer, nothing written twice.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", claim)
	if code != http.StatusOK || body["root_provider_uuid"] != root || body["consumer_generation"].(float64) != 1 ||
		fmt.Sprint(body["allocations"]) != fmt.Sprint(allocs) {
		t.Fatalf("retried claim: %d %v", code, body)
	}
	// The same consumer, another request: a mismatch, saying what differs.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", strings.Replace(claim, `"web-1"`, `"web-2"`, 1))
	if ecode, detail := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeClaimMismatch ||
		!strings.Contains(detail, "differs in: name") {
		t.Fatalf("a different claim for the consumer: %d %v", code, body)
	}
	// The same consumer as new again, placed by PUT /allocations rather
	// than a claim: a generation conflict.
	const putConsumer = "22222222-3333-4444-5555-666666666666"
	if err := store.Allocations.AllocationsReplace(context.Background(), []resources.ConsumerAllocations{{ConsumerUUID: putConsumer,
		ProjectID: "p", UserID: "u", CheckGeneration: true, ConsumerType: "INSTANCE",
		Allocations: []engine.Allocation{{ProviderUUID: root, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}}); err != nil {
		t.Fatal(err)
	}
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", strings.Replace(claim, consumer, putConsumer, 1))
	if ecode, _ := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeConcurrentUpdate {
		t.Fatalf("reclaim: %d %v", code, body)
	}
	if err := store.Allocations.AllocationsDelete(context.Background(), putConsumer); err != nil {
		t.Fatal(err)
	}

	// Reschedule moves it to the other provider (its current one failed).
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/reschedule", "admin", `{}`)
	if code != http.StatusOK || body["root_provider_uuid"] == root || body["consumer_generation"].(float64) != 2 {
		t.Fatalf("reschedule: %d %v", code, body)
	}
	other := body["root_provider_uuid"].(string)
	// Failing there too leaves nowhere to go.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/reschedule", "admin", `{"failed_provider": "cn2"}`)
	if ecode, _ := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeNoValidHost {
		t.Fatalf("second reschedule: %d %v", code, body)
	}

	// Move it back: a migration consumer holds the current provider.
	const migration = "99999999-2222-3333-4444-555555555555"
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move", "admin",
		`{"migration_uuid": "`+migration+`", "reason": "evacuation"}`)
	if code != http.StatusOK || body["root_provider_uuid"] != root ||
		body["migration"].(map[string]any)["consumer_uuid"] != migration {
		t.Fatalf("move: %d %v", code, body)
	}
	// Revert without naming the migration: Berth remembers it.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move/revert", "admin", ``)
	if code != http.StatusOK || body["allocations"].(map[string]any)[other] == nil {
		t.Fatalf("revert: %d %v", code, body)
	}
	// Its retry is answered as done; a confirm of the reverted move is a
	// conflict saying so.
	if code, again := apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move/revert", "admin", ``); code != http.StatusOK ||
		again["consumer_generation"] != body["consumer_generation"] {
		t.Errorf("retried revert: %d %v, first %v", code, again, body)
	}
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move/confirm", "admin", `{}`); code != http.StatusConflict ||
		!strings.Contains(fmt.Sprint(body), "berth.move_ended") {
		t.Errorf("confirm after revert: %d %v", code, body)
	}
	if code, _ := apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move/confirm", "admin",
		`{"migration_uuid": "99999999-2222-3333-4444-000000000000"}`); code != http.StatusNotFound {
		t.Errorf("confirm of a migration never started: %d", code)
	}
	if code, _ := apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move", "admin", `{"reason": "relocation"}`); code != http.StatusBadRequest {
		t.Errorf("move without migration_uuid: %d", code)
	}

	// Bad requests: the selection fields follow GET /allocation_candidates' rules.
	own := `"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u"`
	for _, tt := range []struct{ body, want string }{
		{`{"consumer_uuid": "x", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}}`, "is not a 'uuid'"},
		{`{"project_id": "p", "user_id": "u", "resources": {"VCPU": 1}}`, "'consumer_uuid' is a required property"},
		{`{` + own + `, "resources": {"VCPU": 0}}`, "requires amount >= 1. Got: 0"},
		{`{` + own + `, "resources": {"NOPE": 1}}`, "No such resource class NOPE"},
		{`{` + own + `, "query": {"resources": "VCPU:1"}}`, "Additional properties are not allowed"},
		{`{` + own + `, "resources": {"VCPU": 1}, "required": ["HW_CPU_X86_AVX", "!HW_CPU_X86_AVX"]}`, "Conflicting required and forbidden traits"},
		{`{` + own + `, "resources": {"VCPU": 1}, "reason": "whim"}`, "is not one of"},
		{`{` + own + `, "resources": {"VCPU": 1}, "exclude_providers": ["nosuch"]}`, `"nosuch"`},
		{`{` + own + `, "resources": {"VCPU": 1}, "target": "nosuch"}`, `"nosuch"`},
		{`{` + own + `, "resources": {"VCPU": 1}, "max_attempts": 51}`, "51"},
		{`{` + own + `, "resources": {"VCPU": 1}, "policy": "nosuch"}`, "No scheduling policy named nosuch"},
		{`{` + own + `, "groups": {"1": {"resources": {"VCPU": 1}}, "2": {"resources": {"VCPU": 1}}}}`, `"group_policy" parameter is required`},
		{`{` + own + `}`, ""},
	} {
		code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", tt.body)
		if _, detail := apitest.ErrorDetail(body); code != http.StatusBadRequest || !strings.Contains(detail, tt.want) {
			t.Errorf("%s: %d %q, want 400 %q", tt.body, code, detail, tt.want)
		}
	}

	// target and exclude_providers by name.
	const c2 = "22222222-2222-3333-4444-555555555555"
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin",
		`{"consumer_uuid": "`+c2+`", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "target": "cn1", "dry_run": true}`)
	if code != http.StatusOK || body["root_provider_name"] != "cn1" {
		t.Fatalf("target: %d %v", code, body)
	}
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin",
		`{"consumer_uuid": "`+c2+`", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "exclude_providers": ["cn1"], "dry_run": true}`)
	if code != http.StatusOK || body["root_provider_name"] != "cn2" || len(body["ranking"].([]any)) != 1 {
		t.Fatalf("exclude: %d %v", code, body)
	}
}

// TestClaimsScriptlet: the default scriptlet (config key
// instances.placement.scriptlet) runs for POST /claims; a dry run shows
// its log, and its refusal is a 409 berth.no_valid_host that writes
// nothing.
func TestClaimsScriptlet(t *testing.T) {
	store := ledgertest.NewStore(t)
	ledgertest.Provider(t, store, "cn1", resources.DefaultInventory("VCPU", 8))
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	script := "def instance_placement(request, candidate_members):\n" +
		"    log_info(\"placing\", request.name, \"for\", request.reason)\n" +
		"    if request.name == \"foo\":\n" +
		"        return \"Invalid name\"\n"
	patch, _ := json.Marshal(map[string]any{"instances.placement.scriptlet": script})
	req := httptest.NewRequest(http.MethodPatch, "/config", strings.NewReader(string(patch)))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH /config: %d %s", rec.Code, rec.Body)
	}
	claim := func(name string, dry bool) (int, map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"consumer_uuid": "33333333-2222-3333-4444-555555555555",
			"project_id": "p", "user_id": "u", "name": name, "reason": "relocation",
			"resources": map[string]int{"VCPU": 1}, "dry_run": dry})
		// The change reaches the claimer's cache through a notification;
		// wait for it (bounded by the test's own timeout, not a clock).
		for {
			code, out := apitest.Call(t, s, http.MethodPost, "/claims", "admin", string(body))
			if lines, _ := out["scriptlet_log"].([]any); code != http.StatusOK || !dry || len(lines) > 0 {
				return code, out
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	code, body := claim("bar", true)
	lines, _ := body["scriptlet_log"].([]any)
	if code != http.StatusOK || len(lines) != 1 ||
		lines[0].(map[string]any)["message"] != "placing bar for relocation" || lines[0].(map[string]any)["level"] != "info" {
		t.Fatalf("dry run: %d %v", code, body)
	}
	code, body = claim("foo", false)
	if ecode, detail := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeNoValidHost ||
		!strings.HasSuffix(detail, "\n\n 1 provider; then Failed instance placement scriptlet: Invalid name  ") ||
		body["errors"].([]any)[0].(map[string]any)["refusal"] != "Invalid name" {
		t.Fatalf("refused: %d %v", code, body)
	}
	// What ran before the scriptlet is in the refusal's detail and steps:
	// here the candidate step left nothing for it (issue 27).
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", `{"consumer_uuid": "33333333-2222-3333-4444-555555555555",
		"project_id": "p", "user_id": "u", "name": "foo", "resources": {"VCPU": 9}}`)
	if ecode, detail := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeNoValidHost ||
		!strings.HasSuffix(detail, "\n\n 1 provider; 1 lacked VCPU 9; then Failed instance placement scriptlet: Invalid name  ") {
		t.Fatalf("refused after the candidate step: %d %v", code, body)
	}
	if steps, _ := body["errors"].([]any)[0].(map[string]any)["steps"].([]any); len(steps) == 0 ||
		steps[0].(map[string]any)["removed"] != 1.0 {
		t.Fatalf("refusal's steps: %v", body)
	}
	if _, got := apitest.Call(t, s, http.MethodGet, "/allocations/33333333-2222-3333-4444-555555555555", "admin", ""); len(got["allocations"].(map[string]any)) != 0 {
		t.Fatalf("refused claim wrote %v", got)
	}
}

// TestClaimConsumerTypeDefault: a claim that creates a consumer without a
// consumer_type makes it an INSTANCE (it was stored as "unknown"); a claim
// for an existing consumer without one keeps its type.
func TestClaimConsumerTypeDefault(t *testing.T) {
	store := ledgertest.NewStore(t)
	rp := ledgertest.Provider(t, store, "cn1", resources.DefaultInventory("VCPU", 8))
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	consumerType := func(consumer string) (string, float64) {
		_, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+consumer, "admin", "")
		gen, _ := got["consumer_generation"].(float64)
		return fmt.Sprint(got["consumer_type"]), gen
	}
	const fresh = "11111111-2222-3333-4444-000000000001"
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", `{"consumer_uuid": "`+fresh+`",
		"project_id": "p", "user_id": "u", "resources": {"VCPU": 1}}`); code != http.StatusOK {
		t.Fatalf("claim: %d %v", code, body)
	}
	if typ, _ := consumerType(fresh); typ != "INSTANCE" {
		t.Errorf("a new consumer claimed without a type: %q, want INSTANCE", typ)
	}

	const migration = "11111111-2222-3333-4444-000000000002"
	req := httptest.NewRequest(http.MethodPut, "/allocations/"+migration, strings.NewReader(`{"allocations": {"`+rp+
		`": {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u", "consumer_generation": null,
		"consumer_type": "MIGRATION"}`))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement latest")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("PUT allocations: %d %s", rec.Code, rec.Body)
	}
	_, gen := consumerType(migration)
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", fmt.Sprintf(`{"consumer_uuid": "%s",
		"project_id": "p", "user_id": "u", "consumer_generation": %d, "resources": {"VCPU": 2}}`, migration, int(gen))); code != http.StatusOK {
		t.Fatalf("claim for the existing consumer: %d %v", code, body)
	}
	if typ, _ := consumerType(migration); typ != "MIGRATION" {
		t.Errorf("an existing MIGRATION consumer claimed without a type: %q", typ)
	}
}
