package berthapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestIncusDialectOverHTTP: scheduler.scriptlet.dialect picks whose
// reading of set_target with a name that is not a candidate applies:
// LXD's (the default: the built-in choice stands) or Incus's (the claim
// is refused), each as its own test suite expects.
func TestIncusDialectOverHTTP(t *testing.T) {
	s, store := newSchedulingServer(t)
	for _, n := range []string{"node1", "node2"} {
		ledgertest.Provider(t, store, n, resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096))
	}
	src := "def instance_placement(request, candidate_members):\n" +
		"        result = set_target(\"foo\")\n" +
		"        log_warn(\"Setting invalid member target result: \", result)\n" +
		"        return\n"
	patch, _ := json.Marshal(map[string]any{"instances.placement.scriptlet": src})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(1), `{"name": "c1"}`)}, 200, "")

	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"scheduler.scriptlet.dialect": "incus"}`}, 200,
		`"scheduler.scriptlet.dialect":"incus"`)
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(2), `{"name": "c2"}`)}, 409,
		"set_target: Invalid member name: foo")
	wantStatus(t, s, apiCall{method: "GET", path: "/allocations/" + uuidN(2)}, 200, `{"allocations":{}`)

	for _, bad := range []string{`{"scheduler.scriptlet.dialect": "openstack"}`, `{"scheduler.scriptlet.dialect": 3}`} {
		wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: bad}, 400, "scheduler.scriptlet.dialect must be")
	}
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"scheduler.scriptlet.dialect": null}`}, 200, "")
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(2), `{"name": "c2"}`)}, 200, "")
}

// TestIncusGetInstancesOverHTTP: get_instances answers Incus's
// api.Instance from each consumer's stored claim: the instance document
// a claim carried is what a later claim's scriptlet reads.
func TestIncusGetInstancesOverHTTP(t *testing.T) {
	s, store := newSchedulingServer(t)
	for _, n := range []string{"node1", "node2"} {
		ledgertest.Provider(t, store, n, resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096))
	}
	// At most one instance of a zone per member, read from the
	// instances' config (user.zone), as an Incus operator writes it.
	src := `
def instance_placement(request, candidate_members):
    zone = request.config.get("user.zone", "")
    for m in candidate_members:
        taken = [i for i in get_instances(request.project, m.server_name) if i.config.get("user.zone") == zone]
        log_info(m.server_name, ": ", len(taken), " of zone ", zone)
        if not taken:
            set_target(m.server_name)
            return
    fail("zone %s is on every member" % zone)
`
	patch, _ := json.Marshal(map[string]any{"instances.placement.scriptlet": src})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	inst := `{"name": "%s", "project": "keystone-project", "type": "virtual-machine", "config": {"user.zone": "a"}}`
	first := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(1), fmt.Sprintf(inst, "a1"))}, 200, "")
	second := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(2), fmt.Sprintf(inst, "a2"))}, 200, "")
	if first["root_provider_name"] == second["root_provider_name"] {
		t.Errorf("both of zone a on %v", first["root_provider_name"])
	}
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(3), fmt.Sprintf(inst, "a3"))}, 409,
		"Failed instance placement scriptlet: zone a is on every member")
	// Another zone still fits.
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: claimBodyWith(uuidN(3), `{"name": "b1", "config": {"user.zone": "b"}}`)}, 200, "")
}

// TestRebalanceReason: Incus's "rebalance" is a move's reason, handed
// to the scriptlet as request.reason.
func TestRebalanceReason(t *testing.T) {
	s, store := newSchedulingServer(t)
	for _, n := range []string{"node1", "node2"} {
		ledgertest.Provider(t, store, n, resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096))
	}
	body := `{"consumer_uuid": "` + uuidN(1) + `", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "target": "node1"}`
	wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: body}, 200, "node1")
	src := "def instance_placement(request, candidate_members):\n" +
		"    if request.reason not in (\"new\", \"rebalance\"):\n" +
		"        return \"Expecting reason rebalance, not \" + request.reason\n"
	patch, _ := json.Marshal(map[string]any{"instances.placement.scriptlet": src})
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	move := "/claims/" + uuidN(1) + "/move"
	wantStatus(t, s, apiCall{method: "POST", path: move, body: `{"migration_uuid": "` + uuidN(8) + `"}`}, 409,
		"Expecting reason rebalance, not relocation")
	wantStatus(t, s, apiCall{method: "POST", path: move, body: `{"migration_uuid": "` + uuidN(8) + `", "reason": "rebalancing"}`}, 400, "")
	wantStatus(t, s, apiCall{method: "POST", path: move, body: `{"migration_uuid": "` + uuidN(8) + `", "reason": "rebalance"}`}, 200, "node2")
}

// TestEvacuateModes: LXD's and Incus's evacuation modes. Under "auto"
// an instance whose config says cluster.evacuate "stop" stays (LXD
// stops it in place); "migrate" moves every consumer; "stop" moves none.
func TestEvacuateModes(t *testing.T) {
	s, store := newSchedulingServer(t)
	node1 := ledgertest.Provider(t, store, "node1", resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096))
	ledgertest.Provider(t, store, "node2", resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096))
	claim := `{"consumer_uuid": "%s", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "target": "node1", "instance": %s}`
	for id, inst := range map[string]string{
		uuidN(1): `{"name": "stays", "config": {"cluster.evacuate": "stop"}}`,
		uuidN(2): `{"name": "moves"}`,
		uuidN(3): `{"name": "migrates", "config": {"cluster.evacuate": "migrate"}}`,
	} {
		wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(claim, id, inst)}, 200, "node1")
	}
	evac := "/resource_providers/" + node1 + "/evacuate"
	names := map[string]string{"1": "stays", "2": "moves", "3": "migrates"}
	statuses := func(got map[string]any) string {
		var out []string
		for _, c := range got["consumers"].([]any) {
			m := c.(map[string]any)
			id := m["consumer_uuid"].(string)
			out = append(out, fmt.Sprintf("%s:%s:%v", names[id[len(id)-1:]], m["status"], m["reason"]))
		}
		return strings.Join(out, " ")
	}
	for mode, want := range map[string]string{
		`{"dry_run": true}`:                         "stays:skipped:stop moves:planned:<nil> migrates:planned:<nil>",
		`{"dry_run": true, "mode": "auto"}`:         "stays:skipped:stop moves:planned:<nil> migrates:planned:<nil>",
		`{"dry_run": true, "mode": "migrate"}`:      "stays:planned:<nil> moves:planned:<nil> migrates:planned:<nil>",
		`{"dry_run": true, "mode": "live-migrate"}`: "stays:planned:<nil> moves:planned:<nil> migrates:planned:<nil>",
		`{"dry_run": true, "mode": "stop"}`:         "stays:skipped:stop moves:skipped:stop migrates:skipped:stop",
	} {
		if got := statuses(wantStatus(t, s, apiCall{method: "POST", path: evac, body: mode}, 200, "")); got != want {
			t.Errorf("%s: %s, want %s", mode, got, want)
		}
	}
	wantStatus(t, s, apiCall{method: "POST", path: evac, body: `{"mode": "heal"}`}, 400, "")
	got := wantStatus(t, s, apiCall{method: "POST", path: evac, body: `{"confirm": true}`}, 200, "")
	if statuses(got) != "stays:skipped:stop moves:moved:<nil> migrates:moved:<nil>" || got["remaining"] != 0.0 {
		t.Errorf("evacuate: %v", got)
	}
	wantStatus(t, s, apiCall{method: "GET", path: "/allocations/" + uuidN(1)}, 200, node1)
	wantStatus(t, s, apiCall{method: "GET", path: "/allocations/" + uuidN(2)}, 200, "")
}
