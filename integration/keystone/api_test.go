package keystone

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthd/berth/cmd/berthd/daemon"
	"github.com/berthd/berth/cmd/berthd/daemon/daemontest"
	"github.com/berthd/berth/internal/testing/keystonetest"
	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger/ledgertest"
)

// One Keystone and one PostgreSQL serve every test of the package.
func TestMain(m *testing.M) { os.Exit(keystonetest.Run(m, ledgertest.Run)) }

// berthd is an in-process berthd with --auth keystone.
type berthd struct {
	url  string
	logs *proctest.Buffer
}

// keystoneConfig is berthd's configuration with auth keystone against
// authURL as the placement user, policy secure, on a fresh database.
func keystoneConfig(t *testing.T, authURL string) daemon.Config {
	cfg := daemon.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = ledgertest.NewDB(t)
	cfg.DataDir = ""
	cfg.MetricsListen = daemon.MetricsOff
	cfg.LogLevel = "debug"
	cfg.Policy = "secure"
	cfg.Auth = "keystone"
	cfg.Keystone.AuthURL = authURL
	cfg.Keystone.Username = keystonetest.Placement
	cfg.Keystone.Password = keystonetest.Password(keystonetest.Placement)
	cfg.Keystone.ProjectName = keystonetest.ServiceProject
	cfg.Keystone.Timeout = time.Minute // a loaded machine's Keystone can be slow
	return cfg
}

// startBerthd serves cfg until the test ends.
func startBerthd(t *testing.T, cfg daemon.Config) *berthd {
	t.Helper()
	logs := &proctest.Buffer{}
	log := cfg.NewLogger(logs)
	t.Cleanup(func() {
		if t.Failed() {
			out := logs.String()
			t.Logf("berthd's log (the end):\n%s", out[max(0, len(out)-6000):])
		}
	})
	return &berthd{url: daemontest.Serve(t, cfg, log), logs: logs}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (b *berthd) do(t *testing.T, method, path, token string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("OpenStack-API-Version", "placement latest")
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(body)}
}

// errorCode is the code of a Placement error body, "" if it is none.
func errorCode(body string) (int, string) {
	var e struct {
		Errors []struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || len(e.Errors) != 1 {
		return 0, ""
	}
	return e.Errors[0].Status, e.Errors[0].Code
}

// TestAPI: berthd with --auth keystone answers 401 with Keystone's
// challenge for a missing or bad token, serves the probes and version
// document without one, enforces the secure policy on Keystone's
// identities, validates one new token once for 200 concurrent requests,
// answers 503 (never 401) while Keystone is out of reach but keeps serving
// cached tokens, recovers, and never logs a token or the password.
func TestAPI(t *testing.T) {
	k := keystonetest.Shared(t)
	p := keystonetest.NewProxy(t, k.URL)
	b := startBerthd(t, keystoneConfig(t, p.URL))

	for _, path := range []string{"/", "/healthz", "/readyz"} {
		if a := b.do(t, "GET", path, ""); a.status != 200 {
			t.Errorf("GET %s without a token: %d %s", path, a.status, a.body)
		}
	}
	challenge := `Keystone uri="` + p.URL + `"`
	for _, tok := range []string{"", "not-a-token", "gAAAAABbogus"} {
		a := b.do(t, "GET", "/resource_providers", tok)
		// keystonemiddleware's body and headers: no version, no Vary.
		var km struct {
			Error struct {
				Code           int
				Title, Message string
			}
		}
		_ = json.Unmarshal([]byte(a.body), &km)
		if a.status != 401 || km.Error.Code != 401 || km.Error.Title != "Unauthorized" ||
			km.Error.Message != "The request you have made requires authentication." ||
			a.header.Get("WWW-Authenticate") != challenge || a.header.Get("OpenStack-API-Version") != "" || a.header.Get("Vary") != "" {
			t.Errorf("token %q: %d %q %v %s", tok, a.status, a.header.Get("WWW-Authenticate"), a.header, a.body)
		}
	}

	admin, svc := k.Token(t, keystonetest.Admin), k.Token(t, keystonetest.Placement)
	reader, sysReader := k.Token(t, keystonetest.Reader), k.Token(t, keystonetest.SystemReader)
	demo := k.ProjectIDs[keystonetest.DemoProject]
	for _, tc := range []struct {
		who, token, method, path string
		want                     int
	}{
		{"admin", admin, "GET", "/resource_providers", 200},
		{"admin", admin, "PUT", "/traits/CUSTOM_KEYSTONE", 201},
		{"service", svc, "GET", "/resource_providers", 200},
		{"reader", reader, "GET", "/resource_providers", 403},
		{"reader", reader, "PUT", "/traits/CUSTOM_READER", 403},
		{"reader", reader, "GET", "/usages?project_id=" + demo, 200},
		{"reader", reader, "GET", "/usages?project_id=" + k.ProjectIDs[keystonetest.AdminProject], 403},
		{"system reader", sysReader, "GET", "/usages?project_id=" + demo, 403},
		{"system reader", sysReader, "GET", "/resource_providers", 403},
	} {
		if a := b.do(t, tc.method, tc.path, tc.token); a.status != tc.want {
			t.Errorf("%s %s %s: %d, want %d: %s", tc.who, tc.method, tc.path, a.status, tc.want, a.body)
		}
	}
	// A service token that is not valid fails the request.
	if a := b.do(t, "GET", "/resource_providers", admin, "X-Service-Token", "bogus-service-token"); a.status != 401 {
		t.Errorf("bad X-Service-Token: %d %s", a.status, a.body)
	}
	if a := b.do(t, "GET", "/resource_providers", admin, "X-Service-Token", svc); a.status != 200 {
		t.Errorf("with X-Service-Token: %d %s", a.status, a.body)
	}

	// 200 concurrent requests with one new token: one validation.
	fresh := k.Token(t, keystonetest.Placement)
	before := p.Validations()
	var wg sync.WaitGroup
	statuses := make(chan int, 200)
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", b.url+"/resource_providers", nil)
			req.Header.Set("X-Auth-Token", fresh)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Errorf("concurrent request: %d", s)
			break
		}
	}
	if n := p.Validations() - before; n != 1 {
		t.Errorf("200 concurrent requests with one new token: %d validations, want 1", n)
	}

	// Keystone out of reach (connections dropped, then 502): cached
	// tokens still work, new ones get 503 with Retry-After, never 401.
	for _, mode := range []int32{keystonetest.ProxyDown, 502} {
		p.Fail(mode)
		if a := b.do(t, "GET", "/resource_providers", admin); a.status != 200 {
			t.Errorf("outage %d, cached token: %d %s", mode, a.status, a.body)
		}
		newTok := k.Token(t, keystonetest.Member)
		a := b.do(t, "GET", "/usages?project_id="+demo, newTok)
		if status, code := errorCode(a.body); a.status != 503 || status != 503 || code != "berth.identity_unavailable" ||
			a.header.Get("Retry-After") == "" {
			t.Errorf("outage %d, new token: %d Retry-After %q %s", mode, a.status, a.header.Get("Retry-After"), a.body)
		}
		if a := b.do(t, "GET", "/readyz", ""); a.status != 503 || !strings.Contains(a.body, "keystone") {
			t.Errorf("outage %d, /readyz: %d %s", mode, a.status, a.body)
		}
		if a := b.do(t, "GET", "/healthz", ""); a.status != 200 {
			t.Errorf("outage %d, /healthz: %d", mode, a.status)
		}
	}
	p.Fail(0)
	if a := b.do(t, "GET", "/usages?project_id="+demo, k.Token(t, keystonetest.Member)); a.status != 200 {
		t.Errorf("after the outage: %d %s", a.status, a.body)
	}
	if a := b.do(t, "GET", "/readyz", ""); a.status != 200 {
		t.Errorf("/readyz after the outage: %d %s", a.status, a.body)
	}

	logs := b.logs.String()
	for _, secret := range []string{admin, svc, reader, sysReader, fresh, keystonetest.Password(keystonetest.Placement)} {
		if strings.Contains(logs, secret) {
			t.Errorf("berthd logged a token or the password")
		}
	}
	if !strings.Contains(logs, "status=503") {
		t.Errorf("the outage's 503 is not in the log:\n%s", logs)
	}
}

// TestWrongServiceCredentials: berthd refuses to start, in one line.
func TestWrongServiceCredentials(t *testing.T) {
	k := keystonetest.Shared(t)
	cfg := keystoneConfig(t, k.URL)
	cfg.Keystone.Password = "not-the-password"
	_, err := daemon.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "refused") ||
		strings.Contains(err.Error(), cfg.Keystone.Password) {
		t.Fatalf("err = %v, want one line saying the credentials were refused", err)
	}
	t.Logf("berthd: %v", err)
}

// TestOpenStackClient: the official client, with password auth through
// Keystone's catalog (Berth registered as the placement endpoint), runs a
// session as the admin; as the project reader writes are refused with 403
// and reads are as the secure policy says.
func TestOpenStackClient(t *testing.T) {
	if _, err := exec.LookPath("openstack"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("openstack client: %v (apt-get install python3-openstackclient python3-osc-placement)", err)
		}
		t.Skip(err)
	}
	k := keystonetest.Shared(t)
	b := startBerthd(t, keystoneConfig(t, k.URL))
	k.RegisterPlacement(t, b.url)
	home := t.TempDir()
	osc := func(user string, args ...string) (string, error) {
		cmd := exec.Command("openstack", args...)
		env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
			"OS_AUTH_URL=" + k.URL, "OS_IDENTITY_API_VERSION=3", "OS_INTERFACE=public", "OS_REGION_NAME=RegionOne",
			"OS_USERNAME=" + user, "OS_PASSWORD=" + keystonetest.Password(user),
			"OS_USER_DOMAIN_NAME=" + keystonetest.Domain, "OS_PLACEMENT_API_VERSION=1.29"}
		if user == keystonetest.SystemReader {
			env = append(env, "OS_SYSTEM_SCOPE=all")
		} else {
			project := keystonetest.DemoProject
			if user == keystonetest.Admin {
				project = keystonetest.AdminProject
			}
			env = append(env, "OS_PROJECT_NAME="+project, "OS_PROJECT_DOMAIN_NAME="+keystonetest.Domain)
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(user string, args ...string) string {
		t.Helper()
		out, err := osc(user, args...)
		if err != nil {
			t.Fatalf("%s: openstack %s: %v\n%s", user, strings.Join(args, " "), err, out)
		}
		return out
	}
	refused := func(user string, args ...string) {
		t.Helper()
		out, err := osc(user, args...)
		if err == nil || !strings.Contains(out, "403") {
			t.Errorf("%s: openstack %s: want 403, got err %v:\n%s", user, strings.Join(args, " "), err, out)
		}
	}

	var rp struct{ UUID string }
	if err := json.Unmarshal([]byte(must(keystonetest.Admin, "resource", "provider", "create", "cn-keystone", "-f", "json")), &rp); err != nil || rp.UUID == "" {
		t.Fatalf("provider create: %v %+v", err, rp)
	}
	must(keystonetest.Admin, "resource", "provider", "inventory", "set", rp.UUID,
		"--resource", "VCPU=8", "--resource", "MEMORY_MB=8192", "-f", "json")
	if out := must(keystonetest.Admin, "allocation", "candidate", "list", "--resource", "VCPU=2", "-f", "json"); !strings.Contains(out, rp.UUID) {
		t.Errorf("candidates lack %s:\n%s", rp.UUID, out)
	}
	if out := must(keystonetest.Admin, "resource", "provider", "usage", "show", rp.UUID, "-f", "json"); !strings.Contains(out, "VCPU") {
		t.Errorf("usages:\n%s", out)
	}
	demo := k.ProjectIDs[keystonetest.DemoProject]
	must(keystonetest.Admin, "resource", "usage", "show", demo, "-f", "json")

	refused(keystonetest.Reader, "resource", "provider", "create", "cn-reader")
	refused(keystonetest.Reader, "resource", "provider", "inventory", "set", rp.UUID, "--resource", "VCPU=1")
	refused(keystonetest.Reader, "resource", "provider", "list")
	must(keystonetest.Reader, "resource", "usage", "show", demo, "-f", "json")
	refused(keystonetest.Reader, "resource", "usage", "show", k.ProjectIDs[keystonetest.AdminProject])
	refused(keystonetest.SystemReader, "resource", "provider", "list")
}
