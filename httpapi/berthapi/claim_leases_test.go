package berthapi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// leaseCloud is four compute nodes, the first two with AVX2, as the
// demo cloud (berth demo) has them: the README's sequence.
func leaseCloud(t *testing.T) (*httpapi.Server, []string) {
	t.Helper()
	store := ledgertest.NewStore(t)
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var rps []string
	for i := 1; i <= 4; i++ {
		rp := ledgertest.Provider(t, store, fmt.Sprintf("compute-%d", i),
			resources.DefaultInventory("VCPU", 16), resources.DefaultInventory("MEMORY_MB", 32768))
		rps = append(rps, rp)
		if i <= 2 {
			_, prov := apitest.Call(t, s, http.MethodGet, "/resource_providers/"+rp, "admin", "")
			if code, body := apitest.Call(t, s, http.MethodPut, "/resource_providers/"+rp+"/traits", "admin", fmt.Sprintf(
				`{"resource_provider_generation": %v, "traits": ["HW_CPU_X86_AVX2"]}`, prov["generation"])); code != 200 {
				t.Fatalf("traits: %d %v", code, body)
			}
		}
	}
	return s, rps
}

// reusedOf is the "reused" member of a reschedule's or move's answer.
func reusedOf(t *testing.T, body map[string]any) (from string, fields []string) {
	t.Helper()
	r, ok := body["reused"].(map[string]any)
	if !ok {
		t.Fatalf("no reused in %v", body)
	}
	for _, f := range r["fields"].([]any) {
		fields = append(fields, f.(string))
	}
	return r["from"].(string), fields
}

// TestRescheduleRedoesTheClaim is issue 27's first point, the README's
// own sequence: a claim that requires AVX2 lands on compute-2; its
// reschedule away from compute-2 must require AVX2 again (and keep
// avoiding what the claim excluded), not fall back to the resources
// alone and land on a node without AVX2. The answer says what it reused;
// a body field overrides the stored one; a move redoes the request too;
// a consumer written through the Placement API keeps today's defaults.
func TestRescheduleRedoesTheClaim(t *testing.T) {
	s, rps := leaseCloud(t)
	const consumer = "c0000000-0000-4000-8000-000000000001"
	code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", `{"consumer_uuid": "`+consumer+`",
		"project_id": "demo", "user_id": "alice", "name": "web-1", "resources": {"VCPU": 2, "MEMORY_MB": 8192},
		"required": ["HW_CPU_X86_AVX2"], "properties": {"group": "web"}, "exclude_providers": ["compute-1"]}`)
	if code != 200 || body["root_provider_name"] != "compute-2" {
		t.Fatalf("claim: %d %v", code, body)
	}

	// Only compute-1 and compute-2 have AVX2; the claim excluded
	// compute-1 and the consumer failed on compute-2: nothing fits.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/reschedule", "admin", `{"failed_provider": "compute-2"}`)
	if ecode, detail := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeNoValidHost {
		t.Fatalf("reschedule that must redo AVX2 and the exclusion: %d %v (%s)", code, body, detail)
	}
	// The body overrides a stored field: no exclusion now; AVX2 still.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/reschedule", "admin",
		`{"failed_provider": "compute-2", "exclude_providers": []}`)
	if code != 200 || body["root_provider_name"] != "compute-1" {
		t.Fatalf("reschedule: %d %v", code, body)
	}
	from, fields := reusedOf(t, body)
	if want := []string{"resources", "required", "name", "properties"}; from != "claim" || !slices.Equal(fields, want) {
		t.Fatalf("reused %s %v, want claim %v", from, fields, want)
	}
	_, stored := apitest.Call(t, s, http.MethodGet, "/claims/"+consumer, "admin", "")
	if stored["op"] != "reschedule" || stored["root_provider_uuid"] != rps[0] || stored["state"] != "permanent" {
		t.Fatalf("stored after the reschedule: %v", stored)
	}
	if req := stored["request"].(map[string]any); req["failed_provider"] != "compute-2" || req["required"] == nil {
		t.Fatalf("stored request after the reschedule: %v", req)
	}

	// A move redoes it too, away from the source: compute-2 is the only
	// other node with AVX2 (a move does not avoid past failures).
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move", "admin",
		`{"migration_uuid": "a0000000-0000-4000-8000-000000000009"}`)
	if code != 200 || body["root_provider_name"] != "compute-2" {
		t.Fatalf("move: %d %v", code, body)
	}
	if from, fields := reusedOf(t, body); from != "claim" || !slices.Contains(fields, "required") || !slices.Contains(fields, "exclude_providers") {
		t.Fatalf("move reused %s %v", from, fields)
	}
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/move/confirm", "admin", `{}`); code != 200 {
		t.Fatalf("confirm: %d %v", code, body)
	}
	// The body's resources override the stored ones; the rest is reused.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/reschedule", "admin",
		`{"resources": {"VCPU": 1, "MEMORY_MB": 1024}}`)
	if code != 200 || body["root_provider_name"] != "compute-1" {
		t.Fatalf("reschedule with resources: %d %v", code, body)
	}
	if _, fields := reusedOf(t, body); slices.Contains(fields, "resources") || !slices.Contains(fields, "required") {
		t.Fatalf("reschedule with resources reused %v", fields)
	}

	// Allocations written through the Placement API: no stored claim;
	// the reschedule takes what the consumer holds, as before.
	const placed = "c0000000-0000-4000-8000-000000000002"
	req := httptest.NewRequest(http.MethodPut, "/allocations/"+placed, strings.NewReader(`{"allocations": {"`+rps[2]+
		`": {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement latest")
	rec := httptest.NewRecorder()
	if s.ServeHTTP(rec, req); rec.Code != 204 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	if code, body := apitest.Call(t, s, http.MethodGet, "/claims/"+placed, "admin", ""); code != 404 {
		t.Fatalf("GET of a Placement-API consumer: %d %v", code, body)
	} else if ecode, _ := apitest.ErrorDetail(body); ecode != fault.CodeNoClaim {
		t.Fatalf("GET of a Placement-API consumer: %v", body)
	}
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+placed+"/reschedule", "admin", `{}`)
	if code != 200 || body["root_provider_uuid"] == rps[2] {
		t.Fatalf("reschedule of a Placement-API consumer: %d %v", code, body)
	}
	if from, fields := reusedOf(t, body); from != "allocations" || !slices.Equal(fields, []string{"resources"}) {
		t.Fatalf("reschedule of a Placement-API consumer reused %s %v", from, fields)
	}
}

// TestClaimLeaseAPI: lease_seconds on POST /claims, GET and PATCH
// /claims/{consumer_uuid}, and the bad input of each: a clear 4xx with a
// berth.* code, nothing changed.
func TestClaimLeaseAPI(t *testing.T) {
	s, rps := leaseCloud(t)
	const consumer = "c0000000-0000-4000-8000-000000000011"
	claim := func(uuid, lease string) (int, map[string]any) {
		return apitest.Call(t, s, http.MethodPost, "/claims", "admin", `{"consumer_uuid": "`+uuid+`", "project_id": "p",
			"user_id": "u", "resources": {"VCPU": 1}`+lease+`}`)
	}
	for _, bad := range []string{`-1`, `0`, `1.5`, `"30"`, `1e3`, `86401`, `true`, `{}`} {
		code, body := claim(consumer, `, "lease_seconds": `+bad)
		if ecode, _ := apitest.ErrorDetail(body); code != 400 || ecode != fault.CodeInvalidLease {
			t.Errorf("lease_seconds %s: %d %v", bad, code, body)
		}
	}
	if _, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+consumer, "admin", ""); len(got["allocations"].(map[string]any)) != 0 {
		t.Fatalf("a refused lease wrote %v", got)
	}

	before := time.Now()
	if code, body := claim(consumer, `, "lease_seconds": 30`); code != 200 {
		t.Fatalf("claim with a lease: %d %v", code, body)
	}
	code, st := apitest.Call(t, s, http.MethodGet, "/claims/"+consumer, "admin", "")
	if code != 200 || st["state"] != "provisional" || st["lease_seconds"] != 30.0 || st["expired"] != false ||
		st["op"] != "claim" || st["consumer_generation"] != 1.0 || st["migration_uuid"] != nil {
		t.Fatalf("GET: %d %v", code, st)
	}
	if root := st["root_provider_uuid"].(string); st["allocations"].(map[string]any)[root] == nil || !slices.Contains(rps, root) {
		t.Fatalf("GET: landed on %v, holds %v", root, st["allocations"])
	}
	if req := st["request"].(map[string]any); req["lease_seconds"] != 30.0 || req["resources"] == nil {
		t.Fatalf("GET: request %v", req)
	}
	expires, err := time.Parse(time.RFC3339Nano, st["lease_expires_at"].(string))
	if err != nil || expires.Before(before.Add(20*time.Second)) || expires.After(time.Now().Add(40*time.Second)) {
		t.Fatalf("lease_expires_at %v (%v), want about 30s from now", st["lease_expires_at"], err)
	}

	code, st = apitest.Call(t, s, http.MethodPatch, "/claims/"+consumer, "admin", `{"lease_seconds": 3600}`)
	if code != 200 || st["state"] != "provisional" || st["lease_seconds"] != 3600.0 || st["op"] != "renew" {
		t.Fatalf("renew: %d %v", code, st)
	}
	for _, bad := range []struct {
		body  string
		code  int
		ecode string
	}{
		{`{}`, 400, fault.CodeUndefined},
		{`{"lease_seconds": 30, "state": "permanent"}`, 400, fault.CodeUndefined},
		{`{"lease_seconds": -5}`, 400, fault.CodeInvalidLease},
		{`{"lease_seconds": 2.5}`, 400, fault.CodeInvalidLease},
	} {
		code, body := apitest.Call(t, s, http.MethodPatch, "/claims/"+consumer, "admin", bad.body)
		if ecode, _ := apitest.ErrorDetail(body); code != bad.code || ecode != bad.ecode {
			t.Errorf("PATCH %s: %d %v", bad.body, code, body)
		}
	}
	code, st = apitest.Call(t, s, http.MethodPatch, "/claims/"+consumer, "admin", `{"lease_seconds": null}`)
	if code != 200 || st["state"] != "permanent" || st["lease_expires_at"] != nil || st["lease_seconds"] != nil {
		t.Fatalf("confirm: %d %v", code, st)
	}
	code, body := apitest.Call(t, s, http.MethodPatch, "/claims/"+consumer, "admin", `{"lease_seconds": 30}`)
	if ecode, _ := apitest.ErrorDetail(body); code != 409 || ecode != fault.CodeLeaseOnPermanent {
		t.Fatalf("lease on a permanent claim: %d %v", code, body)
	}
	// A reschedule with a lease of a consumer with permanent allocations.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+consumer+"/reschedule", "admin", `{"lease_seconds": 30}`)
	if ecode, _ := apitest.ErrorDetail(body); code != 409 || ecode != fault.CodeLeaseOnPermanent {
		t.Fatalf("reschedule with a lease of a permanent claim: %d %v", code, body)
	}
	if _, after := apitest.Call(t, s, http.MethodGet, "/claims/"+consumer, "admin", ""); after["state"] != "permanent" ||
		after["consumer_generation"] != 1.0 {
		t.Fatalf("refusals changed the claim: %v", after)
	}

	const nobody = "c0000000-0000-4000-8000-0000000000ff"
	for _, m := range []string{http.MethodGet, http.MethodPatch} {
		code, body := apitest.Call(t, s, m, "/claims/"+nobody, "admin", `{"lease_seconds": null}`)
		if ecode, _ := apitest.ErrorDetail(body); code != 404 || ecode != fault.CodeNoClaim {
			t.Errorf("%s of a consumer with no claim: %d %v", m, code, body)
		}
	}
	if code, body := apitest.Call(t, s, http.MethodGet, "/claims/not-a-uuid", "admin", ""); code != 400 {
		t.Errorf("GET of a malformed uuid: %d %v", code, body)
	}
	if code, _ := apitest.Call(t, s, http.MethodGet, "/claims/"+consumer, "user", ""); code != http.StatusForbidden {
		t.Errorf("GET as a non-admin: %d", code)
	}
	if code, _ := apitest.Call(t, s, http.MethodPatch, "/claims/"+consumer, "user", `{"lease_seconds": null}`); code != http.StatusForbidden {
		t.Errorf("PATCH as a non-admin: %d", code)
	}
}
