package berthapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// callAs is call with X-Roles set to roles when not empty (noauth2: the
// token is user:project), for an answer with a body or without.
func callAs(t *testing.T, s *httpapi.Server, method, path, token, roles, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Auth-Token", token)
	if roles != "" {
		req.Header.Set("X-Roles", roles)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement latest")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var out map[string]any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: %d %q", method, path, rec.Code, rec.Body.String())
		}
	}
	return rec.Code, out
}

// newLimitsServer is a server over a store with one provider, with cfg.
func newLimitsServer(t *testing.T, cfg httpapi.Config) (*httpapi.Server, string) {
	t.Helper()
	store := ledgertest.NewStore(t)
	rp := ledgertest.Provider(t, store, "cn1", resources.DefaultInventory("VCPU", 64), resources.DefaultInventory("MEMORY_MB", 65536))
	s, err := build(cfg, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s, rp
}

func quotaClaim(consumer, project string, vcpu int, extra string) string {
	b, _ := json.Marshal(map[string]any{"consumer_uuid": consumer, "project_id": project, "user_id": "u",
		"resources": map[string]int{"VCPU": vcpu, "MEMORY_MB": 512}})
	if extra != "" {
		return strings.TrimSuffix(string(b), "}") + "," + extra + "}"
	}
	return string(b)
}

// TestLimitsAPI sets a project's limits and the registered ones, reads
// them with the project's usage, and checks that claims stop at the
// limit with 403 berth.over_quota, that a dry run says so, and that
// deleting the limits lifts them.
func TestLimitsAPI(t *testing.T) {
	s, _ := newLimitsServer(t, httpapi.Config{})
	code, body := apitest.Call(t, s, http.MethodPut, "/limits/demo", "admin", `{"limits": {"VCPU": 8, "consumers": 5}}`)
	if code != http.StatusOK {
		t.Fatalf("PUT /limits/demo: %d %v", code, body)
	}
	if code, body = apitest.Call(t, s, http.MethodPut, "/registered_limits", "admin", `{"limits": {"MEMORY_MB": 1024, "VCPU": 100}}`); code != http.StatusOK {
		t.Fatalf("PUT /registered_limits: %d %v", code, body)
	}
	for i, consumer := range []string{"11111111-0000-0000-0000-000000000001", "11111111-0000-0000-0000-000000000002"} {
		if code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", quotaClaim(consumer, "demo", 4, "")); code != http.StatusOK {
			t.Fatalf("claim %d: %d %v", i, code, body)
		}
	}
	third := quotaClaim("11111111-0000-0000-0000-000000000003", "demo", 4, "")
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", third)
	if c, d := apitest.ErrorDetail(body); code != http.StatusForbidden || c != fault.CodeOverQuota ||
		!strings.Contains(d, "Quota exceeded: project demo: MEMORY_MB 512 requested, 1024 of 1024 used, VCPU 4 requested, 8 of 8 used.") {
		t.Fatalf("a claim over the limit: %d %s %q", code, c, d)
	}
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", quotaClaim("11111111-0000-0000-0000-000000000003", "demo", 4, `"dry_run": true`))
	want := map[string]any{"fits": false, "project_id": "demo", "resources": map[string]any{
		"VCPU":      map[string]any{"limit": 8.0, "requested": 4.0, "used": 8.0},
		"MEMORY_MB": map[string]any{"limit": 1024.0, "requested": 512.0, "used": 1024.0},
		"consumers": map[string]any{"limit": 5.0, "requested": 1.0, "used": 2.0},
	}}
	if code != http.StatusOK || !reflect.DeepEqual(body["quota"], want) {
		t.Fatalf("dry run: %d quota %v, want %v", code, body["quota"], want)
	}
	code, body = apitest.Call(t, s, http.MethodGet, "/limits/demo", "admin", "")
	wantShow := map[string]any{"project_id": "demo", "resources": map[string]any{
		"VCPU":      map[string]any{"limit": 8.0, "used": 8.0, "remaining": 0.0, "default": false},
		"MEMORY_MB": map[string]any{"limit": 1024.0, "used": 1024.0, "remaining": 0.0, "default": true},
		"consumers": map[string]any{"limit": 5.0, "used": 2.0, "remaining": 3.0, "default": false},
	}}
	if code != http.StatusOK || !reflect.DeepEqual(body, wantShow) {
		t.Fatalf("GET /limits/demo: %d %v, want %v", code, body, wantShow)
	}
	code, body = apitest.Call(t, s, http.MethodGet, "/limits", "admin", "")
	if code != http.StatusOK || !reflect.DeepEqual(body, map[string]any{"projects": map[string]any{
		"demo": map[string]any{"VCPU": 8.0, "consumers": 5.0}}}) {
		t.Fatalf("GET /limits: %d %v", code, body)
	}
	if code, body = callAs(t, s, http.MethodDelete, "/limits/demo", "admin", "", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE /limits/demo: %d %v", code, body)
	}
	if code, body = callAs(t, s, http.MethodDelete, "/limits/demo", "admin", "", ""); code != http.StatusNotFound {
		t.Fatalf("DELETE /limits/demo again: %d %v", code, body)
	}
	// The registered limits apply now: 1024 MEMORY_MB, all held.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", third)
	if c, d := apitest.ErrorDetail(body); code != http.StatusForbidden || !strings.Contains(d, "MEMORY_MB 512 requested, 1024 of 1024 used") {
		t.Fatalf("a claim over the registered limit: %d %s %q", code, c, d)
	}
	if code, body = apitest.Call(t, s, http.MethodPut, "/registered_limits", "admin", `{"limits": {}}`); code != http.StatusOK {
		t.Fatalf("PUT /registered_limits {}: %d %v", code, body)
	}
	if code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", third); code != http.StatusOK {
		t.Fatalf("a claim without limits: %d %v", code, body)
	}
}

// TestLimitsBadInput: a negative or fractional limit, a string, an
// unknown resource class, a project id that cannot be one, a body of the
// wrong shape: each 400 in Placement's error format, nothing changed.
func TestLimitsBadInput(t *testing.T) {
	s, _ := newLimitsServer(t, httpapi.Config{})
	if code, body := apitest.Call(t, s, http.MethodPut, "/limits/demo", "admin", `{"limits": {"VCPU": 8}}`); code != http.StatusOK {
		t.Fatalf("PUT: %d %v", code, body)
	}
	_, before := apitest.Call(t, s, http.MethodGet, "/limits/demo", "admin", "")
	for _, tc := range []struct{ path, body, want string }{
		{"/limits/demo", `{"limits": {"VCPU": -1}}`, "JSON does not validate"},
		{"/limits/demo", `{"limits": {"VCPU": 1.5}}`, "JSON does not validate"},
		{"/limits/demo", `{"limits": {"VCPU": "40"}}`, "JSON does not validate"},
		{"/limits/demo", `{"limits": {"VCPU": 4, "CUSTOM_NOPE": 1}}`, "Unknown resource CUSTOM_NOPE in limits"},
		{"/limits/demo", `{"limits": {"servers": 1}}`, "Unknown resource servers in limits"},
		{"/limits/demo", `{"VCPU": 4}`, "JSON does not validate"},
		{"/limits/demo", `{"limits": {"VCPU": 4}, "more": 1}`, "JSON does not validate"},
		{"/limits/demo", `not json`, "Malformed JSON"},
		{"/limits/a%20b", `{"limits": {"VCPU": 4}}`, "Invalid project_id"},
		{"/limits/" + strings.Repeat("x", 256), `{"limits": {"VCPU": 4}}`, "Invalid project_id"},
		{"/registered_limits", `{"limits": {"VCPU": -5}}`, "JSON does not validate"},
		{"/registered_limits", `{"limits": {"CUSTOM_NOPE": 5}}`, "Unknown resource CUSTOM_NOPE in limits"},
	} {
		code, body := apitest.Call(t, s, http.MethodPut, tc.path, "admin", tc.body)
		if _, d := apitest.ErrorDetail(body); code != http.StatusBadRequest || !strings.Contains(d, tc.want) {
			t.Errorf("PUT %s %s: %d %q, want 400 %q", tc.path, tc.body, code, d, tc.want)
		}
	}
	if code, body := apitest.Call(t, s, http.MethodGet, "/limits/a%20b", "admin", ""); code != http.StatusBadRequest {
		t.Errorf("GET of an invalid project id: %d %v", code, body)
	}
	if _, after := apitest.Call(t, s, http.MethodGet, "/limits/demo", "admin", ""); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused writes changed the limits: %v -> %v", before, after)
	}
	if _, reg := apitest.Call(t, s, http.MethodGet, "/registered_limits", "admin", ""); !reflect.DeepEqual(reg, map[string]any{"limits": map[string]any{}}) {
		t.Fatalf("refused writes changed the registered limits: %v", reg)
	}
}

// TestLimitsPolicy: under the secure rule set a project's reader sees
// its own limits and nobody else's, nor every project's; only an admin
// changes them.
func TestLimitsPolicy(t *testing.T) {
	secure, err := authz.New(authz.SetSecure, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := newLimitsServer(t, httpapi.Config{Authz: secure})
	if code, body := callAs(t, s, http.MethodPut, "/limits/demo", "admin:admin", "admin", `{"limits": {"VCPU": 8}}`); code != http.StatusOK {
		t.Fatalf("admin PUT: %d %v", code, body)
	}
	for _, tc := range []struct {
		method, path, token, roles string
		want                       int
	}{
		{http.MethodGet, "/limits/demo", "alice:demo", "reader", http.StatusOK},
		{http.MethodGet, "/limits/other", "alice:demo", "reader", http.StatusForbidden},
		{http.MethodGet, "/limits", "alice:demo", "reader", http.StatusForbidden},
		{http.MethodGet, "/registered_limits", "alice:demo", "reader", http.StatusForbidden},
		{http.MethodPut, "/limits/demo", "alice:demo", "member,reader", http.StatusForbidden},
		{http.MethodDelete, "/limits/demo", "alice:demo", "member,reader", http.StatusForbidden},
		{http.MethodGet, "/limits", "nova:service", "service", http.StatusOK},
		{http.MethodPut, "/registered_limits", "nova:service", "service", http.StatusForbidden},
	} {
		if code, body := callAs(t, s, tc.method, tc.path, tc.token, tc.roles, `{"limits": {}}`); code != tc.want {
			t.Errorf("%s %s as %s (%s): %d %v, want %d", tc.method, tc.path, tc.token, tc.roles, code, body, tc.want)
		}
	}
}

// TestLimitsPlacementAPI: the Placement API's writes are checked only
// with LimitsEnforcePlacementAPI.
func TestLimitsPlacementAPI(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		s, rp := newLimitsServer(t, httpapi.Config{LimitsEnforcePlacementAPI: enforce})
		if code, body := apitest.Call(t, s, http.MethodPut, "/limits/demo", "admin", `{"limits": {"VCPU": 4}}`); code != http.StatusOK {
			t.Fatalf("PUT: %d %v", code, body)
		}
		put := `{"allocations": {"` + rp + `": {"resources": {"VCPU": 6}}}, "project_id": "demo", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`
		code, body := callAs(t, s, http.MethodPut, "/allocations/22222222-0000-0000-0000-000000000001", "admin", "", put)
		switch c, d := apitest.ErrorDetail(body); {
		case !enforce && code != http.StatusNoContent:
			t.Errorf("unchecked PUT /allocations: %d %v", code, body)
		case enforce && (code != http.StatusForbidden || c != fault.CodeOverQuota || !strings.Contains(d, "VCPU 6 requested, 0 of 4 used")):
			t.Errorf("checked PUT /allocations: %d %s %q", code, c, d)
		}
	}
}
