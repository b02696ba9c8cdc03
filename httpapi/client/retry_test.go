package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/berthd/berth/httpapi/client"
)

// faultyProxy forwards to the server at target, but lets fault answer (or
// break) the request first: fault returns true when it did.
func faultyProxy(t *testing.T, target string, fault func(w http.ResponseWriter, r *http.Request, n int64) bool) (string, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fault(w, r, n.Add(1)) {
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// cut drops the client's connection without an answer.
func cut(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	conn.Close()
}

// TestClaimRetriedWhenTheAnswerIsLost: the first claim reaches Berth and
// is written, but its answer is lost; the client sends it again and gets
// the first one's outcome, and the consumer holds the claim once.
func TestClaimRetriedWhenTheAnswerIsLost(t *testing.T) {
	berth := serve(t)
	direct := client.New(client.Config{URL: berth, Token: "admin"})
	h1 := host(t, direct, "compute-1", 16, 65536)
	host(t, direct, "compute-2", 16, 65536)

	proxy, sent := faultyProxy(t, berth, func(w http.ResponseWriter, r *http.Request, n int64) bool {
		if n != 1 {
			return false
		}
		// Forward the first request, then lose its answer.
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest(r.Method, berth+r.URL.RequestURI(), bytesReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("first claim: %d", resp.StatusCode)
			}
		}
		cut(t, w)
		return true
	})
	c := client.New(client.Config{URL: proxy, Token: "admin"})
	claim, err := c.Claim(context.Background(), client.ClaimRequest{ConsumerUUID: "c0000000-0000-4000-8000-000000000001",
		ProjectID: "demo", UserID: "alice", Resources: map[string]int64{"VCPU": 4, "MEMORY_MB": 1024}, Target: "compute-1"})
	if err != nil {
		t.Fatal(err)
	}
	if sent.Load() != 2 || claim.RootProviderUUID != h1 || claim.Allocations[h1].Resources["VCPU"] != 4 {
		t.Errorf("%d sends; claim %+v", sent.Load(), claim)
	}
	u, err := direct.ProviderUsages(context.Background(), h1)
	if err != nil {
		t.Fatal(err)
	}
	if u["VCPU"] != 4 || u["MEMORY_MB"] != 1024 {
		t.Errorf("compute-1's usages %v: the claim was written twice, or not at all", u)
	}
}

// TestRetries: a claim answered 503 is sent again (up to ClaimRetries
// times, and then the 503 is the error); no other request is, nor is a
// claim when ClaimRetries is negative.
func TestRetries(t *testing.T) {
	berth := serve(t)
	host(t, client.New(client.Config{URL: berth, Token: "admin"}), "compute-1", 16, 65536)
	busy := func(until int64) func(w http.ResponseWriter, r *http.Request, n int64) bool {
		return func(w http.ResponseWriter, r *http.Request, n int64) bool {
			if n > until {
				return false
			}
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"errors": [{"status": 503, "title": "Service Unavailable", "detail": "busy", "code": "berth.database_unavailable"}]}`)
			return true
		}
	}
	ctx := context.Background()
	req := client.ClaimRequest{ConsumerUUID: "c0000000-0000-4000-8000-000000000002", ProjectID: "demo", UserID: "alice",
		Resources: map[string]int64{"VCPU": 1}}

	proxy, sent := faultyProxy(t, berth, busy(2))
	if _, err := client.New(client.Config{URL: proxy, Token: "admin"}).Claim(ctx, req); err != nil || sent.Load() != 3 {
		t.Errorf("after two 503s: %v, %d sends", err, sent.Load())
	}

	proxy, sent = faultyProxy(t, berth, busy(10))
	_, err := client.New(client.Config{URL: proxy, Token: "admin", ClaimRetries: 2}).Claim(ctx, req)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code() != "berth.database_unavailable" || sent.Load() != 3 {
		t.Errorf("503 every time, 2 retries: %v, %d sends", err, sent.Load())
	}

	proxy, sent = faultyProxy(t, berth, busy(10))
	if _, err := client.New(client.Config{URL: proxy, Token: "admin", ClaimRetries: -1}).Claim(ctx, req); !client.IsStatus(err, 503) || sent.Load() != 1 {
		t.Errorf("no retries: %v, %d sends", err, sent.Load())
	}

	proxy, sent = faultyProxy(t, berth, busy(10))
	err = client.New(client.Config{URL: proxy, Token: "admin"}).PutAllocations(ctx, "c0000000-0000-4000-8000-000000000003",
		client.Allocations{Allocations: map[string]client.Resources{}, ProjectID: "demo", UserID: "alice"})
	if !client.IsStatus(err, 503) || sent.Load() != 1 {
		t.Errorf("PUT /allocations: %v, %d sends", err, sent.Load())
	}
}

func TestIsClaimWrite(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/claims", true},
		{"POST", "/claims?x=1", true},
		{"POST", "/claims/c1/reschedule", true},
		{"POST", "/claims/c1/move", true},
		{"POST", "/claims/c1/move/confirm", true},
		{"POST", "/claims/c1/move/revert", true},
		{"GET", "/claims/c1", false},
		{"PATCH", "/claims/c1", false},
		{"POST", "/claims/c1/other", false},
		{"POST", "/resource_providers/p/evacuate", false},
		{"PUT", "/allocations/c1", false},
	} {
		if got := client.IsClaimWrite(tc.method, tc.path); got != tc.want {
			t.Errorf("IsClaimWrite(%s %s) = %v", tc.method, tc.path, got)
		}
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
