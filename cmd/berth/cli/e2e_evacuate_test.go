package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestEndToEndEvacuate plans, runs and undoes an evacuation with berth
// evacuate and berth restore against berthd, a page of moves at a time.
func TestEndToEndEvacuate(t *testing.T) {
	base := startBerthd(t)
	for _, n := range []string{"ev-a", "ev-b"} {
		api(t, base, "POST", "/resource_providers", `{"name": "`+n+`"}`, 200)
	}
	cli(t, base, 0, []string{"providers", "--name", "ev-a"})
	var uuids []string
	for _, n := range []string{"ev-a", "ev-b"} {
		out := cli(t, base, 0, []string{"providers", "--name", n})
		uuids = append(uuids, strings.Fields(out)[1])
		api(t, base, "PUT", "/resource_providers/"+uuids[len(uuids)-1]+"/inventories",
			`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}`, 200)
	}
	for i := 1; i <= 5; i++ {
		cli(t, base, 0, []string{"claim", "--resources", "VCPU:1", "--project", "p", "--user", "u", "--target", "ev-a",
			"--name", fmt.Sprintf("vm%d", i), "--consumer", fmt.Sprintf("eeeeeeee-0000-4000-8000-00000000000%d", i)}, "Claimed on ev-a ")
	}

	// Planned: five consumers, two pages of four (--parallel 1).
	out := cli(t, base, 0, []string{"evacuate", "ev-a", "--dry-run", "--parallel", "1"},
		"ev-a evacuation planned (not evacuated): 0 moved, 5 planned, 0 failed, 0 skipped.")
	if strings.Count(out, "planned") != 7 || strings.Count(out, "ev-b") != 5 || !strings.Contains(out, "vm5") {
		t.Errorf("dry run:\n%s", out)
	}
	cli(t, base, 0, []string{"usage", "--project", "p"}, "p        INSTANCE               5     5\n")
	// LXD's modes: stop moves none (not a failure: exit 0), a bad one is
	// the server's 400.
	cli(t, base, 0, []string{"evacuate", "ev-a", "--dry-run", "--mode", "stop"},
		"ev-a evacuation planned (not evacuated): 0 moved, 0 planned, 0 failed, 5 skipped.")
	cli(t, base, 3, []string{"evacuate", "ev-a", "--dry-run", "--mode", "heal"}, "400 Bad Request")

	out = cli(t, base, 0, []string{"evacuate", uuids[0], "--parallel", "1", "--confirm"},
		"ev-a evacuated: 5 moved, 0 planned, 0 failed, 0 skipped.")
	if strings.Count(out, "moved") != 6 || strings.Count(out, "confirmed") != 5 || strings.Count(out, "ev-b") != 5 {
		t.Errorf("evacuation:\n%s", out)
	}
	cli(t, base, 0, []string{"providers", "--name", "ev-a"}, "0/8")
	cli(t, base, 0, []string{"providers", "--name", "ev-b"}, "5/8")
	// New claims avoid it; nothing is left to move.
	cli(t, base, 1, []string{"claim", "--resources", "VCPU:1", "--project", "p", "--user", "u", "--target", "ev-a"}, "1 evacuated")
	cli(t, base, 0, []string{"evacuate", "ev-a", "-o", "json"}, `"evacuated": true`, `"consumers": []`)

	cli(t, base, 0, []string{"restore", "ev-a"}, "ev-a restored: claims may place on it again.")
	cli(t, base, 3, []string{"restore", "ev-a"}, "409 Conflict", "is not evacuated")
	cli(t, base, 0, []string{"claim", "--resources", "VCPU:1", "--project", "p", "--user", "u", "--target", "ev-a"}, "Claimed on ev-a ")

	// What cannot move is listed, and the exit status says so: ev-b has
	// room for the one, not for the other.
	cli(t, base, 0, []string{"claim", "--resources", "VCPU:4", "--project", "p", "--user", "u", "--target", "ev-a", "--name", "big"}, "Claimed on ev-a ")
	out = cli(t, base, 1, []string{"evacuate", "ev-a"}, "lacked VCPU 4",
		"ev-a evacuated: 1 moved, 0 planned, 1 failed, 0 skipped.")
	if !strings.Contains(out, "big   failed") || !strings.Contains(out, "source held by migration ") {
		t.Errorf("partial evacuation:\n%s", out)
	}
	cli(t, base, 1, []string{"evacuate", "nope"}, `no resource provider named "nope"`)
	cli(t, base, 2, []string{"evacuate", "ev-a", "--parallel", "0"}, "--parallel must be 1 to 32")
}

// TestEndToEndEvacuateThenConfirm: berth evacuate counts the same
// whatever --parallel (and so the page size), never its own migration
// consumers as skipped; berth evacuate --confirm then confirms the moves
// it made and says how many.
func TestEndToEndEvacuateThenConfirm(t *testing.T) {
	base := startBerthd(t)
	for _, n := range []string{"ev-a", "ev-b", "ev-c", "ev-d"} {
		api(t, base, "POST", "/resource_providers", `{"name": "`+n+`"}`, 200)
		uuid := strings.Fields(cli(t, base, 0, []string{"providers", "--name", n}))[1]
		api(t, base, "PUT", "/resource_providers/"+uuid+"/inventories",
			`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 32}}}`, 200)
	}
	// Low uuids: the evacuations' migration consumers sort after them,
	// into the later pages.
	for i, host := range []string{"ev-a", "ev-b"} {
		for j := 1; j <= 9; j++ {
			cli(t, base, 0, []string{"claim", "--resources", "VCPU:1", "--project", "p", "--user", "u", "--target", host,
				"--consumer", fmt.Sprintf("00000000-0000-4000-8000-0000000000%d%d", i, j)}, "Claimed on "+host+" ")
		}
	}
	cli(t, base, 0, []string{"evacuate", "ev-a", "--parallel", "1"}, "ev-a evacuated: 9 moved, 0 planned, 0 failed, 0 skipped.")
	cli(t, base, 0, []string{"evacuate", "ev-b", "--parallel", "8"}, "ev-b evacuated: 9 moved, 0 planned, 0 failed, 0 skipped.")
	cli(t, base, 0, []string{"providers", "--name", "ev-a"}, "9/32")
	// The bulk way out: each move confirmed, the sources dropped.
	out := cli(t, base, 0, []string{"evacuate", "ev-a", "--confirm", "--parallel", "1"},
		"ev-a evacuated: 0 moved, 0 planned, 0 failed, 0 skipped; 9 earlier moves confirmed.")
	if strings.Count(out, "confirmed") != 10 {
		t.Errorf("confirmed:\n%s", out)
	}
	cli(t, base, 0, []string{"providers", "--name", "ev-a"}, "0/32")
	cli(t, base, 0, []string{"evacuate", "ev-a", "--confirm"}, "ev-a evacuated: 0 moved, 0 planned, 0 failed, 0 skipped.")
	cli(t, base, 0, []string{"providers", "--name", "ev-b"}, "9/32")
}
