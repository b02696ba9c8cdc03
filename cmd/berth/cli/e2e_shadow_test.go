package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestEndToEndShadows: berth scriptlet shadow start|show|stop and berth
// policy shadow ... against berthd, with the report as a table and as
// JSON, and the refusals as exit 3 with the server's words.
func TestEndToEndShadows(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)
	env := map[string]string{"BERTH_URL": base}
	check := func(args []string, wantCode int, wants ...string) string {
		t.Helper()
		return cli(t, base, wantCode, args, wants...)
	}
	_, _, code := run(t, env, "def instance_placement(request, candidate_members):\n    if request.name == \"foo\":\n        return \"Invalid name\"\n    set_target(\"cn2\")\n",
		"scriptlet", "set", "to-cn2", "-")
	if code != 0 {
		t.Fatalf("scriptlet set: exit %d", code)
	}
	api(t, base, "POST", "/scheduling_policies", `{"name": "pack", "weighers": [{"name": "pack"}]}`, 201)

	check([]string{"scriptlet", "shadow", "start", "nope"}, 3, "404", "No scriptlet named nope")
	check([]string{"scriptlet", "shadow", "start", "to-cn2"}, 0, "Shadow of scriptlet to-cn2 started.")
	check([]string{"scriptlet", "shadow", "start", "to-cn2"}, 3, "409", "already running")
	check([]string{"policy", "shadow", "start", "pack"}, 0, "Shadow of scheduling policy pack started.")
	check([]string{"scriptlet", "shadow", "start"}, 2)

	check([]string{"claim", "--resources", "VCPU:1", "--project", "proj", "--user", "u", "--name", "web-1",
		"--consumer", "44444444-4444-4444-8444-444444444444"}, 0, "Claimed on")
	check([]string{"claim", "--resources", "VCPU:1", "--project", "proj", "--user", "u", "--name", "foo",
		"--consumer", "55555555-5555-4555-8555-555555555555"}, 0, "Claimed on")

	// Shadows judge after the claim is answered, and a report waits only
	// a second for the claims still queued: on a loaded machine the
	// second claim may be judged later.
	for _, args := range [][]string{{"scriptlet", "shadow", "show", "to-cn2"}, {"policy", "shadow", "show", "pack"}} {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out, _, _ := run(t, env, "", args...); strings.Contains(out, "seen                        2\n") {
				break
			}
		}
	}
	out := check([]string{"scriptlet", "shadow", "show", "to-cn2"}, 0, "Shadow of scriptlet to-cn2, since ",
		"would refuse                1  50.0%", "    1  Invalid name")
	if !strings.Contains(out, "seen                        2\n") {
		t.Errorf("show:\n%s", out)
	}
	out = check([]string{"scriptlet", "shadow", "show", "to-cn2", "-o", "json"}, 0)
	var rep shadowReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.ClaimsSeen != 2 || rep.WouldRefuse != 1 || rep.Agreed+rep.Disagreed != 1 {
		t.Errorf("show -o json: %v\n%s", err, out)
	}
	if rep.Disagreed == 1 && (len(rep.Disagreements) != 1 || *rep.Disagreements[0].Shadow.RootName != "cn2") {
		t.Errorf("disagreements %+v", rep.Disagreements)
	}
	check([]string{"policy", "shadow", "show", "pack"}, 0, "Shadow of policy pack", "seen                        2\n")

	check([]string{"scriptlet", "shadow", "stop", "to-cn2"}, 0, "Shadow of scriptlet to-cn2 stopped.")
	check([]string{"scriptlet", "shadow", "show", "to-cn2"}, 3, "404", "No shadow of scriptlet to-cn2 is running")
	check([]string{"policy", "shadow", "stop", "pack"}, 0, "stopped")
	check([]string{"policy", "shadow", "stop", "pack"}, 3, "404")
}
