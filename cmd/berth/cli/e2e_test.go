package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/berthd/berth/cmd/berthd/daemon"
	"github.com/berthd/berth/cmd/berthd/daemon/daemontest"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// startBerthd serves berthd on a throwaway database and returns its URL.
func startBerthd(t *testing.T) string {
	t.Helper()
	cfg := daemon.Default()
	// Shadows judge every claim: with the default budget a loaded machine
	// may make a shadow drop a claim the tests count.
	cfg.ShadowBudget = 1
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = ledgertest.NewDB(t)
	cfg.DataDir = ""
	quiet := slog.New(slog.DiscardHandler)
	if err := daemon.Migrate(context.Background(), cfg, quiet); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return daemontest.Serve(t, cfg, quiet)
}

// api sends one request with admin credentials and fails the test unless
// the status is want.
func api(t *testing.T, base, method, path, body string, want int) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("OpenStack-API-Version", "placement latest")
	req.Header.Set("X-Auth-Token", "admin")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
}

const (
	e2eRoot   = "11111111-1111-4111-8111-111111111111"
	e2eChild  = "22222222-2222-4222-8222-222222222222"
	e2eRoot2  = "33333333-3333-4333-8333-333333333333"
	e2eAgg    = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	e2eHolder = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
)

// seedTree builds cn1 (VCPU 8 at ratio 2, MEMORY_MB 4096) with a child
// holding CUSTOM_GOLD 4, and cn2 (VCPU 4, DISK_GB 100 with 10 reserved);
// a consumer of project "proj" holds VCPU 2, MEMORY_MB 512 on cn1 and
// CUSTOM_GOLD 1 on the child.
func seedTree(t *testing.T, base string) {
	api(t, base, "PUT", "/resource_classes/CUSTOM_GOLD", "", 201)
	api(t, base, "POST", "/resource_providers", `{"name": "cn1", "uuid": "`+e2eRoot+`"}`, 200)
	api(t, base, "POST", "/resource_providers", `{"name": "cn1_numa0", "uuid": "`+e2eChild+`", "parent_provider_uuid": "`+e2eRoot+`"}`, 200)
	api(t, base, "POST", "/resource_providers", `{"name": "cn2", "uuid": "`+e2eRoot2+`"}`, 200)
	api(t, base, "PUT", "/resource_providers/"+e2eRoot+"/inventories", `{"resource_provider_generation": 0, "inventories": {
		"VCPU": {"total": 8, "allocation_ratio": 2.0}, "MEMORY_MB": {"total": 4096}}}`, 200)
	api(t, base, "PUT", "/resource_providers/"+e2eChild+"/inventories", `{"resource_provider_generation": 0, "inventories": {"CUSTOM_GOLD": {"total": 4}}}`, 200)
	api(t, base, "PUT", "/resource_providers/"+e2eRoot2+"/inventories", `{"resource_provider_generation": 0, "inventories": {
		"VCPU": {"total": 4}, "DISK_GB": {"total": 100, "reserved": 10}}}`, 200)
	api(t, base, "PUT", "/resource_providers/"+e2eRoot+"/aggregates", `{"resource_provider_generation": 1, "aggregates": ["`+e2eAgg+`"]}`, 200)
	api(t, base, "PUT", "/allocations/"+e2eHolder, `{"allocations": {
		"`+e2eRoot+`": {"resources": {"VCPU": 2, "MEMORY_MB": 512}},
		"`+e2eChild+`": {"resources": {"CUSTOM_GOLD": 1}}},
		"project_id": "proj", "user_id": "user", "consumer_generation": null, "consumer_type": "INSTANCE"}`, 204)
}

// TestEndToEnd runs berth's read-only subcommands and the load tool
// against berthd: capacity, usage, providers, seed and bench. Claims are
// in e2e_claims_test.go; scriptlets, policies, config, keys and state in
// e2e_store_test.go.
func TestEndToEnd(t *testing.T) {
	base := startBerthd(t)
	seedTree(t, base)
	env := map[string]string{"BERTH_URL": base}

	check := func(args []string, wantCode int, wants ...string) string {
		t.Helper()
		out, errs, code := run(t, env, "", args...)
		if code != wantCode {
			t.Fatalf("berth %q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
		for _, w := range wants {
			if !strings.Contains(out+errs, w) {
				t.Errorf("berth %q: output lacks %q:\n%s%s", args, w, out, errs)
			}
		}
		return out
	}

	out := check([]string{"providers"}, 0)
	want := "" +
		"cn1  " + e2eRoot + "\n" +
		"├─ MEMORY_MB       █▎░░░░░░░░  12%  512/4096\n" +
		"├─ VCPU            █▎░░░░░░░░  12%      2/16\n" +
		"└─ cn1_numa0  " + e2eChild + "\n" +
		"   └─ CUSTOM_GOLD  ██▌░░░░░░░  25%       1/4\n" +
		"cn2  " + e2eRoot2 + "\n" +
		"├─ DISK_GB         ░░░░░░░░░░   0%      0/90\n" +
		"└─ VCPU            ░░░░░░░░░░   0%       0/4\n"
	if out != want {
		t.Errorf("providers:\n%s\nwant\n%s", out, want)
	}
	out = check([]string{"providers", "--tree", e2eChild}, 0)
	if strings.Contains(out, "cn2") || !strings.Contains(out, "cn1_numa0") {
		t.Errorf("providers --tree:\n%s", out)
	}
	out = check([]string{"providers", "-o", "json"}, 0)
	var provs struct {
		Providers []provider `json:"resource_providers"`
	}
	if err := json.Unmarshal([]byte(out), &provs); err != nil || len(provs.Providers) != 3 {
		t.Errorf("providers -o json: %v\n%s", err, out)
	}

	// cn1 takes (16-2)/2 = 7 more of VCPU:2, cn2 4/2 = 2.
	out = check([]string{"capacity", "--resources", "VCPU:2"}, 0, "Total: 9 more of VCPU:2 fit.",
		"AGGREGATE                             FITS\n"+e2eAgg+"     7\n")
	if !strings.Contains(out, "cn1       "+e2eRoot+"     7  VCPU\n") || !strings.Contains(out, "cn2       "+e2eRoot2+"     2  VCPU\n") {
		t.Errorf("capacity:\n%s", out)
	}
	check([]string{"capacity", "--resources", "VCPU:2", "--member-of", e2eAgg}, 0, "Total: 7 more of VCPU:2 fit.")
	check([]string{"capacity", "--resources", "VCPU:64"}, 1, "No provider can take one more.", "Total: 0 more")
	check([]string{"capacity", "--resources", "NOPE:1"}, 3, "400 Bad Request", "NOPE")

	check([]string{"usage", "--project", "proj"}, 0,
		"PROJECT  CONSUMER TYPE  CONSUMERS  CUSTOM_GOLD  MEMORY_MB  VCPU\n"+
			"proj     INSTANCE               1            1        512     2\n")
	check([]string{"usage", "--project", "proj", "--user", "nobody"}, 1, "No usage for project proj.")
	check([]string{"usage"}, 0, "VCPU         ██░░░░░░░░░░░░░░░░░░  10%           2/20", "Over 3 providers.")

	// The load tool through berth: seed two nodes, then the overcommit check.
	check([]string{"seed", "--nodes", "2", "--aggregates", "1", "-q"}, 0, "seeded 2 providers")
	check([]string{"bench", "verify", "-q"}, 0, "overcommit check: OK, 5 providers")
	check([]string{"bench", "claims", "--claims", "4", "--clients", "2", "--resources", "VCPU:1", "-q"}, 0, "overcommit check: OK")
	check([]string{"bench", "nosuch"}, 2, `unknown command "nosuch"`)
	out = check([]string{"providers", "--name", "bench-cn-00001"}, 0)
	if !strings.HasPrefix(out, "bench-cn-00001  ") || strings.Count(out, "\n") != 4 {
		t.Errorf("providers --name:\n%s", out)
	}
}

// The error paths that need a live server: a refused token, a server
// that is down.
func TestEndToEndErrors(t *testing.T) {
	base := startBerthd(t)
	env := map[string]string{"BERTH_URL": base}
	_, errs, code := run(t, env, "", "--token", "", "providers")
	if code != 3 || !strings.Contains(errs, "berth providers: 401 Unauthorized") {
		t.Errorf("no token: exit %d, %q", code, errs)
	}
	_, errs, code = run(t, map[string]string{"BERTH_URL": "http://127.0.0.1:1"}, "", "providers")
	if code != 4 || !strings.Contains(errs, "cannot reach http://127.0.0.1:1") {
		t.Errorf("down: exit %d, %q", code, errs)
	}
}
