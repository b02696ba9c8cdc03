package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs berth against base and fails the test unless it exits with
// wantCode and its output (stdout then stderr) contains every want.
func cli(t *testing.T, base string, wantCode int, args []string, wants ...string) string {
	t.Helper()
	out, errs, code := run(t, map[string]string{"BERTH_URL": base}, "", args...)
	if code != wantCode {
		t.Fatalf("berth %q: exit %d, want %d\nstdout %s\nstderr %s", args, code, wantCode, out, errs)
	}
	for _, w := range wants {
		if !strings.Contains(out+errs, w) {
			t.Errorf("berth %q: output lacks %q:\n%s%s", args, w, out, errs)
		}
	}
	return out
}

// TestEndToEndStore runs the scriptlet, policy, config, keys and state
// commands against berthd.
func TestEndToEndStore(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)
	dir := t.TempDir()
	star := filepath.Join(dir, "refuse-foo.star")
	src := "def instance_placement(request, candidate_members):\n    log_info(\"placing\", request.name)\n    if request.name == \"foo\":\n        return \"Invalid name\"\n"
	os.WriteFile(star, []byte(src), 0o644)
	bad := filepath.Join(dir, "bad.star")
	os.WriteFile(bad, []byte("def instance_placement(request, candidate_members):\n    if (:\n"), 0o644)

	cli(t, base, 0, []string{"scriptlet", "set", "refuse-foo", star}, "Scriptlet refuse-foo stored")
	cli(t, base, 3, []string{"scriptlet", "set", "bad", bad}, "400 Bad Request", "line 2")
	cli(t, base, 0, []string{"scriptlet", "list"}, "refuse-foo")
	if out := cli(t, base, 0, []string{"scriptlet", "show", "refuse-foo"}); out != src {
		t.Errorf("scriptlet show = %q, want %q", out, src)
	}
	cli(t, base, 0, []string{"scriptlet", "test", "refuse-foo", "--name", "foo"}, "Refused: ", "Invalid name", "placing foo")
	cli(t, base, 0, []string{"scriptlet", "test", "refuse-foo", "--name", "bar"}, "placing bar")

	pol := filepath.Join(dir, "p.json")
	os.WriteFile(pol, []byte(`{"name": "packer", "description": "pack VCPU", "filters": [], "weighers": [{"name": "pack", "factor": 2, "params": {"class": "VCPU"}}], "balancer": {"mode": "even", "high": 0.8, "low": 0.2}, "scriptlet": "refuse-foo"}`), 0o644)
	cli(t, base, 0, []string{"policy", "units"}, "capacity", "filter", "weigher")
	cli(t, base, 0, []string{"policy", "create", pol}, "Policy packer created.")
	cli(t, base, 0, []string{"policy", "list"}, "packer", "pack×2", "refuse-foo")
	cli(t, base, 0, []string{"policy", "show", "packer"}, "Scriptlet:    refuse-foo", "  pack       2  class=VCPU")
	cli(t, base, 0, []string{"policy", "balance", "packer"})
	cli(t, base, 3, []string{"scriptlet", "delete", "refuse-foo"}) // a policy names it
	cli(t, base, 0, []string{"policy", "delete", "packer"}, "Policy packer deleted.")
	cli(t, base, 3, []string{"policy", "show", "packer"}, "404 Not Found")
	cli(t, base, 0, []string{"scriptlet", "delete", "refuse-foo"}, "Scriptlet refuse-foo deleted.")

	cli(t, base, 0, []string{"config", "set", "instances.placement.scriptlet", "@" + star}, "set.")
	if out := cli(t, base, 0, []string{"config", "get", "instances.placement.scriptlet"}); out != src {
		t.Errorf("config get = %q", out)
	}
	cli(t, base, 3, []string{"config", "set", "instances.placement.scriptlet", "@" + bad}, "400 Bad Request")
	cli(t, base, 0, []string{"config", "unset", "instances.placement.scriptlet"}, "unset.")

	cli(t, base, 0, []string{"providers", "keys", e2eRoot, "--set", "rack=0.3", "--set", "_tier=1:sticky"},
		"_tier      1  yes", "rack     0.3  no")
	cli(t, base, 0, []string{"providers", "keys", e2eRoot}, "rack     0.3  no")
	cli(t, base, 3, []string{"providers", "state", e2eRoot}, "404 Not Found")
	api(t, base, "PUT", "/resource_providers/"+e2eRoot+"/state", `{"load_1": 0.5, "load_5": 0.7, "load_15": 0.9, "memory_free_mb": 1024, "cpu_utilization": 0.3}`, 200)
	cli(t, base, 0, []string{"providers", "state", e2eRoot}, "load_5           0.7", "memory_free_mb   1024")
}
