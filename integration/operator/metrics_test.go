package operator

import (
	"encoding/json"
	"io"
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
// traffic (every counter even before: TestCountersFromStart).
func TestDashboardAndAlertMetrics(t *testing.T) {
	url := startSeeded(t)
	for _, p := range []string{"/ui", "/ui/hosts", "/ui/fit?resources=VCPU:1"} {
		do(t, url, "GET", p, nil)
	}
	exported := scrape(t, url)
	for n, where := range namedMetrics(t) {
		if !exported[n] {
			t.Errorf("%s, named in %v, is not in berthd's /metrics", n, where)
		}
	}
}

// TestCountersFromStart: a fresh berthd, before any request, exports
// every counter the dashboard and the alert rules name (at 0), so that
// their panels and rate() have a series from the start, and those of the
// events a healthy berthd may never see (outages, lost races, admission
// refusals, Keystone's validations) in particular. Only the counters
// labelled by each request's route and status wait for a request.
func TestCountersFromStart(t *testing.T) {
	exported := scrapeNames(t, startFresh(t))
	want := map[string][]string{}
	for n, where := range namedMetrics(t) {
		if strings.HasSuffix(n, "_total") && !perRequest[n] {
			want[n] = where
		}
	}
	for _, n := range []string{"berth_admission_queued_total", "berth_admission_rejected_total", "berth_db_unavailable_total",
		"berth_keystone_cache_hits_total", "berth_keystone_validations_total", "berth_claim_conflict_retries_total",
		"berth_claim_leases_expired_total"} {
		want[n] = append(want[n], "issue 42")
	}
	for n, where := range want {
		if !exported[n] {
			t.Errorf("%s, named in %v, is not in a fresh berthd's /metrics", n, where)
		}
	}
}

// perRequest are the counters labelled by a request's method, route and
// status: no series until a request was served.
var perRequest = map[string]bool{"berth_http_requests_total": true}

// namedMetrics are the metric names of the dashboard's panels and of the
// alert rules, with where each is named.
func namedMetrics(t *testing.T) map[string][]string {
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
	return named
}

// scrape returns the sample names of url's /metrics after the seeded
// traffic.
func scrape(t *testing.T, url string) map[string]bool {
	out := scrapeNames(t, url)
	if !out["berth_claims_total"] || !out["berth_claim_leases_expired_total"] {
		t.Fatalf("the seeded traffic left no claims or expired leases in /metrics: %v", out)
	}
	return out
}

// scrapeNames returns the sample names of url's /metrics.
func scrapeNames(t *testing.T, url string) map[string]bool {
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
