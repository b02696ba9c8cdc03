package berthapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// apiCall is one request to s for the scheduling API tests.
type apiCall struct {
	method, path, body string
	// token is the noauth2 token (default "admin"); roles, when set, the
	// X-Roles header; contentType defaults to application/json.
	token, roles, contentType string
}

// do sends r and returns the status, the raw body and the body decoded as
// JSON (nil when it is not JSON).
func do(t *testing.T, s http.Handler, r apiCall) (int, string, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	if r.token == "" {
		r.token = "admin"
	}
	req.Header.Set("X-Auth-Token", r.token)
	if r.roles != "" {
		req.Header.Set("X-Roles", r.roles)
	}
	if r.contentType == "" {
		r.contentType = "application/json"
	}
	if r.body != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("OpenStack-API-Version", "placement latest")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, rec.Body.String(), out
}

// wantStatus checks a response's status and, for an error, that its
// detail holds substr.
func wantStatus(t *testing.T, s http.Handler, r apiCall, status int, substr string) map[string]any {
	t.Helper()
	code, raw, body := do(t, s, r)
	if code != status || !strings.Contains(raw, substr) {
		t.Fatalf("%s %s: %d %s\nwant %d with %q", r.method, r.path, code, raw, status, substr)
	}
	return body
}

func newSchedulingServer(t *testing.T) (*httpapi.Server, *ledger.Store) {
	t.Helper()
	store := ledgertest.NewStore(t)
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

func mustProvider(t *testing.T, store *ledger.Store, name string) string {
	t.Helper()
	p, err := store.Providers.ProviderCreate(context.Background(), resources.ProviderCreateParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return p.UUID
}

func TestProviderStateAPI(t *testing.T) {
	s, store := newSchedulingServer(t)
	rp := mustProvider(t, store, "cn1")
	path := "/resource_providers/" + rp + "/state"

	wantStatus(t, s, apiCall{method: "GET", path: path}, 404, "has not reported")
	body := `{"load_1": 1.5, "load_5": 1, "load_15": 0.5, "memory_free_mb": 2048, "cpu_utilization": 0.4, "reported_at": "2026-01-02T03:04:05Z"}`
	// The service role may report, under the default (admin) policy set;
	// a plain user may not.
	wantStatus(t, s, apiCall{method: "PUT", path: path, body: body, token: "agent", roles: "service"}, 200, `"reported_at":"2026-01-02T03:04:05Z"`)
	wantStatus(t, s, apiCall{method: "PUT", path: path, body: body, token: "user"}, 403, "berth:resource_providers:state:update")
	got := wantStatus(t, s, apiCall{method: "GET", path: path}, 200, "")
	if got["memory_free_mb"] != 2048.0 || got["load_1"] != 1.5 {
		t.Errorf("state %v", got)
	}

	for _, tc := range []struct{ body, detail string }{
		{`{"load_1": 1}`, "JSON does not validate"},
		{`{"load_1": -1, "load_5": 1, "load_15": 1, "memory_free_mb": 1, "cpu_utilization": 0.1}`, "JSON does not validate"},
		{`{"load_1": 1, "load_5": 1, "load_15": 1, "memory_free_mb": 1, "cpu_utilization": 2}`, "JSON does not validate"},
		{`{"load_1": 1, "load_5": 1, "load_15": 1, "memory_free_mb": 1, "cpu_utilization": 0.1, "reported_at": "yesterday"}`, "not an RFC 3339 time"},
		{`{"load_1": 1, "load_5": 1, "load_15": 1, "memory_free_mb": 1, "cpu_utilization": 0.1, "reported_at": "2999-01-01T00:00:00Z"}`, "in the future"},
		{`{"load_1": 1, "load_5": 1, "load_15": 1, "memory_free_mb": 1, "cpu_utilization": 0.1, "extra": 1}`, "JSON does not validate"},
	} {
		wantStatus(t, s, apiCall{method: "PUT", path: path, body: tc.body}, 400, tc.detail)
	}
	// Unchanged by the refused writes.
	if got := wantStatus(t, s, apiCall{method: "GET", path: path}, 200, ""); got["load_1"] != 1.5 {
		t.Errorf("state after refused writes %v", got)
	}
	wantStatus(t, s, apiCall{method: "PUT", path: "/resource_providers/aaaaaaaa-0000-4000-8000-00000000000f/state", body: body}, 404, "No resource provider")

	// The rest of LXD's member state, optional.
	lxd := `{"load_1": 1, "load_5": 1, "load_15": 1, "memory_free_mb": 1, "cpu_utilization": 0.1,
		"sysinfo": {"uptime": 60, "total_ram": 8589934592, "logical_cpus": 8},
		"storage_pools": {"default": {"space": {"used": 1, "total": 10}, "inodes": {"used": 2, "total": 20}}}}`
	wantStatus(t, s, apiCall{method: "PUT", path: path, body: lxd}, 200, `"total_ram":8589934592`)
	got = wantStatus(t, s, apiCall{method: "GET", path: path}, 200, `"storage_pools":{"default":{"space":{"used":1,"total":10},"inodes":{"used":2,"total":20}}}`)
	if si := got["sysinfo"].(map[string]any); si["uptime"] != 60.0 || si["free_swap"] != 0.0 {
		t.Errorf("sysinfo %v", si)
	}
	for _, bad := range []string{`"sysinfo": {"free_ram": 1}`, `"sysinfo": {"uptime": -1}`, `"sysinfo": []`,
		`"storage_pools": {"p": {"space": {"used": "1"}}}`, `"storage_pools": {"p": {"volumes": {}}}`} {
		wantStatus(t, s, apiCall{method: "PUT", path: path, body: `{"load_1": 9, "load_5": 1, "load_15": 1, "memory_free_mb": 1, "cpu_utilization": 0.1, ` + bad + `}`},
			400, "JSON does not validate")
	}
	if got := wantStatus(t, s, apiCall{method: "GET", path: path}, 200, ""); got["load_1"] != 1.0 {
		t.Errorf("state after refused LXD writes %v", got)
	}
}

func TestPlacementKeysAPI(t *testing.T) {
	s, store := newSchedulingServer(t)
	rp := mustProvider(t, store, "cn1")
	path := "/resource_providers/" + rp + "/placement_keys"

	wantStatus(t, s, apiCall{method: "GET", path: path}, 200, `{"placement_keys":[]}`)
	withReserved := `{"placement_keys": [{"name": "_tier", "value": 1}, {"name": "rack", "value": 0.25, "sticky": true}]}`
	// Under the secure set the service role may set keys but not reserved ones.
	secure := secureServer(t, store)
	wantStatus(t, secure, apiCall{method: "PUT", path: path, body: withReserved, token: "agent", roles: "service"}, 403, "_tier is reserved")
	wantStatus(t, secure, apiCall{method: "PUT", path: path, body: `{"placement_keys": [{"name": "rack", "value": 0.5}]}`, token: "agent", roles: "service"}, 200, `"rack"`)
	wantStatus(t, s, apiCall{method: "PUT", path: path, body: withReserved}, 200,
		`{"placement_keys":[{"name":"_tier","value":1,"sticky":false},{"name":"rack","value":0.25,"sticky":true}]}`)
	// The service role may change unreserved keys while keeping the reserved ones.
	wantStatus(t, secure, apiCall{method: "PUT", path: path, body: `{"placement_keys": [{"name": "_tier", "value": 1}, {"name": "rack", "value": 0.75}]}`,
		token: "agent", roles: "service"}, 200, `"value":0.75`)
	wantStatus(t, secure, apiCall{method: "PUT", path: path, body: `{"placement_keys": [{"name": "rack", "value": 0.75}]}`,
		token: "agent", roles: "service"}, 403, "_tier is reserved")

	for _, tc := range []struct{ body, detail string }{
		{`{"placement_keys": [{"name": "a", "value": 1}, {"name": "a", "value": 2}]}`, "given twice"},
		{`{"placement_keys": [{"name": "", "value": 1}]}`, "JSON does not validate"},
		{`{"placement_keys": [{"name": "a", "value": "high"}]}`, "JSON does not validate"},
		{`{"keys": []}`, "JSON does not validate"},
	} {
		wantStatus(t, s, apiCall{method: "PUT", path: path, body: tc.body}, 400, tc.detail)
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/resource_providers/aaaaaaaa-0000-4000-8000-00000000000f/placement_keys"}, 404, "No resource provider")
}

// secureServer is an API server over store with Placement's secure policy set.
func secureServer(t *testing.T, store *ledger.Store) *httpapi.Server {
	t.Helper()
	e, err := authz.New(authz.SetSecure, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := build(httpapi.Config{Authz: e}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// errorCode returns the code of an error body.
func errorCode(body map[string]any) string {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	code, _ := errs[0].(map[string]any)["code"].(string)
	return code
}
