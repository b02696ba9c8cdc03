package cli

import (
	"strings"
	"testing"
)

// TestEndToEndLimits sets, shows and deletes a project's limits and the
// defaults with berth limits, against berthd, and sees a claim refused
// over them.
func TestEndToEndLimits(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base) // project "proj" holds VCPU 2, MEMORY_MB 512, CUSTOM_GOLD 1
	env := map[string]string{"BERTH_URL": base}
	check := func(args []string, wantCode int, want string) {
		t.Helper()
		out, errs, code := run(t, env, "", args...)
		if code != wantCode || !strings.Contains(out+errs, want) {
			t.Fatalf("berth %q: exit %d, want %d and %q:\n%s%s", args, code, wantCode, want, out, errs)
		}
	}
	check([]string{"limits", "set", "proj", "VCPU=4", "consumers=3"}, 0,
		"RESOURCE     LIMIT  USED  REMAINING  FROM\n"+
			"CUSTOM_GOLD      -     1          -\n"+
			"MEMORY_MB        -   512          -\n"+
			"VCPU             4     2          2  project\n"+
			"consumers        3     1          2  project\n")
	check([]string{"limits", "defaults", "MEMORY_MB=1024"}, 0, "RESOURCE   LIMIT\nMEMORY_MB   1024\n")
	check([]string{"limits", "show", "proj"}, 0, "MEMORY_MB     1024   512        512  default\n")
	check([]string{"limits", "show"}, 0,
		"PROJECT    RESOURCE   LIMIT\n"+
			"proj       VCPU           4\n"+
			"proj       consumers      3\n"+
			"(default)  MEMORY_MB   1024\n")
	check([]string{"claim", "--project", "proj", "--user", "user", "--resources", "VCPU:4"}, 3, "berth.over_quota")
	check([]string{"claim", "--project", "proj", "--user", "user", "--resources", "VCPU:4"}, 3, "project proj: VCPU 4 requested, 2 of 4 used")
	check([]string{"limits", "set", "proj", "VCPU=-1"}, 2, "want RESOURCE=LIMIT, a whole number from 0")
	check([]string{"limits", "set", "proj", "NOPE=1"}, 3, "Unknown resource NOPE in limits")
	check([]string{"limits", "delete", "proj"}, 0, "Limits of project proj deleted.")
	check([]string{"limits", "delete", "proj"}, 3, "No limits for project proj.")
	check([]string{"limits", "defaults", "--clear"}, 0, "No limits.")
	// A lookup that finds nothing exits 1, as its help says.
	check([]string{"limits", "show"}, 1, "No limits.")
	check([]string{"limits", "show", "nobody"}, 1, "Project nobody has no limits and holds nothing.")
	check([]string{"limits", "show", "nobody", "-o", "json"}, 1, `"resources": {}`)
	check([]string{"limits", "show", "-o", "json"}, 1, `"projects": {}`)
	check([]string{"limits", "show", "proj"}, 0, "VCPU             -     2          -")
	check([]string{"limits", "show", "--help"}, 0, "Exit status 1 when nothing is found")
	check([]string{"claim", "--project", "proj", "--user", "user", "--resources", "VCPU:4"}, 0, "")
}
