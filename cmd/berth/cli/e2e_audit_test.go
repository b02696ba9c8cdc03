package cli

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEndToEndAudit runs berth audit against berthd: nothing to find,
// then a stale move and a split consumer (on a provider whose name holds
// a terminal escape), a --fix declined, a --fix that confirms the move
// and leaves the split consumer reported, JSON, and bad usage.
func TestEndToEndAudit(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)
	cli(t, base, 0, []string{"audit"}, "No findings.")

	const c, mig = "5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77", "6b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77"
	cli(t, base, 0, []string{"claim", "--resources", "VCPU:1", "--project", "web", "--user", "u", "--consumer", c, "--target", "cn2"},
		"Claimed on cn2 ")
	cli(t, base, 0, []string{"move", c, "--migration", mig, "--target", "cn1"}, "Claimed on cn1 ")
	// A consumer on cn2 and on a root whose name would clear the screen.
	const evil, split = "44444444-4444-4444-8444-444444444444", "7b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77"
	api(t, base, "POST", "/resource_providers", `{"name": "evil\u001b[2Jroot", "uuid": "`+evil+`"}`, 200)
	api(t, base, "PUT", "/resource_providers/"+evil+"/inventories", `{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}`, 200)
	api(t, base, "PUT", "/allocations/"+split, `{"allocations": {"`+evil+`": {"resources": {"VCPU": 1}}, "`+e2eRoot2+`": {"resources": {"DISK_GB": 5}}},
		"project_id": "web", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`, 204)

	// With the default thresholds the move is not stale yet.
	out := cli(t, base, exitFindings, []string{"audit"}, "split_consumer  "+split, "report_only",
		`cn2: DISK_GB=5; evil\x1b[2Jroot: VCPU=1`, "1 finding(s); 0 can be fixed with --fix, 1 are reported only.")
	if strings.Contains(out, "\x1b") || strings.Contains(out, "stale_migration") {
		t.Errorf("audit:\n%s", out)
	}
	out = cli(t, base, exitFindings, []string{"audit", "--migration-age", "0s"}, "stale_migration  "+mig, "confirm_move",
		"cn2: VCPU=1", "2 finding(s); 1 can be fixed with --fix, 1 are reported only.")

	// Declined: nothing changes.
	cli(t, base, exitFindings, []string{"audit", "--fix", "--migration-age", "0s"}, "Fix 1 finding(s)? [y/N] ", "Nothing fixed.")
	if again := cli(t, base, exitFindings, []string{"audit", "--migration-age", "0s"}); again != out {
		t.Errorf("a declined fix changed the audit:\n%s\nthen\n%s", out, again)
	}
	outY, errs, code := run(t, map[string]string{"BERTH_URL": base}, "y\n", "audit", "--fix", "--migration-age", "0s")
	if code != exitFindings || !strings.Contains(outY, "Fixed: stale_migration "+mig+" (confirm_move).") {
		t.Fatalf("audit --fix, answered y: exit %d\n%s%s", code, outY, errs)
	}
	// The move is confirmed: cn2 holds only the split consumer's disk.
	cli(t, base, exitRefused, []string{"move-confirm", c}, "No move in progress")
	cli(t, base, 0, []string{"providers", "--name", "cn2"}, "└─ VCPU     ░░░░░░░░░░  0%   0/4")

	out = cli(t, base, exitFindings, []string{"audit", "--kind", "split_consumer,stale_migration", "--migration-age", "0s", "-o", "json"})
	var ans struct {
		Findings []struct {
			Kind     string `json:"kind"`
			Consumer struct {
				UUID string `json:"uuid"`
			} `json:"consumer"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || len(ans.Findings) != 1 ||
		ans.Findings[0].Kind != "split_consumer" || ans.Findings[0].Consumer.UUID != split {
		t.Errorf("audit -o json: %v\n%s", err, out)
	}
	// --fix --yes with only report-only findings: nothing to do.
	cli(t, base, exitFindings, []string{"audit", "--fix", "--yes"}, "0 can be fixed")

	cli(t, base, exitRefused, []string{"audit", "--kind", "nope"}, "400 Bad Request (berth.audit.unknown_kind)")
	cli(t, base, 2, []string{"audit", "--yes"}, "--yes goes with --fix")
	cli(t, base, 2, []string{"audit", "--state-age", "soon"}, `--state-age: "soon" is not a duration`)
	cli(t, base, 2, []string{"audit", "extra"}, "unexpected arguments")

	// Moved back onto one root: nothing left.
	api(t, base, "PUT", "/allocations/"+split, `{"allocations": {"`+e2eRoot2+`": {"resources": {"DISK_GB": 5}}},
		"project_id": "web", "user_id": "u", "consumer_generation": 1, "consumer_type": "INSTANCE"}`, 204)
	cli(t, base, 0, []string{"audit", "--migration-age", "0s"}, "No findings.")
}

// TestAuditExitStatusesAsDocumented: every exit status that
// docs/operations.md's audit section, docs/cli.md's audit row and berth
// audit --help state is the one berth audit exits with in that case:
// nothing found, findings remain, the server refused, the server could
// not be reached, bad usage.
func TestAuditExitStatusesAsDocumented(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)
	actual := map[string]int{}
	env := map[string]string{"BERTH_URL": base}
	status := func(env map[string]string, args ...string) int {
		_, _, code := run(t, env, "", args...)
		return code
	}
	actual["nothing"] = status(env, "audit")
	actual["refused"] = status(env, "audit", "--kind", "nope")
	actual["usage"] = status(env, "audit", "--yes")
	actual["unreachable"] = status(map[string]string{"BERTH_URL": "http://127.0.0.1:1"}, "audit")
	const split = "7b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77"
	api(t, base, "PUT", "/allocations/"+split, `{"allocations": {"`+e2eRoot+`": {"resources": {"VCPU": 1}}, "`+e2eRoot2+`": {"resources": {"DISK_GB": 5}}},
		"project_id": "web", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`, 204)
	actual["findings"] = status(env, "audit")
	if actual["nothing"] == actual["findings"] || actual["findings"] == actual["refused"] {
		t.Fatalf("the cases are not told apart: %v", actual)
	}

	ops, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(ops)
	start, end := strings.Index(section, "## The allocation audit"), strings.Index(section, "`nova-manage placement heal_allocations`")
	if start < 0 || end < start {
		t.Fatal("docs/operations.md: no audit section")
	}
	cliDoc, err := os.ReadFile("../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(cliDoc), "\n") {
		if strings.HasPrefix(line, "| `audit ") {
			row = line[strings.Index(line, "exit "):]
		}
	}
	help, _, _ := run(t, env, "", "audit", "--help")
	for _, doc := range []struct{ name, text string }{
		{"docs/operations.md", section[start:end]},
		{"docs/cli.md", row},
		{"berth audit --help", help[strings.Index(help, "Exit status"):]},
	} {
		stated := exitStatements(doc.text)
		if len(stated) < 4 {
			t.Errorf("%s states %d exit statuses of berth audit: %v", doc.name, len(stated), stated)
		}
		for _, s := range stated {
			switch c := exitCase(s.words); {
			case c == "":
				t.Errorf("%s: exit status %d %q: which case is it?", doc.name, s.code, s.words)
			case actual[c] != s.code:
				t.Errorf("%s says %d %q: berth audit exits %d then", doc.name, s.code, s.words, actual[c])
			}
		}
	}
}

// exitStatement is one "N when CASE" of a document.
type exitStatement struct {
	code  int
	words string
}

var (
	exitStated = regexp.MustCompile(`\b(\d) (?:when |for )?([a-z][^,.;:]*)`)
)

// exitStatements are the exit statuses stated in the sentences of text
// that speak of exit statuses.
func exitStatements(text string) []exitStatement {
	text = strings.Join(strings.Fields(text), " ")
	var out []exitStatement
	for _, sentence := range strings.SplitAfter(text, ". ") {
		if !strings.Contains(strings.ToLower(sentence), "exit") {
			continue
		}
		for _, m := range exitStated.FindAllStringSubmatch(sentence, -1) {
			out = append(out, exitStatement{code: int(m[1][0] - '0'), words: strings.TrimSpace(m[2])})
		}
	}
	return out
}

// exitCase is the case of the audit a statement's words name, "" none.
func exitCase(words string) string {
	for _, c := range []struct{ key, name string }{
		{"nothing", "nothing"}, {"none", "nothing"}, {"reached", "unreachable"}, {"refused", "refused"},
		{"usage", "usage"}, {"remain", "findings"}, {"found", "findings"},
	} {
		if strings.Contains(words, c.key) {
			return c.name
		}
	}
	return ""
}
