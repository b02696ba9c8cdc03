package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/ledgertest"
)

// startDaemon builds and runs a daemon on a fresh database with cfg's
// shutdown settings; stop cancels it and returns Run's error.
func startDaemon(t *testing.T, adjust func(*Config)) (d *Daemon, stop func() error) {
	t.Helper()
	cfg := Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = ledgertest.NewDB(t)
	cfg.DataDir = ""
	cfg.Auth = "noauth2"
	if adjust != nil {
		adjust(&cfg)
	}
	d, err := New(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx) }()
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-runErr:
			return err
		case <-time.After(2 * time.Minute):
			t.Fatal("Run did not return after cancel")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return d, stop
}

// beginRequest sends the header block of a POST /resource_classes with
// "Expect: 100-continue" and waits for the 100 Continue, which net/http
// sends only when the handler starts reading the body: from then on the
// request is in flight. The caller sends body to finish it.
func beginRequest(t *testing.T, addr, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /resource_classes HTTP/1.1\r\nHost: berth\r\nX-Auth-Token: admin\r\n"+
		"OpenStack-API-Version: placement 1.7\r\nContent-Type: application/json\r\n"+
		"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body))
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("want 100 Continue, got %q, %v", line, err)
	}
	if blank, err := r.ReadString('\n'); err != nil || blank != "\r\n" {
		t.Fatalf("after 100 Continue: %q, %v", blank, err)
	}
	return conn, r
}

// waitRefused waits until addr stops accepting connections.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
	}
	t.Fatal("the listener still accepts connections a minute after shutdown began")
}

func TestShutdownFinishesInFlightRequest(t *testing.T) {
	d, stop := startDaemon(t, func(c *Config) { c.ShutdownGrace = 2 * time.Minute })
	addr := d.Addr().String()
	body := `{"name": "CUSTOM_IN_FLIGHT"}`
	conn, r := beginRequest(t, addr, body)

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	waitRefused(t, addr) // shutdown has begun: no new connections
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) with a request in flight", err)
	default:
	}

	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("in-flight POST /resource_classes = %d, want 201", resp.StatusCode)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestShutdownGraceCutsStuckRequest(t *testing.T) {
	d, stop := startDaemon(t, func(c *Config) { c.ShutdownGrace = 100 * time.Millisecond })
	conn, r := beginRequest(t, d.Addr().String(), `{"name": "CUSTOM_NEVER_SENT"}`)
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	// The connection was cut: reading ends without a response.
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if resp, err := http.ReadResponse(r, nil); err == nil {
		t.Errorf("a stuck request got a response after the grace period: %d", resp.StatusCode)
	}
}

func TestMetricsListenerAndProbes(t *testing.T) {
	d, stop := startDaemon(t, func(c *Config) { c.MetricsListen = "127.0.0.1:0" })
	api, metrics := "http://"+d.Addr().String(), "http://"+d.MetricsAddr().String()
	getBody := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, u := range []string{api + "/healthz", api + "/readyz", metrics + "/healthz", metrics + "/readyz"} {
		if code, body := getBody(u); code != http.StatusOK {
			t.Errorf("GET %s = %d %q", u, code, body)
		}
	}
	if code, _ := getBody(api + "/metrics"); code == http.StatusOK {
		t.Error("/metrics also served on the API listener")
	}
	// requestsServed reads the request counter of GET / answered 200.
	requestsServed := func() float64 {
		t.Helper()
		code, body := getBody(metrics + "/metrics")
		if code != http.StatusOK {
			t.Fatalf("GET /metrics = %d", code)
		}
		if !strings.Contains(body, `berth_db_pool_connections{state="max"} 16`) {
			t.Errorf("/metrics lacks the pool gauges:\n%s", body)
		}
		if !strings.Contains(body, "berth_scriptlet_runs_total ") {
			t.Errorf("/metrics lacks the scriptlet counters:\n%s", body)
		}
		if strings.Contains(body, `http_route="/readyz"`) {
			t.Error("/metrics counts probes") // they bypass the API, its log and metrics
		}
		return metricValue(t, body, "berth_http_requests_total", `http_route="/"`, `http_response_status_code="200"`)
	}
	before := requestsServed()
	for range 3 {
		if code, _ := getBody(api + "/"); code != http.StatusOK {
			t.Fatalf("GET / = %d", code)
		}
	}
	if after := requestsServed(); after != before+3 {
		t.Errorf("berth_http_requests_total for GET / went from %v to %v after 3 requests", before, after)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// metricValue is the value of the sample of metric in a Prometheus text
// exposition whose labels include every one of labels; 0 if none.
func metricValue(t *testing.T, exposition, metric string, labels ...string) float64 {
	t.Helper()
	for _, line := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if !match {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		return v
	}
	return 0
}

func TestMigrateOnStartOffRefusesOldSchema(t *testing.T) {
	cfg := Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = ledgertest.NewDB(t)
	cfg.DataDir = ""
	cfg.MigrateOnStart = false
	d, err := New(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("New on a migrated database: %v", err)
	}
	if err := d.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ledgertest.Exec(t, cfg.DatabaseURL, `UPDATE schema_migrations SET version = version - 1`)
	if _, err := New(context.Background(), cfg, testLogger(t)); err == nil || !strings.Contains(err.Error(), "berthd migrate") {
		t.Fatalf("New on an older schema: %v", err)
	}
}
