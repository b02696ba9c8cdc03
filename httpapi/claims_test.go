package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/scheduler"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

func call(t *testing.T, s *Server, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Auth-Token", token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement latest")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: %d %q", method, path, rec.Code, rec.Body.String())
	}
	return rec.Code, out
}

func errorDetail(body map[string]any) (code, detail string) {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return "", ""
	}
	e := errs[0].(map[string]any)
	code, _ = e["code"].(string)
	detail, _ = e["detail"].(string)
	return code, detail
}

func TestClaimsAPI(t *testing.T) {
	ctx := context.Background()
	store := ledgertest.NewStore(t)
	var rps []string
	for _, name := range []string{"cn1", "cn2"} {
		p, err := store.ProviderCreate(ctx, ledger.ProviderCreateParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		gen := int64(0)
		if _, err := store.InventoriesReplace(ctx, ledger.InventoryParams{ProviderUUID: p.UUID, Generation: &gen},
			[]ledger.Inventory{ledger.DefaultInventory("VCPU", 8), ledger.DefaultInventory("MEMORY_MB", 4096)}); err != nil {
			t.Fatal(err)
		}
		rps = append(rps, p.UUID)
	}
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "max_usage_ratio", "params": {"max": 0.75}}], "weighers": [{"name": "pack"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := scheduler.NewPolicy(pc, nil, nil, scheduler.ScriptletLimits{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{SchedulerPolicy: policy}, store, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	const consumer = "11111111-2222-3333-4444-555555555555"
	claim := `{"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u", "consumer_type": "INSTANCE",
		"query": {"resources": "VCPU:4,MEMORY_MB:1024"}}`

	if code, _ := call(t, s, http.MethodPost, "/claims", "user", claim); code != http.StatusForbidden {
		t.Errorf("non-admin: %d", code)
	}
	code, body := call(t, s, http.MethodPost, "/claims", "admin", claim)
	if code != http.StatusOK {
		t.Fatalf("claim: %d %v", code, body)
	}
	root := body["root_provider_uuid"].(string)
	allocs := body["allocations"].(map[string]any)
	if _, ok := allocs[root]; !ok || len(body["attempts"].([]any)) != 1 || body["candidates_considered"].(float64) != 2 {
		t.Fatalf("claim body %v", body)
	}
	// The allocations are there, as GET /allocations shows them.
	code, got := call(t, s, http.MethodGet, "/allocations/"+consumer, "admin", "")
	if code != 200 || got["allocations"].(map[string]any)[root] == nil || got["consumer_type"] != "INSTANCE" {
		t.Fatalf("GET allocations: %d %v", code, got)
	}

	// Explain: the used provider now has 4 of 8 VCPU; another 4 would
	// exceed 0.75, so only the other provider ranks.
	code, ex := call(t, s, http.MethodPost, "/claims/explain", "admin", `{"query": {"resources": "VCPU:4"}}`)
	if code != 200 || ex["candidates_considered"].(float64) != 2 || ex["candidates_ranked"].(float64) != 1 {
		t.Fatalf("explain: %d %v", code, ex)
	}
	rej := ex["rejections"].([]any)[1].(map[string]any) // after capacity, always on
	if rej["unit"] != "max_usage_ratio" || rej["removed"].(float64) != 1 || rej["remaining"].(float64) != 1 {
		t.Fatalf("explain rejections %v", rej)
	}

	// Nothing fits: 409 with the reason and the counts.
	code, body = call(t, s, http.MethodPost, "/claims", "admin",
		`{"consumer_uuid": "`+rps[0]+`", "project_id": "p", "user_id": "u", "query": {"resources": "VCPU:7"}}`)
	ecode, detail := errorDetail(body)
	if code != http.StatusConflict || ecode != CodeClaimNotPlaced ||
		!strings.Contains(detail, "max_usage_ratio rejected") {
		t.Fatalf("not placed: %d %v", code, body)
	}

	// The same consumer as new again: a generation conflict.
	code, body = call(t, s, http.MethodPost, "/claims", "admin", claim)
	if ecode, _ := errorDetail(body); code != http.StatusConflict || ecode != ledger.CodeConcurrentUpdate {
		t.Fatalf("reclaim: %d %v", code, body)
	}

	// Reschedule moves it to the other provider.
	code, body = call(t, s, http.MethodPost, "/claims/reschedule", "admin", claim)
	if code != http.StatusOK || body["root_provider_uuid"] == root {
		t.Fatalf("reschedule: %d %v", code, body)
	}

	// Move it back: a migration consumer holds the current provider.
	const migration = "99999999-2222-3333-4444-555555555555"
	code, body = call(t, s, http.MethodPost, "/claims/move", "admin",
		`{"consumer_uuid": "`+consumer+`", "migration_uuid": "`+migration+`", "query": {"resources": "VCPU:4,MEMORY_MB:1024"}}`)
	if code != http.StatusOK || body["root_provider_uuid"] != root || body["held"].(map[string]any)[migration] == nil {
		t.Fatalf("move: %d %v", code, body)
	}
	if code, _ := call(t, s, http.MethodPost, "/claims/move", "admin",
		`{"consumer_uuid": "`+consumer+`", "query": {"resources": "VCPU:1"}}`); code != http.StatusBadRequest {
		t.Errorf("move without migration_uuid: %d", code)
	}

	// Bad requests: the query follows GET /allocation_candidates' rules.
	for _, tt := range []struct{ body, want string }{
		{`{"consumer_uuid": "x", "project_id": "p", "user_id": "u", "query": {"resources": "VCPU:1"}}`, "is not a 'uuid'"},
		{`{"project_id": "p", "user_id": "u", "query": {}}`, "'consumer_uuid' is a required property"},
		{`{"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u", "query": {"resources": "VCPU:x"}}`, "expected positive integer amount"},
		{`{"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u", "query": {"resources": "NOPE:1"}}`, "No such resource class NOPE"},
		{`{"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u", "query": {"bogus": "1"}}`, "Invalid query"},
		{`{"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u", "query": {"resources": "VCPU:1", "required": ["HW_CPU_X86_AVX", "!HW_CPU_X86_AVX"]}}`, "Conflicting required and forbidden traits"},
	} {
		code, body := call(t, s, http.MethodPost, "/claims", "admin", tt.body)
		if _, detail := errorDetail(body); code != http.StatusBadRequest || !strings.Contains(detail, tt.want) {
			t.Errorf("%s: %d %q, want 400 %q", tt.body, code, detail, tt.want)
		}
	}
}
