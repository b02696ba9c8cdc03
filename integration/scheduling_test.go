package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/ledgertest"
)

// TestScriptletChangeReachesEveryReplica runs two berthd processes on one
// database, changes a scriptlet through one, and checks that the next dry
// run through the other uses the new code: the replicas' compiled caches
// follow PostgreSQL notifications, not only their own writes.
func TestScriptletChangeReachesEveryReplica(t *testing.T) {
	bin := buildBerthd(t)
	dbURL := ledgertest.NewDB(t)
	a, err := tryStartBerthd(t, bin, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tryStartBerthd(t, bin, dbURL)
	if err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"cn1", "cn2"} {
		var rp struct {
			UUID string `json:"uuid"`
		}
		a.must(t, http.StatusOK, "POST", "/resource_providers", "", map[string]any{"name": name}, &rp)
		a.must(t, http.StatusOK, "PUT", "/resource_providers/"+rp.UUID+"/inventories", "", map[string]any{
			"resource_provider_generation": 0,
			"inventories":                  map[string]any{"VCPU": map[string]any{"total": 8}},
		}, nil)
	}

	version := func(n int, target string) string {
		return "def instance_placement(request, candidate_members):\n" +
			"    log_info(\"version " + string(rune('0'+n)) + "\")\n" +
			"    set_target(\"" + target + "\")\n"
	}
	// The test through b of what a wrote: poll until b answers with the
	// code of version n (or the bound, only reached when b never learns).
	waitFor := func(n int, target string) {
		t.Helper()
		start := time.Now()
		deadline := start.Add(10 * time.Second)
		var last string
		for {
			status, raw := b.call(t, "POST", "/scriptlets/pick/test", "", map[string]any{"name": "web", "resources": map[string]int{"VCPU": 1}})
			var out struct {
				Decision struct {
					TargetName *string `json:"target_name"`
				} `json:"decision"`
				Log []struct{ Message string } `json:"log"`
			}
			if status == http.StatusOK && json.Unmarshal(raw, &out) == nil && out.Decision.TargetName != nil &&
				*out.Decision.TargetName == target && len(out.Log) == 1 && strings.HasSuffix(out.Log[0].Message, string(rune('0'+n))) {
				t.Logf("replica b ran version %d %v after a stored it", n, time.Since(start))
				return
			}
			last = string(raw)
			if time.Now().After(deadline) {
				t.Fatalf("replica b still does not run version %d of the scriptlet: %d %s", n, status, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	putScriptlet(t, a, "pick", version(1, "cn1"))
	waitFor(1, "cn1")
	putScriptlet(t, a, "pick", version(2, "cn2"))
	waitFor(2, "cn2")

	// The default scriptlet (/config, as in LXD) changed through a: the
	// next real claim through b runs it. Until b has learnt of it (the
	// bound is only reached when it never does), b places "foo" like any
	// other name, on a consumer of its own each time.
	a.must(t, http.StatusOK, "PATCH", "/config", "", map[string]any{"instances.placement.scriptlet": "def instance_placement(request, candidate_members):\n" +
		"    if request.name == \"foo\":\n" +
		"        return \"Invalid name\"\n"}, nil)
	claim := func(n int, name string) (int, string) {
		status, raw := b.call(t, "POST", "/claims", "latest", map[string]any{
			"consumer_uuid": fmt.Sprintf("c0000000-0000-4000-8000-%012d", n), "project_id": "p", "user_id": "u",
			"name": name, "resources": map[string]int{"VCPU": 1}})
		return status, string(raw)
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := 1; ; n++ {
		status, raw := claim(n, "foo")
		if status == http.StatusConflict && strings.Contains(raw, "berth.no_valid_host") &&
			strings.Contains(raw, "Failed instance placement scriptlet: Invalid name") {
			break
		}
		if status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("claim %d of foo through b: %d %s", n, status, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, raw := claim(1000, "bar"); status != http.StatusOK {
		t.Errorf("claim of bar through b: %d %s", status, raw)
	}

	// A policy naming the scriptlet, written through b, is checked
	// against b's cache; deleting the scriptlet through a is refused.
	b.must(t, http.StatusCreated, "PUT", "/scheduling_policies/p", "", map[string]any{"scriptlet": "pick"}, nil)
	if status, raw := a.call(t, "DELETE", "/scriptlets/pick", "", nil); status != http.StatusConflict {
		t.Errorf("delete of a scriptlet in use: %d %s", status, raw)
	}
}

// putScriptlet stores src under name through b.
func putScriptlet(t *testing.T, b *berthd, name, src string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PUT", b.url+"/scriptlets/"+name, strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "text/plain")
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT /scriptlets/%s: %d %s", name, resp.StatusCode, body)
	}
}
