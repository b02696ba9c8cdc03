package operator

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// deployDir is the repository's deploy/ from this package.
const deployDir = "../../deploy"

// TestDashboardAndAlertMetrics: every metric the Grafana dashboard and
// the alert rules name is exported by a berthd's /metrics after some
// traffic. A few exist only once their event has happened (a database
// outage, a lost claim race, an admission refusal, Keystone traffic):
// those, in eventOnly, must instead be the name of an instrument that
// Berth's source registers.
func TestDashboardAndAlertMetrics(t *testing.T) {
	url := startSeeded(t)
	for _, p := range []string{"/ui", "/ui/hosts", "/ui/fit?resources=VCPU:1"} {
		do(t, url, "GET", p, nil)
	}
	exported := scrape(t, url)
	named := map[string][]string{}
	for _, e := range dashboardExprs(t) {
		for _, n := range metricNames(e) {
			named[n] = append(named[n], "dashboard")
		}
	}
	for _, e := range alertExprs(t) {
		for _, n := range metricNames(e) {
			named[n] = append(named[n], "alerts")
		}
	}
	if len(named) < 20 {
		t.Fatalf("only %d metric names found in the dashboard and rules: %v", len(named), named)
	}
	instruments := registeredInstruments(t)
	for n, where := range named {
		if exported[n] {
			continue
		}
		if why, ok := eventOnly[n]; ok {
			if !instruments[n] {
				t.Errorf("%s (%v, %s) is no instrument Berth registers", n, where, why)
			}
			continue
		}
		t.Errorf("%s, named in %v, is not in berthd's /metrics", n, where)
	}
}

// eventOnly are the metrics berthd exports only once something happened.
var eventOnly = map[string]string{
	"berth_db_unavailable_total":         "after a 503 berth.database_unavailable",
	"berth_claim_conflict_retries_total": "after a claim lost a race",
	"berth_admission_queued_total":       "after a request waited for a slot",
	"berth_admission_rejected_total":     "after a 503 berth.overloaded",
	"berth_keystone_validations_total":   "with --auth keystone",
	"berth_keystone_cache_hits_total":    "with --auth keystone",
}

// scrape returns the sample names of url's /metrics.
func scrape(t *testing.T, url string) map[string]bool {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		out[name] = true
	}
	if !out["berth_claims_total"] || !out["berth_claim_leases_expired_total"] {
		t.Fatalf("the seeded traffic left no claims or expired leases in /metrics: %s", b)
	}
	return out
}

// dashboardExprs are the PromQL expressions of the dashboard's panels.
func dashboardExprs(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana/berth-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

// alertExprs are the alert rules' expressions.
func alertExprs(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(deployDir, "prometheus/berth-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out
}

var (
	// selectors are label matchers and range durations ({...}, [...]).
	selectors = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]|"[^"]*"`)
	// grouping are the label lists of by (...) and without (...).
	grouping   = regexp.MustCompile(`\b(by|without)\s*\([^)]*\)`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// metricNames are the metric names in a PromQL expression: Berth's
// (berth_*) and the HTTP server histogram's.
func metricNames(expr string) []string {
	expr = grouping.ReplaceAllString(selectors.ReplaceAllString(expr, ""), "")
	var out []string
	for _, id := range identifier.FindAllString(expr, -1) {
		if strings.HasPrefix(id, "berth_") || strings.HasPrefix(id, "http_server_") {
			out = append(out, id)
		}
	}
	return out
}

// instrumentName matches an OpenTelemetry instrument name in Go source.
var instrumentName = regexp.MustCompile(`"(berth\.[a-z_.]+)", metric\.WithUnit\("([^"]*)"\)`)

// registeredInstruments are the Prometheus names of the instruments
// Berth's source registers: dots as underscores, the unit's suffix
// (seconds) and, for counters, _total (the exporter's rules).
func registeredInstruments(t *testing.T) map[string]bool {
	out := map[string]bool{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range instrumentName.FindAllStringSubmatch(string(b), -1) {
			name := strings.ReplaceAll(m[1], ".", "_")
			if m[2] == "s" {
				name += "_seconds"
			}
			out[name], out[name+"_total"] = true, true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAlertRulesPromtool: promtool finds the rule file valid and its
// unit tests (deploy/prometheus/berth-alerts.test.yml) pass.
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian package prometheus) is needed: %v", err)
	}
	dir := filepath.Join(deployDir, "prometheus")
	for _, args := range [][]string{{"check", "rules", "berth-alerts.yml"}, {"test", "rules", "berth-alerts.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
