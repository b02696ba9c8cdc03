package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/berthd/berth/cmd/berthd/daemon"
	"github.com/berthd/berth/cmd/berthd/daemon/daemontest"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// evilName is a provider name a console must show as it is, escaped:
// markup, a control character and a right-to-left override.
const evilName = "evil\x01<script>alert(1)</script>\u202e"

// startSeeded serves a berthd on a throwaway database (its lease reaper
// every 100ms) and seeds it: four hosts in two aggregates, one with a
// child provider and one named evilName, instances of two projects, a
// refused claim, a lease that runs out, a scriptlet and a policy.
func startSeeded(t *testing.T) string {
	t.Helper()
	url := startFresh(t)
	seed(t, url)
	return url
}

// startFresh serves a berthd on a throwaway database (its lease reaper
// every 100ms), with nothing in it.
func startFresh(t *testing.T) string {
	t.Helper()
	cfg := daemon.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = ledgertest.NewDB(t)
	cfg.DataDir = ""
	cfg.ClaimLeaseInterval = 100 * time.Millisecond
	quiet := slog.New(slog.DiscardHandler)
	if err := daemon.Migrate(context.Background(), cfg, quiet); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return daemontest.Serve(t, cfg, quiet)
}

// hostUUID is the uuid of seeded host i.
func hostUUID(i int) string { return fmt.Sprintf("0c0a1b2c-0000-4000-8000-%012d", i) }

func seed(t *testing.T, url string) {
	names := []string{"compute-1", "compute-2", "compute-3", evilName}
	aggs := []string{"7b1e0000-0000-4000-8000-00000000000a", "7b1e0000-0000-4000-8000-00000000000b"}
	for i, name := range names {
		u := hostUUID(i + 1)
		call(t, url, "POST", "/resource_providers", map[string]any{"uuid": u, "name": name}, 200)
		call(t, url, "PUT", "/resource_providers/"+u+"/inventories", map[string]any{
			"resource_provider_generation": 0,
			"inventories": map[string]any{
				"VCPU":      map[string]any{"total": 32, "allocation_ratio": 4},
				"MEMORY_MB": map[string]any{"total": 65536, "reserved": 2048},
				"DISK_GB":   map[string]any{"total": 1000},
			}}, 200)
		call(t, url, "PUT", "/resource_providers/"+u+"/aggregates", map[string]any{
			"resource_provider_generation": 1, "aggregates": []string{aggs[i%2]}}, 200)
		call(t, url, "PUT", "/resource_providers/"+u+"/traits", map[string]any{
			"resource_provider_generation": 2, "traits": []string{"HW_CPU_X86_AVX2"}}, 200)
	}
	child := "0c0a1b2c-0000-4000-8000-0000000000c1"
	call(t, url, "PUT", "/resource_classes/CUSTOM_GPU_A100", nil, 201)
	call(t, url, "POST", "/resource_providers", map[string]any{"uuid": child, "name": "compute-1-gpu0", "parent_provider_uuid": hostUUID(1)}, 200)
	call(t, url, "PUT", "/resource_providers/"+child+"/inventories", map[string]any{
		"resource_provider_generation": 0, "inventories": map[string]any{"CUSTOM_GPU_A100": map[string]any{"total": 4}}}, 200)
	// Instances: compute-2 is left with 10 GB of disk, VCPU and memory
	// free, and none of the m1 flavors (20 GB of disk or more) fits
	// there: fragmented.
	claims := []struct {
		project         string
		vcpu, mem, disk int
	}{{"demo", 4, 4096, 990}, {"demo", 4, 4096, 10}, {"ops", 8, 16384, 10}, {"ops", 2, 2048, 10}}
	for i, c := range claims {
		body := map[string]any{"consumer_uuid": fmt.Sprintf("00000000-1000-4000-8000-%012d", i),
			"project_id": c.project, "user_id": "u", "resources": map[string]int{"VCPU": c.vcpu, "MEMORY_MB": c.mem, "DISK_GB": c.disk}}
		if i == 0 {
			body["target"] = hostUUID(2)
		}
		call(t, url, "POST", "/claims", body, 200)
	}
	// A claim nothing can hold, and one whose lease runs out.
	call(t, url, "POST", "/claims", map[string]any{"consumer_uuid": "00000000-2000-4000-8000-000000000001",
		"project_id": "demo", "user_id": "u", "resources": map[string]int{"VCPU": 4096}}, 409)
	call(t, url, "POST", "/claims", map[string]any{"consumer_uuid": "00000000-3000-4000-8000-000000000001",
		"project_id": "ops", "user_id": "u", "resources": map[string]int{"VCPU": 1}, "lease_seconds": 1}, 200)
	put(t, url, "/scriptlets/prefer_avx2", "def instance_placement(request, candidate_members):\n    log_info(\"candidates:\", len(candidate_members))\n    return None\n", 201)
	call(t, url, "POST", "/scheduling_policies", map[string]any{"name": "spread", "description": "spread <by> free RAM",
		"weighers": []any{map[string]any{"name": "spread", "factor": 2, "params": map[string]any{"class": "MEMORY_MB"}}}}, 201)
	// A limit for ops and a shadow of spread, for the projects and
	// policies pages.
	call(t, url, "PUT", "/limits/ops", map[string]any{"limits": map[string]int{"VCPU": 40}}, 200)
	call(t, url, "PUT", "/scheduling_policies/spread/shadow", nil, 201)
	// The lease runs out: the reaper releases it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _ := do(t, url, "GET", "/allocations/00000000-3000-4000-8000-000000000001", nil)
		if status == 200 && !bytes.Contains(last, []byte("VCPU")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// last is the body of the latest do.
var last []byte

// do sends a request as admin and returns its status and body.
func do(t *testing.T, url, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement latest")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	last, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, last
}

// call is do, failing the test unless the status is want.
func call(t *testing.T, url, method, path string, body any, want int) {
	t.Helper()
	if status, b := do(t, url, method, path, body); status != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, status, want, b)
	}
}

// put sends a text/plain body.
func put(t *testing.T, url, path, text string, want int) {
	t.Helper()
	req, err := http.NewRequest("PUT", url+path, bytes.NewBufferString(text))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("PUT %s: %d, want %d: %s", path, resp.StatusCode, want, b)
	}
}
