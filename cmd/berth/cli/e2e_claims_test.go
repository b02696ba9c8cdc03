package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var claimedOn = regexp.MustCompile(`^Claimed on (cn[12]) `)

// TestEndToEndClaims runs explain, claim, reschedule and move against
// berthd, and checks the claims with berth usage and providers.
func TestEndToEndClaims(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)

	// cn1 has 14 VCPU free, cn2 4: both can take VCPU:2.
	out := cli(t, base, 0, []string{"explain", "--resources", "VCPU:2", "--name", "web-1"},
		"Dry run, nothing written: would claim on ", "Steps:", "Ranking:")
	if !strings.Contains(out, "  cn1 ") || !strings.Contains(out, "  cn2 ") {
		t.Errorf("explain ranks both roots:\n%s", out)
	}
	cli(t, base, 1, []string{"usage", "--project", "web"}, "No usage for project web.") // a dry run writes nothing

	cli(t, base, 1, []string{"explain", "--resources", "VCPU:64"}, "No valid host: nothing fits.", "VCPU")

	const c = "5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77"
	out = cli(t, base, 0, []string{"claim", "--resources", "VCPU:2", "--project", "web", "--user", "u", "--consumer", c, "--consumer-type", "INSTANCE"},
		"for consumer "+c+" (generation ")
	m := claimedOn.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("claim:\n%s", out)
	}
	first := m[1]
	cli(t, base, 0, []string{"usage", "--project", "web"}, "web      INSTANCE               1     2\n")
	// The same consumer with another request (another consumer type): not
	// a retry of the first claim. (Without a type the claim is an
	// INSTANCE's, as the first: a retry.)
	cli(t, base, 3, []string{"claim", "--resources", "VCPU:2", "--project", "web", "--user", "u", "--consumer", c,
		"--consumer-type", "MIGRATION"}, "berth.claim_mismatch", "differs in: consumer_type")

	out = cli(t, base, 0, []string{"reschedule", c})
	if m = claimedOn.FindStringSubmatch(out); m == nil || m[1] == first {
		t.Fatalf("reschedule from %s:\n%s", first, out)
	}
	second := m[1]

	const mig = "6b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77"
	cli(t, base, 0, []string{"move", c, "--migration", mig, "--target", first},
		"Claimed on "+first+" ", "Source allocations now held by migration "+mig)
	cli(t, base, 0, []string{"move-confirm", c, "--migration", mig}, "Move confirmed: consumer "+c)
	cli(t, base, 0, []string{"usage", "--project", "web"}, "web      INSTANCE               1     2\n")
	// The source was released on confirm: cn2 holds nothing again, cn1
	// only the fixture's 2 VCPU (plus the consumer's if it is there).
	want := map[string]string{"cn1": "4/16", "cn2": "0/4"}
	if second == "cn1" {
		want = map[string]string{"cn1": "2/16", "cn2": "2/4"}
	}
	checkVCPU := func(when string) {
		t.Helper()
		for name, ratio := range want {
			out := cli(t, base, 0, []string{"providers", "--name", name})
			if !regexp.MustCompile(`VCPU .* ` + ratio + `\n`).MatchString(out) {
				t.Errorf("%s, %s:\n%s\nwant VCPU %s", when, name, out, ratio)
			}
		}
	}
	checkVCPU("after the move")

	// A move to the other root, reverted: back where it was.
	cli(t, base, 0, []string{"move", c, "--migration", "new", "--target", second}, "Claimed on "+second+" ")
	cli(t, base, 0, []string{"move-revert", c}, "Move reverted: consumer "+c)
	checkVCPU("after a reverted move")
}

// TestExplainRefusalAfterFilters: when state_freshness has removed every
// host and the scriptlet, handed nothing, refuses, explain says both: the
// refusal does not hide the cause (issue 27).
func TestExplainRefusalAfterFilters(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)
	dir := t.TempDir()
	star := filepath.Join(dir, "batch.star")
	if err := os.WriteFile(star, []byte(`def instance_placement(request, candidate_members):
    for m in candidate_members:
        set_target(m.name)
        return None
    return "no half-empty host for batch"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "fresh.json")
	if err := os.WriteFile(policy, []byte(`{"name": "fresh", "scriptlet": "batch",
		"filters": [{"name": "state_freshness", "params": {"max_age": "2m"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cli(t, base, 0, []string{"scriptlet", "set", "batch", star})
	cli(t, base, 0, []string{"policy", "create", policy})
	_, errs, code := run(t, map[string]string{"BERTH_URL": base}, "", "explain", "--resources", "VCPU:1", "--policy", "fresh")
	want := "No valid host: the scriptlet refused.\n  2 providers\n  2 removed by state_freshness (no state reported: 2)\n" +
		"  then Failed instance placement scriptlet: no half-empty host for batch\n"
	if code != 1 || errs != want {
		t.Fatalf("explain: exit %d\n%s\nwant\n%s", code, errs, want)
	}
}

// TestEndToEndClaimLeases runs claim --lease, claim show, renew and
// confirm against berthd, and their refusals.
func TestEndToEndClaimLeases(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)
	const c = "7b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77"
	cli(t, base, 2, []string{"claim", "--resources", "VCPU:1", "--project", "web", "--user", "u", "--consumer", c, "--lease", "1500ms"},
		"--lease 1.5s: want whole seconds")
	cli(t, base, 3, []string{"claim", "--resources", "VCPU:1", "--project", "web", "--user", "u", "--consumer", c, "--lease", "48h"},
		"berth.invalid_lease")
	cli(t, base, 0, []string{"claim", "--resources", "VCPU:1", "--project", "web", "--user", "u", "--consumer", c, "--lease", "5m"},
		"for consumer "+c+" (generation 1)")
	cli(t, base, 0, []string{"claim", "show", c}, "Claim of consumer "+c+" (generation 1): provisional, lease of 300s, expires at ",
		"Last written by claim, on root provider ", `"lease_seconds":300`, "VCPU")
	cli(t, base, 2, []string{"claim", "renew", c}, "--lease is required")
	cli(t, base, 0, []string{"claim", "renew", c, "--lease", "10m"}, "provisional, lease of 600s", "Last written by renew")
	out := cli(t, base, 0, []string{"claim", "show", c, "-o", "json"}, `"state": "provisional"`)
	if !strings.Contains(out, `"lease_expires_at": "`) {
		t.Errorf("claim show -o json:\n%s", out)
	}
	out = cli(t, base, 0, []string{"reschedule", c}, "Reused from the consumer's stored claim: resources.")
	if !strings.Contains(out, "(generation 2)") {
		t.Errorf("reschedule:\n%s", out)
	}
	cli(t, base, 0, []string{"claim", "show", c}, "provisional, lease of 600s", "Last written by reschedule")
	cli(t, base, 0, []string{"claim", "confirm", c}, "Claim of consumer "+c+" (generation 2): permanent.", "Last written by confirm")
	cli(t, base, 3, []string{"claim", "renew", c, "--lease", "1m"}, "berth.lease_on_permanent")
	cli(t, base, 3, []string{"claim", "show", "8b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77"}, "berth.no_claim")
}
