package berthapi_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// mostFreeRAMScriptlet is the example in the dict style of early
// LXD scriptlets: the candidate whose member reported the most free RAM,
// each member's figure logged.
const mostFreeRAMScriptlet = `
def instance_placement(request, candidate_members):
    best, most = None, -1
    for m in candidate_members:
        free = get_cluster_member_state(m["server_name"])["sysinfo"]["free_ram"]
        log_info("free_ram", m["server_name"], free)
        if free > most:
            best, most = m["server_name"], free
    set_target(best)
`

// TestScriptletTargetAfterEvacuateAndRestore: three members report their
// free memory; the first holds an instance, is evacuated (the instance
// moves off it and its allocations are deleted) and restored; a scriptlet
// then picks the member that reported the most free RAM. It reads every
// member's last report, and the claim is written where it chose, though
// the three members are equally empty (their scores tie) and the server
// spreads claims over ties as berthd does (claim subset size 1). Twenty
// rounds on one cloud, the reports rotated each round so that the chosen
// member changes; every other round the scriptlet is installed during
// the evacuation too, and its move goes where the scriptlet chose.
func TestScriptletTargetAfterEvacuateAndRestore(t *testing.T) {
	store := ledgertest.NewStore(t)
	s, err := buildClaims(httpapi.Config{}, claims.Config{SubsetSize: 1}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"node1", "node2", "node3"}
	var nodes []string
	for _, n := range names {
		nodes = append(nodes, ledgertest.Provider(t, store, n, resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096)))
	}
	setScriptlet := func(src any) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"instances.placement.scriptlet": src})
		wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: string(patch)}, 200, "")
	}
	// mostFree is the name among those of the member whose report is the
	// largest of free.
	mostFree := func(free []int64, among ...string) string {
		best := ""
		for i, n := range names {
			if slices.Contains(among, n) && (best == "" || free[i] > free[slices.Index(names, best)]) {
				best = n
			}
		}
		return best
	}
	claim := `{"consumer_uuid": "%s", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}%s}`
	const mib = 1 << 20
	for round := range 20 {
		// The reports (10000, 50000, 20000 MiB), rotated: round 0
		// is the issue's, where node2 has the most.
		free := make([]int64, 3)
		for i, mb := range []int64{10000, 50000, 20000} {
			free[(i+round)%3] = mb
		}
		for i, mb := range free {
			wantStatus(t, s, apiCall{method: "PUT", path: "/resource_providers/" + nodes[i] + "/state",
				body: fmt.Sprintf(`{"load_1": 0, "load_5": 0, "load_15": 0, "memory_free_mb": %d, "cpu_utilization": 0}`, mb)}, 200, "")
		}
		duringEvacuation := round%2 == 1
		if duringEvacuation {
			setScriptlet(mostFreeRAMScriptlet)
		} else {
			setScriptlet(nil)
		}

		instance := fmt.Sprintf("cccccccc-0000-4000-8000-%012d", 100+round)
		wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(claim, instance, `, "target": "node1"`)}, 200, `"root_provider_name":"node1"`)
		ev := wantStatus(t, s, apiCall{method: "POST", path: "/resource_providers/" + nodes[0] + "/evacuate", body: `{"confirm": true}`}, 200, "")
		moved, _ := ev["consumers"].([]any)
		if ev["moved"] != 1.0 || len(moved) != 1 {
			t.Fatalf("round %d: evacuation %v", round, ev)
		}
		dest := moved[0].(map[string]any)["destination"].(map[string]any)["name"]
		if want := mostFree(free, "node2", "node3"); duringEvacuation && dest != want {
			t.Errorf("round %d: the scriptlet chose %s for the evacuation's move (free %v), it went to %v", round, want, free, dest)
		}
		wantStatus(t, s, apiCall{method: "DELETE", path: "/allocations/" + instance}, 204, "")
		wantStatus(t, s, apiCall{method: "POST", path: "/resource_providers/" + nodes[0] + "/restore"}, 200, `"evacuated":false`)
		setScriptlet(mostFreeRAMScriptlet)

		want := mostFree(free, names...)
		consumer := fmt.Sprintf("cccccccc-0000-4000-8000-%012d", 200+round)
		// What the scriptlet read: every member's last report.
		dry := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(claim, consumer, `, "dry_run": true`)}, 200, "")
		var read []string
		for _, l := range dry["scriptlet_log"].([]any) {
			read = append(read, l.(map[string]any)["message"].(string))
		}
		slices.Sort(read)
		var reported []string
		for i, n := range names {
			reported = append(reported, fmt.Sprintf("free_ram %s %d", n, free[i]*mib))
		}
		if !slices.Equal(read, reported) || dry["root_provider_name"] != want {
			t.Errorf("round %d: the scriptlet read %q and chose %v; the members reported %q: want %s", round, read, dry["root_provider_name"], reported, want)
		}
		got := wantStatus(t, s, apiCall{method: "POST", path: "/claims", body: fmt.Sprintf(claim, consumer, "")}, 200, "")
		if got["root_provider_name"] != want {
			var alts []any
			for _, a := range got["alternates"].([]any) {
				alts = append(alts, a.(map[string]any)["root_provider_name"])
			}
			t.Errorf("round %d: the scriptlet chose %s (free %v); the claim went to %v (score %v), alternates %v",
				round, want, free, got["root_provider_name"], got["score"], alts)
		}
		wantStatus(t, s, apiCall{method: "DELETE", path: "/allocations/" + consumer}, 204, "")
	}
}
