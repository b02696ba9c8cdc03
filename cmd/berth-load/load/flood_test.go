package load

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunFlood: a server that refuses every other expensive GET with 503
// and answers the probes; the flood counts both and times the probes.
func TestRunFlood(t *testing.T) {
	var heavy atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/allocation_candidates"):
			if heavy.Add(1)%2 == 0 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			time.Sleep(5 * time.Millisecond)
			io.WriteString(w, `{"allocation_requests": []}`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	defer srv.Close()
	cfg := ClientConfig{URL: srv.URL, Token: "admin", Microversion: DefaultMicroversion, Timeout: 5 * time.Second}
	cfg.Conns = 8
	heavyClient := NewClient(cfg)
	cfg.Conns = 1
	res := RunFlood(context.Background(), heavyClient, NewClient(cfg),
		FloodParams{Clients: 8, Duration: 500 * time.Millisecond, ProbeInterval: 10 * time.Millisecond}, io.Discard)
	if len(res) != 1+len(FloodProbes()) {
		t.Fatalf("%d results", len(res))
	}
	if f := res[0]; f.Stats.N == 0 || f.Count == 0 || f.Errors != 0 || f.Path != DefaultFloodPath {
		t.Errorf("flood: %+v", f)
	}
	for _, p := range res[1:] {
		if p.Stats.N == 0 || p.Errors != 0 {
			t.Errorf("%s: %+v", p.Name, p)
		}
	}
}
