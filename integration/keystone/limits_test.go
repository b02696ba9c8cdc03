package keystone

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/testing/keystonetest"
)

// send sends a JSON body and answers with the status and the body.
func (b *berthd) send(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("OpenStack-API-Version", "placement latest")
	req.Header.Set("X-Auth-Token", token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(out)}
}

// TestKeystoneLimitsEnforced runs berthd with --limits-source keystone
// against a real Keystone: claims stop at a project's own limit and at the
// registered one (servers: consumers), a limit raised in Keystone applies
// once the cache's TTL has passed, the limits API shows Keystone's limits
// and refuses to change them; while Keystone cannot be reached the limits
// last read stay in force, and a project whose limits were never read is
// refused with 503.
func TestKeystoneLimitsEnforced(t *testing.T) {
	k := keystonetest.Shared(t)
	p := keystonetest.NewProxy(t, k.URL)
	name, id := k.LimitsService(t, map[string]int{"class:VCPU": 100, "servers": 3})
	demo, adminProject := k.ProjectIDs[keystonetest.DemoProject], k.ProjectIDs[keystonetest.AdminProject]
	limitID := k.ProjectLimit(t, id, demo, "class:VCPU", 8)
	cfg := keystoneConfig(t, p.URL)
	cfg.Limits.Source, cfg.Limits.KeystoneService, cfg.Limits.CacheTTL = quota.SourceKeystone, name, 2*time.Second
	b := startBerthd(t, cfg)
	admin := k.Token(t, keystonetest.Admin)
	if a := b.send(t, "POST", "/resource_providers", admin, `{"name": "cn1", "uuid": "11111111-1111-4111-8111-111111111111"}`); a.status != 200 {
		t.Fatalf("provider: %d %s", a.status, a.body)
	}
	if a := b.send(t, "PUT", "/resource_providers/11111111-1111-4111-8111-111111111111/inventories", admin,
		`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1000}, "MEMORY_MB": {"total": 100000}}}`); a.status != 200 {
		t.Fatalf("inventory: %d %s", a.status, a.body)
	}
	seq := 0
	claim := func(project string, vcpu int) answer {
		seq++
		return b.send(t, "POST", "/claims", admin, fmt.Sprintf(`{"consumer_uuid": "22222222-0000-4000-8000-%012d", "project_id": %q,
			"user_id": "u", "resources": {"VCPU": %d, "MEMORY_MB": 64}}`, seq, project, vcpu))
	}
	refused := func(a answer, detail string) {
		t.Helper()
		if st, code := errorCode(a.body); st != 403 || code != fault.CodeOverQuota || !strings.Contains(a.body, detail) {
			t.Fatalf("want 403 %s %q, got %d %s", fault.CodeOverQuota, detail, a.status, a.body)
		}
	}
	// demo's own limit: 8 VCPU.
	for range 2 {
		if a := claim(demo, 4); a.status != 200 {
			t.Fatalf("claim: %d %s", a.status, a.body)
		}
	}
	refused(claim(demo, 4), "project "+demo+": VCPU 4 requested, 8 of 8 used")
	// The admin project has the registered limits: 3 servers.
	for range 3 {
		if a := claim(adminProject, 1); a.status != 200 {
			t.Fatalf("claim: %d %s", a.status, a.body)
		}
	}
	refused(claim(adminProject, 1), "consumers 1 requested, 3 of 3 used")

	// The limits API shows Keystone's limits, with usage, and leaves
	// their changes to Keystone.
	a := b.send(t, "GET", "/limits/"+demo, admin, "")
	var shown struct {
		Resources map[string]struct {
			Limit   *int64 `json:"limit"`
			Used    int64  `json:"used"`
			Default bool   `json:"default"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(a.body), &shown); err != nil || a.status != 200 ||
		*shown.Resources["VCPU"].Limit != 8 || shown.Resources["VCPU"].Used != 8 || shown.Resources["VCPU"].Default ||
		*shown.Resources["consumers"].Limit != 3 || !shown.Resources["consumers"].Default {
		t.Fatalf("GET /limits/demo: %d %s", a.status, a.body)
	}
	if a := b.send(t, "PUT", "/limits/"+demo, admin, `{"limits": {"VCPU": 100}}`); a.status != 409 || !strings.Contains(a.body, fault.CodeLimitsReadOnly) {
		t.Fatalf("PUT /limits with keystone's limits: %d %s", a.status, a.body)
	}

	// Raised in Keystone: applies once the cache's TTL has passed.
	k.ChangeLimit(t, limitID, 12)
	deadline := time.Now().Add(time.Minute)
	for {
		a := claim(demo, 4)
		if a.status == 200 {
			break
		}
		refused(a, "VCPU 4 requested, 8 of 8 used")
		if time.Now().After(deadline) {
			t.Fatal("the raised limit did not apply within a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
	refused(claim(demo, 4), "VCPU 4 requested, 12 of 12 used")

	// Keystone out of reach: demo's limits, read before, stay in force
	// (past their TTL); a project never read is refused with 503.
	p.Fail(keystonetest.ProxyDown)
	time.Sleep(cfg.Limits.CacheTTL + 500*time.Millisecond)
	refused(claim(demo, 4), "VCPU 4 requested, 12 of 12 used")
	never := k.ProjectIDs[keystonetest.ServiceProject]
	if a := claim(never, 1); a.status != 503 || !strings.Contains(a.body, fault.CodeLimitsUnavailable) {
		t.Fatalf("a project never read, Keystone down: %d %s", a.status, a.body)
	}
	p.Fail(0)
	deadline = time.Now().Add(time.Minute)
	for a := claim(never, 1); a.status != 200; a = claim(never, 1) {
		if time.Now().After(deadline) {
			t.Fatalf("Keystone back, a claim of a new project: %d %s", a.status, a.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
