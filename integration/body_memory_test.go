package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bounds of TestLargeBodiesMemory, in MiB of berthd's resident memory.
const (
	// maxBodyGrowthMiB bounds the peak growth while four 20 MB bodies are
	// sent at once (730 MiB before bodies were bounded, 60 after).
	maxBodyGrowthMiB = 250
	// maxBodyResidueMiB bounds what is still held a few seconds after
	// (the memory was kept for minutes).
	maxBodyResidueMiB = 64
)

// TestLargeBodiesMemory sends a real berthd four claims at once whose
// properties hold 20,000 strings of 1 KB (20 MB of JSON each), then one
// body of 50 MB, and measures berthd's resident memory: its peak (the
// kernel's VmHWM, reset before the requests) may grow by at most
// maxBodyGrowthMiB, and a few seconds after the answers it must be back
// within maxBodyResidueMiB of where it started. Every body is refused
// with Placement's 413.
func TestLargeBodiesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 130 MB of bodies to a real berthd")
	}
	b := startBerthd(t)
	pid := b.proc.Pid
	// One claim first, so that what every claim allocates once (its
	// schema, the snapshot) is in the baseline.
	b.call(t, http.MethodPost, "/claims", "", map[string]any{"consumer_uuid": "11111111-2222-3333-4444-555555555555",
		"project_id": "p", "user_id": "u", "resources": map[string]int{"VCPU": 1}, "dry_run": true})
	time.Sleep(2 * time.Second) // the return of memory after it
	base := procStatusMiB(t, pid, "VmRSS:")
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset berthd's peak resident memory: %v", err)
	}

	props := make(map[string]string, 20000)
	for i := range 20000 {
		props["k"+strconv.Itoa(i)] = strings.Repeat("x", 1024)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		body, err := json.Marshal(map[string]any{"consumer_uuid": fmt.Sprintf("11111111-2222-3333-4444-%012d", i),
			"project_id": "p", "user_id": "u", "resources": map[string]int{"VCPU": 1}, "properties": props})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			postTooLarge(t, b, body, "JSON body too large to decode")
		}()
	}
	wg.Wait()
	postTooLarge(t, b, append(append([]byte(`{"a": "`), bytes.Repeat([]byte("x"), 50<<20)...), `"}`...),
		"Request body larger than")
	peak := procStatusMiB(t, pid, "VmHWM:")
	t.Logf("berthd's resident memory: %d MiB before, peak %d MiB (+%d)", base, peak, peak-base)
	if peak-base > maxBodyGrowthMiB {
		t.Errorf("berthd grew by %d MiB while reading the bodies; the bound is %d MiB", peak-base, maxBodyGrowthMiB)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rss := procStatusMiB(t, pid, "VmRSS:")
		if rss-base <= maxBodyResidueMiB {
			t.Logf("back to %d MiB", rss)
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("berthd still holds %d MiB (%d before) 5 s after the answers", rss, base)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// postTooLarge posts body as a claim and checks the answer is Placement's
// 413 whose detail contains detail.
func postTooLarge(t *testing.T, b *berthd, body []byte, detail string) {
	req, err := http.NewRequest(http.MethodPost, b.url+"/claims", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement latest")
	resp, err := b.client.Do(req)
	if err != nil {
		t.Errorf("a body of %d bytes: %v", len(body), err)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var doc struct {
		Errors []struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
			Code   string `json:"code"`
		} `json:"errors"`
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(out, &doc) != nil || len(doc.Errors) != 1 ||
		doc.Errors[0].Status != 413 || !strings.Contains(doc.Errors[0].Detail, detail) {
		t.Errorf("a body of %d bytes: %d %.300s", len(body), resp.StatusCode, out)
	}
}

// procStatusMiB reads a field of /proc/<pid>/status given in kB, in MiB.
func procStatusMiB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s %q: %v", field, v, err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
