package berthapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// lxdSuiteScriptlet is the first scriptlet of Incus's placement test
// suite, written for this test: it checks LXD's request and instance
// resources, calls the member functions, and targets the second member
// by name; for an evacuation, it checks the reason and that the
// evacuated member is not a candidate.
const lxdSuiteScriptlet = `
def instance_placement(request, candidate_members):
        for member in candidate_members:
                log_info("instance placement member: ", member.server_name, " ", get_cluster_member_state(member.server_name).sysinfo.free_ram)
                if member.status != "Online":
                        fail("a candidate is " + member.status)

        if request.reason == "evacuation":
                candidate_names = sorted([candidate.server_name for candidate in candidate_members])
                if "node1" in candidate_names:
                        fail("the evacuated member is a candidate")
                set_target(candidate_names[1])
                return

        instance_resources = get_instance_resources()
        if request.reason != "new":
                return "Expecting reason new"
        if request.project != "default":
                return "Expecting project default"
        if request.config["limits.memory"] != "512MiB":
                return "Expecting config limits.memory of 512MiB"
        if instance_resources.cpu_cores != 1:
                return "Expecting cpu_cores of 1"
        if instance_resources.memory_size != 536870912:
                return "Expecting memory_size of 536870912"
        if instance_resources.root_disk_size != 209715200:
                return "Expecting root_disk_size of 209715200"

        candidate_names = sorted([candidate.server_name for candidate in candidate_members])
        set_target(candidate_names[1])
        return # No error.
`

// lxdInstanceJSON is the suite's instance: limits on the instance.
const lxdInstanceJSON = `{"name": "c1", "project": "default", "type": "container",
	"config": {"limits.memory": "512MiB", "limits.cpu": "1"},
	"devices": {"root": {"type": "disk", "path": "/", "pool": "default", "size": "200MiB"}},
	"profiles": ["default"], "source": {"type": "image", "alias": "testimage"}, "x-kept": {"any": [1, "thing"]}}`

func claimBodyWith(consumer, instance string) string {
	return `{"consumer_uuid": "` + consumer + `", "project_id": "keystone-project", "user_id": "u",
		"resources": {"VCPU": 1, "MEMORY_MB": 512}, "instance": ` + instance + `}`
}

// TestLXDScriptletOverHTTP: LXD's and Incus's suite, over the API: the
// scriptlet set as LXD's instances.placement.scriptlet, claims carrying
// LXD's instance, the refusals, and an evacuation and restore.
func TestLXDScriptletOverHTTP(t *testing.T) {
	s, store := newSchedulingServer(t)
	var nodes []string
	for _, n := range []string{"node1", "node2", "node3"} {
		nodes = append(nodes, ledgertest.Provider(t, store, n, resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096)))
	}
	patch, _ := json.Marshal(map[string]any{"instances.placement.scriptlet": lxdSuiteScriptlet})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")

	// Bad instances: 400, nothing written.
	for bad, detail := range map[string]string{
		`[]`:                               "[] is not of type 'object'",
		`null`:                             "None is not of type 'object'",
		`"c1"`:                             "'c1' is not of type 'object'",
		`{"config": {"limits.cpu": 1}}`:    "1 is not of type 'string'",
		`{"devices": {"root": "disk"}}`:    "'disk' is not of type 'object'",
		`{"profiles": "default"}`:          "'default' is not of type 'array'",
		`{"ephemeral": "yes"}`:             "'yes' is not of type 'boolean'",
		`{"name": 7, "config": {"a": ""}}`: "7 is not of type 'string'",
	} {
		got := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(9), bad)}, 400, detail)
		if code, _ := apitest.ErrorDetail(got); code != fault.CodeUndefined {
			t.Errorf("%s: code %q", bad, code)
		}
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/allocations/" + uuidN(9)}, 200, `{"allocations":{}`)

	// The suite's instance goes to node2 (the second name).
	got := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(1), lxdInstanceJSON)}, 200, "")
	if got["root_provider_name"] != "node2" {
		t.Fatalf("claim: %v", got)
	}
	// A limits.memory LXD cannot parse: the scriptlet's
	// get_instance_resources fails with LXD's words, and the failure
	// refuses (on_error "refuse", the default).
	inst := strings.Replace(lxdInstanceJSON, `"512MiB"`, `"50%"`, 1)
	got = wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(2), inst)}, 409,
		"Failed parsing instance resources limits.memory: Invalid value: 50%")
	if code, _ := apitest.ErrorDetail(got); code != fault.CodeNoValidHost {
		t.Errorf("code %q", code)
	}
	// The scriptlet test endpoint takes an instance too.
	wantStatus(t, s, apiCall{method: "PUT", path: "/scriptlets/lxd", body: lxdSuiteScriptlet, contentType: "text/plain"}, 201, "")
	got = wantStatus(t, s, apiCall{method: "POST", path: "/scriptlets/lxd/test", body: `{"resources": {"VCPU": 1}, "instance": ` + lxdInstanceJSON + `}`}, 200, "")
	if d := got["decision"].(map[string]any); d["target_name"] != "node2" || d["chosen_by_scriptlet"] != true {
		t.Errorf("test: %v", got)
	}
	wantStatus(t, s, apiCall{method: "POST", path: "/scriptlets/lxd/test", body: `{"resources": {"VCPU": 1}, "instance": 3}`}, 400, "3 is not of type 'object'")

	// Place two more on node1, then evacuate it: they go to node3.
	plain := `{"consumer_uuid": "%s", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "target": "node1", "instance": ` + lxdInstanceJSON + `}`
	patch, _ = json.Marshal(map[string]any{"instances.placement.scriptlet": nil})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	for _, id := range []string{uuidN(3), uuidN(4)} {
		wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(plain, id)}, 200, "node1")
	}
	patch, _ = json.Marshal(map[string]any{"instances.placement.scriptlet": lxdSuiteScriptlet})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	evac := "/resource_providers/" + nodes[0] + "/evacuate"
	got = wantStatus(t, s, apiCall{method: "POST", path: evac, body: `{"dry_run": true}`}, 200, "")
	if got["planned"] != 2.0 || got["evacuated"] != false || got["remaining"] != 2.0 || got["dry_run"] != true {
		t.Errorf("dry run %v", got)
	}
	got = wantStatus(t, s, apiCall{method: "POST", path: evac}, 200, "")
	if got["moved"] != 2.0 || got["evacuated"] != true || got["evacuated_at"] == nil || got["remaining"] != 0.0 || got["next"] != nil {
		t.Fatalf("evacuation %v", got)
	}
	for _, c := range got["consumers"].([]any) {
		m := c.(map[string]any)
		if d := m["destination"].(map[string]any); d["name"] != "node3" || m["status"] != "moved" || m["migration_uuid"] == nil || m["confirmed"] != false {
			t.Errorf("consumer %v", m)
		}
	}
	// Capacity counts nothing on it.
	_, raw, _ := do(t, s, apiCall{method: "GET", path: "/capacity?resources=VCPU:1"})
	if strings.Contains(raw, nodes[0]) || !strings.Contains(raw, nodes[2]) {
		t.Errorf("capacity after the evacuation: %s", raw)
	}
	// Resumed with confirm: only the migration consumers are left, and
	// their moves are confirmed.
	got = wantStatus(t, s, apiCall{method: "POST", path: evac, body: `{"parallel": 2, "confirm": true}`}, 200, "")
	if got["confirmed"] != 2.0 || got["skipped"] != 0.0 || got["moved"] != 0.0 || got["remaining"] != 0.0 {
		t.Errorf("resumed %v", got)
	}

	// Bad requests: 4xx in Placement's format, nothing written.
	child := `{"name": "node1-numa0", "parent_provider_uuid": "` + nodes[0] + `"}`
	created := wantStatus(t, s, apiCall{method: "POST", path: "/resource_providers", body: child}, 200, "")
	for _, tc := range []struct {
		path, body string
		status     int
		code, want string
	}{
		{"/resource_providers/" + created["uuid"].(string) + "/evacuate", "", 400, fault.CodeNotRootProvider, "is not a root provider"},
		{"/resource_providers/aaaaaaaa-0000-4000-8000-00000000000f/evacuate", "", 404, fault.CodeUndefined, "No resource provider"},
		{"/resource_providers/not-a-uuid/evacuate", "", 404, fault.CodeUndefined, "No resource provider"},
		{evac, `{"parallel": 0}`, 400, fault.CodeUndefined, "JSON does not validate"},
		{evac, `{"after": "x"}`, 400, fault.CodeUndefined, "JSON does not validate"},
		{evac, `{"limit": -1}`, 400, fault.CodeUndefined, "JSON does not validate"},
		{evac, `{"force": true}`, 400, fault.CodeUndefined, "JSON does not validate"},
		{evac, `[`, 400, fault.CodeUndefined, "Malformed JSON"},
		{"/resource_providers/" + nodes[1] + "/restore", "", 409, fault.CodeNotEvacuated, "is not evacuated"},
		{"/resource_providers/aaaaaaaa-0000-4000-8000-00000000000f/restore", "", 404, fault.CodeUndefined, "No resource provider"},
	} {
		got := wantStatus(t, s, apiCall{method: "POST", path: tc.path, body: tc.body}, tc.status, tc.want)
		if code, _ := apitest.ErrorDetail(got); code != tc.code {
			t.Errorf("%s %s: code %q, want %q", tc.path, tc.body, code, tc.code)
		}
	}
	wantStatus(t, s, apiCall{method: "POST", path: evac, token: "user"}, 403, "berth:resource_providers:evacuate")
	if ev, _ := store.Cloud.ProviderEvacuationGet(t.Context(), nodes[1]); ev.Evacuated {
		t.Error("a refused request marked node2")
	}

	// Restored, node1 takes claims again.
	wantStatus(t, s, apiCall{method: "POST", path: "/resource_providers/" + nodes[0] + "/restore"}, 200, `"evacuated":false`)
	patch, _ = json.Marshal(map[string]any{"instances.placement.scriptlet": nil})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(plain, uuidN(5))}, 200, "node1")
}

// uuidN is a consumer uuid ending in n.
func uuidN(n int) string { return fmt.Sprintf("cccccccc-0000-4000-8000-%012d", n) }

// evacuationRedoScriptlet checks, on an evacuation, that the move redoes
// the stored claim: the instance is LXD's request again, and the only
// candidate is the other host with the required trait.
const evacuationRedoScriptlet = `
def instance_placement(request, candidate_members):
    if request.reason != "evacuation":
        return
    if request.name != "web" or request.config["user.zone"] != "a":
        fail("the instance was not redone: " + request.name)
    names = [m.server_name for m in candidate_members]
    if names != ["compute-2"]:
        fail("candidates " + ", ".join(names))
`

// TestEvacuationRedoesTheStoredClaim: an evacuation's moves are made as a
// move of the stored claim (its required trait, its instance), store it
// again, and leave the stored claim on the destination: moving with the
// claim's lease kept for a revert, then permanent there once confirmed;
// a move confirmed at once (a dead host) is permanent on the destination.
func TestEvacuationRedoesTheStoredClaim(t *testing.T) {
	s, rps := leaseCloud(t) // compute-1 and compute-2 have AVX2
	patch, _ := json.Marshal(map[string]any{"instances.placement.scriptlet": evacuationRedoScriptlet})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	claim := `{"consumer_uuid": "%s", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1, "MEMORY_MB": 512},
		"required": ["HW_CPU_X86_AVX2"], "target": "compute-1", "instance": {"name": "web", "config": {"user.zone": "a"}}%s}`
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(claim, uuidN(1), `, "lease_seconds": 600`)}, 200, "compute-1")
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(claim, uuidN(2), "")}, 200, "compute-1")

	evac := "/resource_providers/" + rps[0] + "/evacuate"
	got := wantStatus(t, s, apiCall{method: "POST", path: evac, body: `{"limit": 1}`}, 200, "")
	if got["moved"] != 1.0 || got["pending"] != 1.0 {
		t.Fatalf("first page %v", got)
	}
	first := wantStatus(t, s, apiCall{method: "GET", path: "/claims/" + uuidN(1)}, 200, "")
	req, _ := first["request"].(map[string]any)
	if first["root_provider_uuid"] != rps[1] || first["state"] != "moving" || first["lease_expires_at"] != nil ||
		first["op"] != "move" || first["migration_uuid"] == nil || req["reason"] != "evacuation" ||
		req["instance"] == nil || fmt.Sprint(req["required"]) != "[HW_CPU_X86_AVX2]" {
		t.Errorf("moving claim %v", first)
	}
	// Resumed with confirm: the second is moved and confirmed at once,
	// the first's move confirmed.
	got = wantStatus(t, s, apiCall{method: "POST", path: evac, body: `{"confirm": true}`}, 200, "")
	if got["moved"] != 1.0 || got["confirmed"] != 1.0 || got["skipped"] != 0.0 || got["remaining"] != 0.0 {
		t.Fatalf("resumed %v", got)
	}
	second := wantStatus(t, s, apiCall{method: "GET", path: "/claims/" + uuidN(2)}, 200, "")
	if second["root_provider_uuid"] != rps[1] || second["state"] != "permanent" || second["lease_expires_at"] != nil {
		t.Errorf("confirmed claim %v", second)
	}
	// The first, confirmed: permanent on compute-2, no lease left that
	// could release it or point back at compute-1.
	wantStatus(t, s, apiCall{method: "POST", path: "/claims/" + uuidN(1) + "/move/confirm", body: `{}`}, 200, rps[1])
	first = wantStatus(t, s, apiCall{method: "GET", path: "/claims/" + uuidN(1)}, 200, "")
	if first["root_provider_uuid"] != rps[1] || first["state"] != "permanent" || first["lease_expires_at"] != nil || first["migration_uuid"] != nil {
		t.Errorf("confirmed claim %v", first)
	}
	// A later move redoes the request the evacuation stored: the trait
	// again (compute-1 is evacuated, so nothing fits).
	wantStatus(t, s, apiCall{method: "POST", path: "/claims/" + uuidN(1) + "/move",
		body: `{"migration_uuid": "` + uuidN(9) + `", "dry_run": true}`}, 409, "berth.no_valid_host")
}

// TestEvacuationPagesThenConfirm: an evacuation run a page at a time
// counts each consumer once whatever the page size: its own migration
// consumers (which later pages find on the host) are not skipped, and a
// migration consumer of another move is skipped once. Run again with
// confirm, it confirms the moves it made.
func TestEvacuationPagesThenConfirm(t *testing.T) {
	// Low uuids, so that the evacuation's migration consumers sort after
	// the consumers of the first pages; the other move's migration
	// consumer sorts between the third and the fourth.
	consumer := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-0000000000%d0", i) }
	const otherMigration = "00000000-0000-4000-8000-000000000035"
	for _, limit := range []int{2, 5} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			s, rps := leaseCloud(t)
			claim := `{"consumer_uuid": "%s", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "target": "compute-1"}`
			for i := 1; i <= 8; i++ {
				wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(claim, consumer(i))}, 200, "compute-1")
			}
			// The eighth moves away by itself: its migration consumer stays.
			wantStatus(t, s, apiCall{method: "POST", path: "/claims/" + consumer(8) + "/move",
				body: `{"migration_uuid": "` + otherMigration + `"}`}, 200, "")

			pages := func(body string) map[string]float64 {
				sum := map[string]float64{}
				after := ""
				for n := 0; ; n++ {
					b := `{"limit": ` + fmt.Sprint(limit) + after + body + `}`
					got := wantStatus(t, s, apiCall{method: "POST", path: "/resource_providers/" + rps[0] + "/evacuate", body: b}, 200, "")
					for _, k := range []string{"moved", "planned", "failed", "skipped", "confirmed"} {
						v, ok := got[k].(float64)
						if !ok {
							t.Errorf("page %d: no count %q in %v", n, k, got)
						}
						sum[k] += v
					}
					if got["next"] == nil {
						sum["remaining"] = got["remaining"].(float64)
						return sum
					}
					after = `, "after": "` + got["next"].(string) + `"`
				}
			}
			want := map[string]float64{"moved": 7, "planned": 0, "failed": 0, "skipped": 1, "confirmed": 0, "remaining": 0}
			if got := pages(""); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("evacuation: %v, want %v", got, want)
			}
			want = map[string]float64{"moved": 0, "planned": 0, "failed": 0, "skipped": 1, "confirmed": 7, "remaining": 0}
			if got := pages(`, "confirm": true`); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("confirming: %v, want %v", got, want)
			}
			// Only the other move's source is left on the host.
			usages := wantStatus(t, s, apiCall{method: "GET", path: "/resource_providers/" + rps[0] + "/usages"}, 200, "")
			if u := usages["usages"].(map[string]any); u["VCPU"] != 1.0 {
				t.Errorf("compute-1 usages %v", u)
			}
			for i := 1; i <= 7; i++ {
				if c := wantStatus(t, s, apiCall{method: "GET", path: "/claims/" + consumer(i)}, 200, ""); c["state"] != "permanent" {
					t.Errorf("claim %d: %v", i, c)
				}
			}
		})
	}
}
