package berthapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

func TestAuditAPI(t *testing.T) {
	ctx := context.Background()
	dbURL := ledgertest.NewDB(t)
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 8, AcquireTimeout: ledgertest.AcquireTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	cn1 := ledgertest.Provider(t, store, "cn1", resources.DefaultInventory("VCPU", 8))
	cn2 := ledgertest.Provider(t, store, "cn2", resources.DefaultInventory("VCPU", 8))
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	const (
		split = "5b000000-0000-4000-8000-000000000001"
		mig   = "5b000000-0000-4000-8000-000000000002"
		empty = "5b000000-0000-4000-8000-000000000003"
	)
	// A consumer on both roots, a migration written through the Placement
	// API, a consumer row without allocations.
	for _, w := range []struct{ consumer, body string }{
		{split, `{"allocations": {"` + cn1 + `": {"resources": {"VCPU": 1}}, "` + cn2 + `": {"resources": {"VCPU": 2}}},
			"project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`},
		{mig, `{"allocations": {"` + cn2 + `": {"resources": {"VCPU": 1}}},
			"project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "MIGRATION"}`},
	} {
		req := httptest.NewRequest(http.MethodPut, "/allocations/"+w.consumer, strings.NewReader(w.body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement latest")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			t.Fatalf("PUT /allocations/%s: %d %s", w.consumer, rec.Code, rec.Body)
		}
	}
	ledgertest.Exec(t, dbURL, `INSERT INTO consumers (uuid, project_id, user_id) SELECT $1, project_id, user_id FROM consumers LIMIT 1`, empty)
	get := func(token, query string) (int, string) {
		t.Helper()
		code, body := apitest.Call(t, s, http.MethodGet, "/audit"+query, token, "")
		b, _ := json.Marshal(body)
		return code, string(b)
	}

	if code, _ := get("user", ""); code != http.StatusForbidden {
		t.Errorf("non-admin: %d", code)
	}
	code, body := get("admin", "?kind=split_consumer")
	want := `{"findings":[{"age_seconds":AGE,"consumer":{"consumer_type":"INSTANCE","generation":1,"project_id":"p","user_id":"u","uuid":"` + split + `"},` +
		`"detail":"Consumer ` + split + ` holds allocations on 2 root providers (NAMES) and is not part of a move.",` +
		`"fix":{"action":"report_only","detail":"Which root provider the consumer runs on is not recorded: once known, rewrite its allocations without the others (PUT /allocations/{consumer_uuid})."},` +
		`"kind":"split_consumer","provider":null,"providers":[PROVIDERS],"since":"SINCE"}],` +
		`"next_marker":null,"thresholds":{"migration_age":"24h0m0s","state_age":"1h0m0s"}}`
	// Providers and roots come in uuid order.
	providers := []string{`{"name":"cn1","resources":{"VCPU":1},"root_provider_uuid":"` + cn1 + `","uuid":"` + cn1 + `"}`,
		`{"name":"cn2","resources":{"VCPU":2},"root_provider_uuid":"` + cn2 + `","uuid":"` + cn2 + `"}`}
	names := "cn1, cn2"
	if cn2 < cn1 {
		providers[0], providers[1], names = providers[1], providers[0], "cn2, cn1"
	}
	want = strings.Replace(want, "PROVIDERS", strings.Join(providers, ","), 1)
	want = strings.Replace(want, "NAMES", names, 1)
	// Since and age are the clock's.
	want = strings.Replace(want, "SINCE", between(body, `"since":"`, `"`), 1)
	want = strings.Replace(want, "AGE", between(body, `"age_seconds":`, `,`), 1)
	if code != http.StatusOK || want != body {
		t.Errorf("split: %d\n got %s\nwant %s", code, body, want)
	}

	// Every kind, one finding a page, with thresholds that make the
	// migration stale.
	var kinds []string
	query := "?limit=1&migration_age=0s"
	for pages := 0; pages < 10; pages++ {
		code, body := apitest.Call(t, s, http.MethodGet, "/audit"+query, "admin", "")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", query, code, body)
		}
		for _, f := range body["findings"].([]any) {
			kinds = append(kinds, f.(map[string]any)["kind"].(string))
		}
		next, _ := body["next_marker"].(string)
		if next == "" {
			break
		}
		query = "?limit=1&migration_age=0s&marker=" + next
	}
	if got := strings.Join(kinds, " "); got != "split_consumer stale_migration empty_consumer" {
		t.Errorf("paged kinds: %s", got)
	}

	fp := ledgertest.NewFingerprinter(t, dbURL)
	before := fp.MustTake(t)
	for _, tc := range []struct{ query, code, detail string }{
		{"?kind=orphans", "berth.audit.unknown_kind", `Unknown audit kind "orphans"`},
		{"?kind=split_consumer,nope", "berth.audit.unknown_kind", `Unknown audit kind "nope"`},
		{"?limit=0", "berth.audit.invalid", `Invalid limit "0"`},
		{"?limit=1001", "berth.audit.invalid", `Invalid limit "1001"`},
		{"?limit=x", "berth.audit.invalid", `Invalid limit "x"`},
		{"?marker=bogus", "berth.audit.invalid", `Invalid marker "bogus"`},
		{"?migration_age=-1h", "berth.audit.invalid", `Invalid migration_age "-1h"`},
		{"?state_age=soon", "berth.audit.invalid", `Invalid state_age "soon"`},
		{"?bogus=1", "berth.audit.invalid", "Additional properties are not allowed"},
	} {
		code, body := apitest.Call(t, s, http.MethodGet, "/audit"+tc.query, "admin", "")
		gotCode, detail := apitest.ErrorDetail(body)
		if code != http.StatusBadRequest || gotCode != tc.code || !strings.Contains(detail, tc.detail) {
			t.Errorf("%s: %d %s %q", tc.query, code, gotCode, detail)
		}
	}
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"kind": "split_consumer", "consumer_uuid": "` + split + `", "consumer_generation": 1}`, 400, "berth.audit.not_fixable"},
		{`{"kind": "nope", "consumer_uuid": "` + split + `", "consumer_generation": 1}`, 400, "berth.audit.unknown_kind"},
		{`{"kind": "empty_consumer", "consumer_uuid": "` + split + `"}`, 400, "berth.audit.invalid"},
		{`{"kind": "empty_consumer", "consumer_uuid": "x", "consumer_generation": 0}`, 400, "berth.audit.invalid"},
		{`{"kind": "empty_consumer", "consumer_uuid": "` + empty + `", "consumer_generation": 0, "state_age": "-1s"}`, 400, "berth.audit.invalid"},
		{`{"kind": "empty_consumer", "consumer_uuid": "` + empty + `", "consumer_generation": 0, "extra": 1}`, 400, "berth.audit.invalid"},
		{`{"kind": "empty_consumer", "consumer_uuid": "` + split + `", "consumer_generation": 1}`, 409, "berth.audit.finding_gone"},
		{`{"kind": "stale_migration", "consumer_uuid": "` + mig + `", "consumer_generation": 1, "migration_age": "0s"}`, 409, "berth.audit.not_fixable"},
		{`{"kind": "stale_migration", "consumer_uuid": "` + mig + `", "consumer_generation": 5, "migration_age": "0s"}`, 409, "placement.concurrent_update"},
		{`{"kind": "stale_migration", "consumer_uuid": "` + mig + `", "consumer_generation": 1}`, 409, "berth.audit.finding_gone"},
		{`{"kind": "empty_consumer", "consumer_uuid": "` + empty + `", "consumer_generation": 3}`, 409, "placement.concurrent_update"},
	} {
		code, body := apitest.Call(t, s, http.MethodPost, "/audit/fix", "admin", tc.body)
		if gotCode, detail := apitest.ErrorDetail(body); code != tc.status || gotCode != tc.code {
			t.Errorf("%s: %d %s %q", tc.body, code, gotCode, detail)
		}
	}
	if diff := before.Diff(fp.MustTake(t)); len(diff) > 0 {
		t.Errorf("refused requests changed the database: %v", diff)
	}

	if code, _ := apitest.Call(t, s, http.MethodPost, "/audit/fix", "user", `{}`); code != http.StatusForbidden {
		t.Errorf("non-admin fix: %d", code)
	}
	code, out := apitest.Call(t, s, http.MethodPost, "/audit/fix", "admin",
		`{"kind": "empty_consumer", "consumer_uuid": "`+empty+`", "consumer_generation": 0}`)
	if fixed, _ := out["fixed"].(map[string]any); code != http.StatusOK || fixed["kind"] != "empty_consumer" ||
		fixed["fix"].(map[string]any)["action"] != "delete_consumer" {
		t.Errorf("fix: %d %v", code, out)
	}
	if code, body := get("admin", "?kind=empty_consumer"); code != http.StatusOK || !strings.HasPrefix(body, `{"findings":[],"next_marker":null`) {
		t.Errorf("after the fix: %d %s", code, body)
	}
}

// between is the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}

// TestQueryBadPercentEscapes: a query parameter with a bad
// percent-escape is read as webob reads it (the escape kept as it is),
// not dropped: GET /audit and Berth's other GET routes with query
// parameters refuse such a value with 400 in Placement's format, as they
// refuse any other bad value, and never answer their defaults.
func TestQueryBadPercentEscapes(t *testing.T) {
	s, _ := newSchedulingServer(t)
	wantStatus(t, s, apiCall{method: "PUT", path: "/scheduling_policies/even", body: `{"balancer": {"mode": "even"}}`}, 201, "")
	for _, tc := range []struct{ path, want string }{
		{"/audit?kind=%zz", "%zz"},
		{"/audit?limit=%zz", "%zz"},
		{"/audit?migration_age=%zz", "%zz"},
		{"/audit?state_age=1h%zz", "1h%zz"},
		{"/audit?marker=%%%zz", "%%%zz"},
		{"/capacity?resources=VCPU:1%zz", "%zz"},
		{"/capacity?resources=VCPU:1&limit=%zz", "%zz"},
		{"/scheduling_policies/even/balance?aggregate=%zz", "%zz"},
		{"/resource_providers?member_of=%zz", "%zz"},
		{"/allocation_candidates?resources=VCPU:1%zz", "%zz"},
	} {
		code, body := apitest.Call(t, s, http.MethodGet, tc.path, "admin", "")
		_, detail := apitest.ErrorDetail(body)
		if code != http.StatusBadRequest || !strings.Contains(detail, tc.want) {
			t.Errorf("GET %s: %d %v, want 400 naming %q", tc.path, code, body, tc.want)
		}
	}
	// A name is matched as given: Placement answers no provider.
	code, body := apitest.Call(t, s, http.MethodGet, "/resource_providers?name=%zz", "admin", "")
	if code != http.StatusOK || len(body["resource_providers"].([]any)) != 0 {
		t.Errorf("GET /resource_providers?name=%%zz: %d %v", code, body)
	}
}
