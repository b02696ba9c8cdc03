package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
)

// TestAdmissionControl holds every slot with claims whose bodies have
// not arrived yet (a claim reads its body inside its slot), then checks
// that the next expensive request waits its queue timeout and gets 503
// berth.overloaded with a Retry-After, that cheap requests pass at once
// meanwhile, and that a freed slot admits the next one.
func TestAdmissionControl(t *testing.T) {
	const slots, queueTimeout = 2, 300 * time.Millisecond
	s, err := build(Config{MaxInflightExpensive: slots, AdmissionQueueTimeout: queueTimeout}, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")

	// Hold the slots: headers and half a body, the rest withheld.
	body := `{"consumer_uuid": "not even read"}`
	var holders []net.Conn
	for range slots {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /claims HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\n\r\n%s", len(body), body[:5])
		holders = append(holders, conn)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.slots.Inflight() < slots {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slots taken after 10s", s.slots.Inflight(), slots)
		}
		time.Sleep(5 * time.Millisecond)
	}

	do := func(method, path, body string) (*http.Response, string, time.Duration) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("OpenStack-API-Version", "placement latest")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b), time.Since(start)
	}

	// Expensive: queued, then refused.
	for _, path := range []string{"/allocation_candidates?resources=VCPU:1", "/resource_providers"} {
		resp, got, took := do(http.MethodGet, path, "")
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("GET %s with every slot taken: %d, Retry-After %q: %s", path, resp.StatusCode, resp.Header.Get("Retry-After"), got)
		}
		if took < queueTimeout {
			t.Errorf("GET %s refused after %v, before its queue timeout %v", path, took, queueTimeout)
		}
		var doc struct {
			Errors []struct {
				Status int    `json:"status"`
				Code   string `json:"code"`
			} `json:"errors"`
		}
		if err := json.Unmarshal([]byte(got), &doc); err != nil || len(doc.Errors) != 1 ||
			doc.Errors[0].Code != fault.CodeOverloaded || doc.Errors[0].Status != http.StatusServiceUnavailable {
			t.Errorf("GET %s: body %s (%v), want Placement's error format with code %s", path, got, err, fault.CodeOverloaded)
		}
	}
	// Cheap: not held back.
	for _, path := range []string{"/", "/healthz", "/no_such_route"} {
		resp, got, took := do(http.MethodGet, path, "")
		if resp.StatusCode == http.StatusServiceUnavailable || took >= queueTimeout {
			t.Errorf("GET %s with every slot taken: %d after %v: %s", path, resp.StatusCode, took, got)
		}
	}

	// Free one slot: the holder's claim finishes (its body is
	// invalid), and the next expensive request is admitted: it gets the
	// answer to its own body.
	fmt.Fprint(holders[0], body[5:])
	resp, err := http.ReadResponse(bufio.NewReader(holders[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the released claim: %d", resp.StatusCode)
	}
	resp, got, _ := do(http.MethodPost, "/claims", `{}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, "JSON does not validate") {
		t.Errorf("POST /claims after a slot was freed: %d %s", resp.StatusCode, got)
	}
}

// TestAdmissionUnbounded: a negative bound turns admission control off.
func TestAdmissionUnbounded(t *testing.T) {
	s, err := build(Config{MaxInflightExpensive: -1}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.slots != nil {
		t.Fatal("admission control with MaxInflightExpensive -1")
	}
}

// TestBoundedRoutes: the route table bounds exactly the routes whose work
// grows with the cloud: candidates, claims, lists and their kin.
func TestBoundedRoutes(t *testing.T) {
	s := newBareServer(t)
	want := []string{
		"GET /allocation_candidates",
		"GET /audit",
		"GET /capacity",
		"GET /resource_providers",
		"GET /scheduling_policies/:name/balance",
		"GET /usages",
		"POST /claims",
		"POST /claims/:consumer_uuid/move",
		"POST /claims/:consumer_uuid/move/confirm",
		"POST /claims/:consumer_uuid/move/revert",
		"POST /claims/:consumer_uuid/reschedule",
		"POST /resource_providers/:uuid/evacuate",
		"POST /scriptlets/:name/test",
	}
	var got []string
	for _, r := range s.routes() {
		if r.flags&bounded != 0 {
			got = append(got, r.method+" "+r.path)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("bounded routes\n got %q\nwant %q", got, want)
	}
}
