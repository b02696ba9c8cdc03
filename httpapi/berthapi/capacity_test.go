package berthapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

func TestCapacityAPI(t *testing.T) {
	ctx := context.Background()
	store := ledgertest.NewStore(t)
	uuids := map[string]string{}
	// Created in this order: the engine's order, which breaks ties.
	for _, pv := range []struct {
		name string
		vcpu int64
	}{{"cn1", 8}, {"cn2", 16}} {
		uuids[pv.name] = ledgertest.Provider(t, store, pv.name,
			resources.DefaultInventory("VCPU", pv.vcpu), resources.DefaultInventory("MEMORY_MB", 4096))
	}
	// Aggregates: cn1 in A, cn2 in A and B.
	const aggA, aggB = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	for name, aggs := range map[string][]string{"cn1": {aggA}, "cn2": {aggA, aggB}} {
		if _, err := store.Providers.ProviderAggregatesReplace(ctx, uuids[name], aggs, resources.AggregatesReplaceParams{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	get := func(token, query string) (int, string) {
		t.Helper()
		code, body := apitest.Call(t, s, http.MethodGet, "/capacity?"+query, token, "")
		b, _ := json.Marshal(body)
		return code, string(b)
	}

	if code, _ := get("user", "resources=VCPU:1"); code != http.StatusForbidden {
		t.Errorf("non-admin: %d", code)
	}

	// cn1: VCPU 8/4 = 2; cn2: MEMORY_MB 4096/1024 = 4 (VCPU 16/4 = 4 too).
	code, body := get("admin", "resources=VCPU:4,MEMORY_MB:1024")
	want := `{"aggregates":[{"fits":6,"uuid":"` + aggA + `"},{"fits":4,"uuid":"` + aggB + `"}],"capped":false,"over_capacity":[],"roots":[` +
		`{"capped":false,"fits":4,"limiting":["VCPU","MEMORY_MB"],"name":"cn2","root_provider_uuid":"` + uuids["cn2"] + `"},` +
		`{"capped":false,"fits":2,"limiting":["VCPU"],"name":"cn1","root_provider_uuid":"` + uuids["cn1"] + `"}],` +
		`"total":6,"truncated":false}`
	if code != http.StatusOK || body != want {
		t.Errorf("capacity: %d\n got %s\nwant %s", code, body, want)
	}

	// max caps each root's count; limit caps the roots listed, not the total.
	code, body = get("admin", "resources=VCPU:1&max=3&limit=1")
	want = `{"aggregates":[{"fits":6,"uuid":"` + aggA + `"},{"fits":3,"uuid":"` + aggB + `"}],"capped":true,"over_capacity":[],"roots":[` +
		`{"capped":true,"fits":3,"limiting":[],"name":"cn1","root_provider_uuid":"` + uuids["cn1"] + `"}],` +
		`"total":6,"truncated":false}`
	if code != http.StatusOK || body != want {
		t.Errorf("max and limit: %d\n got %s\nwant %s", code, body, want)
	}

	// in_tree and granular groups are read as GET /allocation_candidates
	// reads them at the latest microversion.
	code, body = get("admin", "resources_A=VCPU:8&in_tree_A="+uuids["cn1"])
	if code != http.StatusOK || !strings.Contains(body, `"total":1,`) {
		t.Errorf("in_tree: %d %s", code, body)
	}

	for _, tc := range []struct{ query, detail string }{
		{"resources=VCPU:x", "Requested resource VCPU expected positive integer amount"},
		{"resources=VCPU:1&max=0", `"0" is not a valid max`},
		{"resources=VCPU:1&max=lots", `"lots" is not a valid max`},
		{"resources=VCPU:1&bogus=1", "'bogus' does not match any of the regexes"},
		{"resources=CUSTOM_NOPE:1", "No such resource class CUSTOM_NOPE"},
		{"resources=VCPU:1&required=CUSTOM_NOPE", "No such trait(s): CUSTOM_NOPE"},
		{"resources1=VCPU:1&resources2=VCPU:1", `The "group_policy" parameter is required`},
	} {
		code, body := apitest.Call(t, s, http.MethodGet, "/capacity?"+tc.query, "admin", "")
		if _, detail := apitest.ErrorDetail(body); code != http.StatusBadRequest || !strings.Contains(detail, tc.detail) {
			t.Errorf("%s: %d %q, want 400 with %q", tc.query, code, detail, tc.detail)
		}
	}
}
