package berthapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

const (
	rackA = "a0a0a0a0-0000-4000-8000-00000000000a"
	rackB = "b0b0b0b0-0000-4000-8000-00000000000b"
)

// gangCloud is a server over two racks of three hosts (8 VCPU each):
// hosts a0..a2 in rackA, b0..b2 in rackB; it returns the hosts by name.
func gangCloud(t *testing.T) (*httpapi.Server, map[string]string) {
	t.Helper()
	store := ledgertest.NewStore(t)
	hosts := map[string]string{}
	for _, rack := range []struct{ prefix, agg string }{{"a", rackA}, {"b", rackB}} {
		for i := range 3 {
			name := fmt.Sprintf("%s%d", rack.prefix, i)
			hosts[name] = ledgertest.Provider(t, store, name, resources.DefaultInventory("VCPU", 8))
			if _, err := store.Providers.ProviderAggregatesReplace(context.Background(), hosts[name], []string{rack.agg},
				resources.AggregatesReplaceParams{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s, hosts
}

func member(i int) string { return fmt.Sprintf("e0000000-0000-4000-8000-%012d", i) }

// gangBody is a gang of n members of vcpu VCPU from member(first) on,
// with extra fields.
func gangBody(first, n, vcpu int, extra string) string {
	var ms []string
	for i := range n {
		ms = append(ms, fmt.Sprintf(`{"consumer_uuid": "%s", "resources": {"VCPU": %d}}`, member(first+i), vcpu))
	}
	body := `{"project_id": "p", "user_id": "u", "members": [` + strings.Join(ms, ", ") + `]`
	if extra != "" {
		body += ", " + extra
	}
	return body + "}"
}

func holdsNothing(t *testing.T, s *httpapi.Server, consumers ...string) {
	t.Helper()
	for _, c := range consumers {
		if _, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+c, "admin", ""); len(got["allocations"].(map[string]any)) != 0 {
			t.Fatalf("%s holds %v", c, got)
		}
	}
}

func TestGangAPIBadInput(t *testing.T) {
	s, _ := gangCloud(t)
	for name, body := range map[string]string{
		"no members":       `{"project_id": "p", "user_id": "u", "members": []}`,
		"members null":     `{"project_id": "p", "user_id": "u", "members": null}`,
		"a member twice":   `{"project_id": "p", "user_id": "u", "members": [{"consumer_uuid": "` + member(1) + `", "resources": {"VCPU": 1}}, {"consumer_uuid": "` + strings.ToUpper(member(1)) + `", "resources": {"VCPU": 1}}]}`,
		"spread racks":     gangBody(1, 2, 1, `"spread": "racks"`),
		"domain a name":    gangBody(1, 2, 1, `"domain": {"member_of": ["rack-a"]}`),
		"domain empty":     gangBody(1, 2, 1, `"domain": {"member_of": []}`),
		"domain no list":   gangBody(1, 2, 1, `"domain": {}`),
		"domain a string":  gangBody(1, 2, 1, `"domain": "`+rackA+`"`),
		"no owner":         `{"members": [{"consumer_uuid": "` + member(1) + `", "resources": {"VCPU": 1}}]}`,
		"member no uuid":   `{"project_id": "p", "user_id": "u", "members": [{"resources": {"VCPU": 1}}]}`,
		"member extra":     `{"project_id": "p", "user_id": "u", "members": [{"consumer_uuid": "` + member(1) + `", "resources": {"VCPU": 1}, "target": "a0"}]}`,
		"member bad class": gangBody(1, 1, 1, "") + ` `,
		"single and gang":  gangBody(1, 2, 1, `"consumer_uuid": "`+member(9)+`"`),
		"a bad lease":      gangBody(1, 2, 1, `"lease_seconds": -1`),
	} {
		if name == "member bad class" {
			body = strings.Replace(body, `"VCPU"`, `"vcpu"`, 1)
		}
		code, got := apitest.Call(t, s, http.MethodPost, "/claims", "admin", body)
		errs, _ := got["errors"].([]any)
		if code != http.StatusBadRequest || len(errs) != 1 || errs[0].(map[string]any)["status"] != 400.0 {
			t.Errorf("%s: %d %v", name, code, got)
		}
	}
	code, got := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 2, 1, `"lease_seconds": -1`))
	if ecode, _ := apitest.ErrorDetail(got); code != 400 || ecode != fault.CodeInvalidLease {
		t.Errorf("a bad lease: %d %v", code, got)
	}
	holdsNothing(t, s, member(1), member(2))
}

func TestGangAPI(t *testing.T) {
	s, hosts := gangCloud(t)
	// a0 keeps 2 VCPU free: rack A holds two spread members of 4, rack
	// B three.
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", `{"consumer_uuid": "`+member(100)+
		`", "project_id": "p", "user_id": "u", "resources": {"VCPU": 6}, "target": "a0"}`); code != 200 {
		t.Fatalf("claim on a0: %d %v", code, body)
	}
	domain := `"spread": "hosts", "domain": {"member_of": ["` + rackA + `", "` + rackB + `"]}`

	code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 3, 4, domain+`, "dry_run": true`))
	if code != 200 || body["dry_run"] != true || body["gang_id"] != "" || fmt.Sprint(body["domain"]) != "map[member_of:"+rackB+"]" {
		t.Fatalf("dry run: %d %v", code, body)
	}
	if ds := body["domains"].([]any); len(ds) != 2 || ds[1].(map[string]any)["fits"] != 2.0 || ds[1].(map[string]any)["stopped_at"] != member(3) {
		t.Fatalf("dry run's domains: %v", ds)
	}
	holdsNothing(t, s, member(1), member(2), member(3))

	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 3, 4, domain))
	if code != 200 || body["dry_run"] != false || body["gang_id"] == "" || body["attempts"] != 1.0 ||
		fmt.Sprint(body["domain"]) != "map[member_of:"+rackB+"]" {
		t.Fatalf("gang: %d %v", code, body)
	}
	var roots []string
	for i, m := range body["members"].([]any) {
		m := m.(map[string]any)
		root := m["root_provider_uuid"].(string)
		if m["consumer_uuid"] != member(1+i) || !slices.Contains([]string{hosts["b0"], hosts["b1"], hosts["b2"]}, root) ||
			fmt.Sprint(m["allocations"]) != "map["+root+":map[resources:map[VCPU:4]]]" || m["consumer_generation"] != 1.0 {
			t.Fatalf("member %d: %v", i, m)
		}
		roots = append(roots, root)
		_, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+member(1+i), "admin", "")
		if got["allocations"].(map[string]any)[root] == nil || got["project_id"] != "p" {
			t.Fatalf("GET /allocations of member %d: %v", i, got)
		}
		code, st := apitest.Call(t, s, http.MethodGet, "/claims/"+member(1+i), "admin", "")
		g, _ := st["gang"].(map[string]any)
		if req, _ := st["request"].(map[string]any); code != 200 || st["root_provider_uuid"] != root || req["project_id"] != "p" ||
			req["resources"] == nil || fmt.Sprint(req["member_of"]) != "["+rackB+"]" || g["gang_id"] != body["gang_id"] ||
			fmt.Sprint(g["domain"]) != "map[member_of:"+rackB+"]" || len(g["members"].([]any)) != 3 {
			t.Fatalf("GET /claims of member %d: %d %v", i, code, st)
		}
	}
	if slices.Sort(roots); len(slices.Compact(roots)) != 3 {
		t.Fatalf("spread members share hosts: %v", roots)
	}

	// No rack holds three more: 409, per domain how many fit and why.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(11, 3, 6, domain))
	ecode, detail := apitest.ErrorDetail(body)
	if code != http.StatusConflict || ecode != fault.CodeNoValidHost || !strings.Contains(detail, "No domain holds the gang of 3 members") ||
		!strings.Contains(detail, rackB+": 0 of 3 fit (3 lacked VCPU 6)") {
		t.Fatalf("refused gang: %d %v", code, body)
	}
	ds := body["errors"].([]any)[0].(map[string]any)["domains"].([]any)
	want := []string{
		fmt.Sprintf("map[fits:2 member_of:%s reasons:map[lacked VCPU 6:1 used by another member (spread hosts):2] roots:3 stopped_at:%s]", rackA, member(13)),
		fmt.Sprintf("map[fits:0 member_of:%s reasons:map[lacked VCPU 6:3] roots:3 stopped_at:%s]", rackB, member(11)),
	}
	if len(ds) != 2 || fmt.Sprint(ds[0]) != want[0] || fmt.Sprint(ds[1]) != want[1] {
		t.Fatalf("domains of the 409: %v, want %v", ds, want)
	}
	holdsNothing(t, s, member(11), member(12), member(13))

	// One member deleted, rescheduled or moved: the others stay as they are.
	if code, _ := callAs(t, s, http.MethodDelete, "/allocations/"+member(1), "admin", "", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE a member: %d", code)
	}
	// A member rescheduled stays in the gang's rack (its stored request
	// has the rack in member_of).
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+member(2)+"/reschedule", "admin", `{}`)
	if root := body["root_provider_uuid"]; code != 200 || (root != hosts["b0"] && root != hosts["b1"] && root != hosts["b2"]) {
		t.Fatalf("reschedule a member: %d %v", code, body)
	}
	code, body = apitest.Call(t, s, http.MethodPost, "/claims/"+member(3)+"/move", "admin", `{"migration_uuid": "`+member(200)+`"}`)
	if code != 200 {
		t.Fatalf("move a member: %d %v", code, body)
	}
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims/"+member(3)+"/move/confirm", "admin", `{}`); code != 200 {
		t.Fatalf("confirm a member's move: %d %v", code, body)
	}
	holdsNothing(t, s, member(1))
	for _, m := range []string{member(2), member(3)} {
		if _, got := apitest.Call(t, s, http.MethodGet, "/allocations/"+m, "admin", ""); len(got["allocations"].(map[string]any)) != 1 {
			t.Fatalf("%s holds %v", m, got)
		}
	}
}

func TestGangAPIQuotaAndLease(t *testing.T) {
	s, _ := gangCloud(t)
	if code, body := apitest.Call(t, s, http.MethodPut, "/limits/p", "admin", `{"limits": {"VCPU": 10}}`); code != 200 {
		t.Fatalf("PUT /limits/p: %d %v", code, body)
	}
	code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 3, 4, `"spread": "hosts"`))
	if ecode, _ := apitest.ErrorDetail(body); code != http.StatusForbidden || ecode != fault.CodeOverQuota {
		t.Fatalf("a gang over its limit: %d %v", code, body)
	}
	holdsNothing(t, s, member(1), member(2), member(3))

	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 2, 4, `"spread": "hosts", "lease_seconds": 600`))
	if code != 200 {
		t.Fatalf("a gang with a lease: %d %v", code, body)
	}
	// The console lists the gang, whole (2 of 2 members holding).
	req := httptest.NewRequest(http.MethodGet, "/ui/gangs", nil)
	req.Header.Set("X-Auth-Token", "admin")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if page := rec.Body.String(); rec.Code != 200 || !strings.Contains(page, body["gang_id"].(string)) ||
		!strings.Contains(page, "<td>2</td><td>2</td>") || strings.Contains(page, "partial</strong>") {
		t.Fatalf("console's gangs: %d %s", rec.Code, page)
	}
	if code, st := apitest.Call(t, s, http.MethodPatch, "/claims/"+member(2), "admin", `{"lease_seconds": null}`); code != 200 || st["state"] != "permanent" {
		t.Fatalf("confirm a member: %d %v", code, st)
	}
	if _, st := apitest.Call(t, s, http.MethodGet, "/claims/"+member(1), "admin", ""); st["state"] != "permanent" {
		t.Fatalf("the other member after the confirm: %v", st)
	}
}

// TestGangAPIRetry: a gang's retry with the same body gets the first
// answer; a different body for a member placed is 409
// berth.claim_mismatch naming what differs; a refused gang's retry is a
// new attempt, placed once there is room.
func TestGangAPIRetry(t *testing.T) {
	s, _ := gangCloud(t)
	rack := `"spread": "hosts", "domain": {"member_of": ["` + rackA + `"]}`
	code, first := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 3, 4, rack))
	if code != 200 || first["gang_id"] == "" {
		t.Fatalf("gang: %d %v", code, first)
	}
	code, again := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 3, 4, rack))
	if code != 200 || fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("retry: %d %v, want the first answer %v", code, again, first)
	}

	for name, c := range map[string]struct{ body, fields string }{
		"other amounts":  {gangBody(1, 3, 3, rack), "members[0].resources"},
		"other members":  {gangBody(3, 2, 4, rack), "members"},
		"no spread":      {gangBody(1, 3, 4, `"domain": {"member_of": ["`+rackA+`"]}`), "spread"},
		"another domain": {gangBody(1, 3, 4, `"spread": "hosts", "domain": {"member_of": ["`+rackB+`"]}`), "domain"},
	} {
		code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", c.body)
		ecode, detail := apitest.ErrorDetail(body)
		if code != http.StatusConflict || ecode != fault.CodeClaimMismatch || !strings.Contains(detail, "(differs in: "+c.fields+")") {
			t.Errorf("%s: %d %v", name, code, body)
		}
	}
	holdsNothing(t, s, member(4))

	refused := gangBody(11, 2, 8, rack) // a0..a2 hold 4 VCPU each
	for i := range 2 {
		code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", refused)
		if ecode, _ := apitest.ErrorDetail(body); code != http.StatusConflict || ecode != fault.CodeNoValidHost {
			t.Fatalf("refused gang, attempt %d: %d %v", i, code, body)
		}
	}
	holdsNothing(t, s, member(11), member(12))
	for i := range 3 {
		if code, _ := callAs(t, s, http.MethodDelete, "/allocations/"+member(1+i), "admin", "", ""); code != http.StatusNoContent {
			t.Fatalf("DELETE member %d: %d", i, code)
		}
	}
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", refused); code != 200 || len(body["members"].([]any)) != 2 {
		t.Fatalf("the refused gang once there is room: %d %v", code, body)
	}
}

// TestGangAPILevelsAndMinCount: a gang falls back to the next level when
// no domain of its preferred one holds it whole; with min_count it is
// placed with at least that many members, the answer saying how many;
// both are checked strictly.
func TestGangAPILevelsAndMinCount(t *testing.T) {
	s, hosts := gangCloud(t)
	const block = "c0c0c0c0-0000-4000-8000-00000000000c"
	for _, h := range hosts { // every host in the block too
		_, got := apitest.Call(t, s, http.MethodGet, "/resource_providers/"+h+"/aggregates", "admin", "")
		aggs := append(got["aggregates"].([]any), block)
		body := fmt.Sprintf(`{"aggregates": ["%s", "%s"], "resource_provider_generation": %v}`, aggs[0], aggs[1], got["resource_provider_generation"])
		if code, got := apitest.Call(t, s, http.MethodPut, "/resource_providers/"+h+"/aggregates", "admin", body); code != 200 {
			t.Fatalf("block: %d %v", code, got)
		}
	}
	rackThenBlock := `"spread": "hosts", "domain": {"member_of": ["` + rackA + `"], "fallback": [{"member_of": ["` + block + `"]}]}`

	for name, extra := range map[string]string{
		"min_count 0":          `"min_count": 0`,
		"min_count a string":   `"min_count": "2"`,
		"min_count over":       `"min_count": 5`,
		"fallback empty":       `"domain": {"member_of": ["` + rackA + `"], "fallback": []}`,
		"fallback an object":   `"domain": {"member_of": ["` + rackA + `"], "fallback": {"member_of": ["` + block + `"]}}`,
		"fallback no list":     `"domain": {"member_of": ["` + rackA + `"], "fallback": [{}]}`,
		"fallback a name":      `"domain": {"member_of": ["` + rackA + `"], "fallback": [{"member_of": ["block"]}]}`,
		"fallback extra":       `"domain": {"member_of": ["` + rackA + `"], "fallback": [{"member_of": ["` + block + `"], "level": "block"}]}`,
		"fallback alone":       `"domain": {"fallback": [{"member_of": ["` + block + `"]}]}`,
		"fallback nine levels": `"domain": {"member_of": ["` + rackA + `"], "fallback": [` + strings.Repeat(`{"member_of": ["`+block+`"]}, `, 8) + `{"member_of": ["` + block + `"]}]}`,
	} {
		code, got := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(1, 4, 1, extra))
		errs, _ := got["errors"].([]any)
		if code != http.StatusBadRequest || len(errs) != 1 || errs[0].(map[string]any)["status"] != 400.0 {
			t.Errorf("%s: %d %v", name, code, got)
		}
	}
	holdsNothing(t, s, member(1), member(2), member(3), member(4))

	// Four members of 8 VCPU on hosts of their own: rack A has three, so
	// with min_count 2 the gang is placed with three, in rack A.
	code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin",
		gangBody(11, 4, 8, `"spread": "hosts", "domain": {"member_of": ["`+rackA+`"]}, "min_count": 2`))
	if code != 200 || body["placed"] != 3.0 || fmt.Sprint(body["unplaced"]) != "["+member(14)+"]" ||
		len(body["members"].([]any)) != 3 || fmt.Sprint(body["domain"]) != "map[member_of:"+rackA+"]" {
		t.Fatalf("min_count: %d %v", code, body)
	}
	holdsNothing(t, s, member(14))
	// The same body again is its retry: the first answer.
	code, again := apitest.Call(t, s, http.MethodPost, "/claims", "admin",
		gangBody(11, 4, 8, `"spread": "hosts", "domain": {"member_of": ["`+rackA+`"]}, "min_count": 2`))
	if code != 200 || fmt.Sprint(again) != fmt.Sprint(body) {
		t.Fatalf("retry of a gang placed in part: %d %v, want %v", code, again, body)
	}

	// Rack A is full: three members of 4 fall back to the block.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(21, 3, 4, rackThenBlock))
	ds, _ := body["domains"].([]any)
	if code != 200 || fmt.Sprint(body["domain"]) != "map[member_of:"+block+"]" || body["placed"] != nil || len(ds) != 2 ||
		ds[0].(map[string]any)["fits"] != 0.0 || ds[1].(map[string]any)["fits"] != 3.0 {
		t.Fatalf("fallback: %d %v", code, body)
	}
	for _, m := range body["members"].([]any) {
		if root := m.(map[string]any)["root_provider_uuid"]; root != hosts["b0"] && root != hosts["b1"] && root != hosts["b2"] {
			t.Fatalf("a member of the fallback on %v", root)
		}
	}

	// Nothing holds two of 8 VCPU now: 409, saying so for each level.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(31, 3, 8, rackThenBlock+`, "min_count": 2`))
	ecode, detail := apitest.ErrorDetail(body)
	if code != http.StatusConflict || ecode != fault.CodeNoValidHost ||
		!strings.Contains(detail, "No domain holds at least 2 of the gang's 3 members: "+rackA+": 0 of 3 fit") ||
		!strings.Contains(detail, block+": 0 of 3 fit") {
		t.Fatalf("min_count not met: %d %v", code, body)
	}
	holdsNothing(t, s, member(31), member(32), member(33))
}

// TestGangAPIRankedByPolicy: POST /claims with members and a policy
// ranks the racks that hold the whole gang by that policy's weighers
// over the hosts each placement uses, and its scriptlet's gang_placement
// may choose a rack or refuse the gang (nothing written).
func TestGangAPIRankedByPolicy(t *testing.T) {
	s, hosts := gangCloud(t)
	// a0 holds 2 VCPU: rack A is in use, rack B empty.
	if code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", `{"consumer_uuid": "`+member(100)+
		`", "project_id": "p", "user_id": "u", "resources": {"VCPU": 2}, "target": "a0"}`); code != 200 {
		t.Fatalf("claim on a0: %d %v", code, body)
	}
	for _, pol := range []string{
		`{"name": "pack", "weighers": [{"name": "pack"}]}`,
		`{"name": "spread", "weighers": [{"name": "spread"}]}`,
		`{"name": "pick", "weighers": [{"name": "pack"}], "scriptlet": "pick-last"}`,
		`{"name": "refuse", "weighers": [{"name": "pack"}], "scriptlet": "refuse-big"}`,
	} {
		if strings.Contains(pol, "scriptlet") {
			name, src := "pick-last", "def gang_placement(request, domains):\n    set_target(domains[-1].aggregate)\n"
			if strings.Contains(pol, "refuse") {
				name, src = "refuse-big", "def gang_placement(request, domains):\n"+
					"    if request.resources[\"VCPU\"] > 2:\n        return \"too big for %s\" % domains[0].members[0].host.name\n"
			}
			wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/" + name, contentType: "text/plain", body: src}, 201, "")
		}
		wantStatus(t, s, apiCall{method: "POST", path: "/scheduling_policies", body: pol}, 201, "")
	}
	domain := `"domain": {"member_of": ["` + rackB + `", "` + rackA + `"]}`
	for i, tc := range []struct {
		policy string
		rack   string
	}{
		{"pack", rackA},
		{"spread", rackB},
		{"pick", rackB},
		{"", rackA}, // the built-in policy: the engine's order, racks in use first
	} {
		extra := domain + `, "dry_run": true`
		if tc.policy != "" {
			extra += `, "policy": "` + tc.policy + `"`
		}
		code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(10*i+1, 2, 2, extra))
		if code != 200 || fmt.Sprint(body["domain"]) != "map[member_of:"+tc.rack+"]" {
			t.Fatalf("policy %q: %d %v, want %s", tc.policy, code, body, tc.rack)
		}
	}
	// Written as ranked: spread takes rack B.
	code, body := apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(51, 2, 2, domain+`, "policy": "spread"`))
	if code != 200 || fmt.Sprint(body["domain"]) != "map[member_of:"+rackB+"]" {
		t.Fatalf("spread: %d %v", code, body)
	}
	for _, m := range body["members"].([]any) {
		if root := m.(map[string]any)["root_provider_uuid"]; root != hosts["b0"] && root != hosts["b1"] && root != hosts["b2"] {
			t.Fatalf("spread: member on %v", root)
		}
	}

	// A refusal: 409 with the scriptlet's reason, nothing written.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(61, 2, 2, domain+`, "policy": "refuse"`))
	ecode, detail := apitest.ErrorDetail(body)
	errs, _ := body["errors"].([]any)
	if code != http.StatusConflict || ecode != fault.CodeNoValidHost || len(errs) != 1 ||
		errs[0].(map[string]any)["refusal"] != "too big for b0" ||
		!strings.Contains(detail, "2 of 2 domains hold the gang of 2 members; then Failed instance placement scriptlet: too big for b0") {
		t.Fatalf("refused: %d %v", code, body)
	}
	holdsNothing(t, s, member(61), member(62))
	if code, _ := apitest.Call(t, s, http.MethodGet, "/claims/"+member(61), "admin", ""); code != http.StatusNotFound {
		t.Fatalf("a refused gang's member has a stored claim: %d", code)
	}
	// An unknown policy is the request's error.
	code, body = apitest.Call(t, s, http.MethodPost, "/claims", "admin", gangBody(71, 2, 2, domain+`, "policy": "nosuch"`))
	if _, detail := apitest.ErrorDetail(body); code != http.StatusBadRequest || !strings.Contains(detail, "No scheduling policy named nosuch") {
		t.Fatalf("unknown policy: %d %v", code, body)
	}
}
