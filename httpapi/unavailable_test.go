package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

// dbProxy forwards TCP connections on a loopback port to a PostgreSQL
// server; cut drops every connection and refuses new ones, resume
// accepts again on the same port: a database outage as the client sees it.
// stall stops forwarding bytes without closing anything, as a silent
// network does, until flow.
type dbProxy struct {
	target func() (net.Conn, error)
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	gate  chan struct{} // non-nil while stalled; closed by flow
	wg    sync.WaitGroup
}

// stall stops forwarding.
func (p *dbProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate == nil {
		p.gate = make(chan struct{})
	}
}

// flow forwards again.
func (p *dbProxy) flow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
}

// pipe copies src to dst, holding each chunk while the proxy is stalled.
func (p *dbProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// startDBProxy proxies the database at dbURL and returns the proxy and a
// URL for the same database through it.
func startDBProxy(t *testing.T, dbURL string) (*dbProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Query().Get("host"), u.Query().Get("port")
	if host == "" {
		host, port = u.Hostname(), u.Port()
	}
	if port == "" {
		port = "5432"
	}
	p := &dbProxy{conns: map[net.Conn]bool{}}
	if strings.HasPrefix(host, "/") {
		sock := host + "/.s.PGSQL." + port
		p.target = func() (net.Conn, error) { return net.Dial("unix", sock) }
	} else {
		addr := net.JoinHostPort(host, port)
		p.target = func() (net.Conn, error) { return net.Dial("tcp", addr) }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	pu := *u
	pu.Host = p.addr
	q := pu.Query()
	q.Del("host")
	q.Del("port")
	q.Set("sslmode", "disable")
	pu.RawQuery = q.Encode()
	return p, pu.String()
}

func (p *dbProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := p.target()
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
				p.wg.Add(1)
				go func() {
					defer p.wg.Done()
					p.pipe(pair[0], pair[1])
				}()
			}
		}
	}()
}

// cut closes the listener and every proxied connection, and ends a stall.
func (p *dbProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// resume listens on the proxy's port again.
func (p *dbProxy) resume(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// serveBounded serves one admin request in process and fails the test if
// it takes longer than a bound only a hang reaches.
func serveBounded(t *testing.T, s *Server, method, path, version, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement "+version)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { defer close(done); s.ServeHTTP(rec, req) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s %s hangs while the database is away", method, path)
	}
	return rec
}

// TestDatabaseUnavailable: while the database is out of reach every
// request that needs it is answered quickly with a 503 in Placement's
// error format (code berth.database_unavailable from microversion 1.23,
// Retry-After), reads and writes alike; when the database is back the
// same server answers again without a restart.
func TestDatabaseUnavailable(t *testing.T) {
	proxy, dbURL := startDBProxy(t, ledgertest.NewDB(t))
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, err := build(Config{}, store, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	const rp = "d0000000-0000-4000-8000-000000000001"
	do := func(method, path, version, body string) *httptest.ResponseRecorder {
		t.Helper()
		return serveBounded(t, s, method, path, version, body)
	}
	if rec := do("POST", "/resource_providers", "1.39", `{"name": "cn1", "uuid": "`+rp+`"}`); rec.Code != 200 {
		t.Fatalf("create provider: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/resource_providers", "1.39", ""); rec.Code != 200 {
		t.Fatalf("list providers: %d %s", rec.Code, rec.Body)
	}

	proxy.cut()
	// Reads are answered from the snapshot until the change listener
	// notices that its connection is gone, which it does as soon as its
	// goroutine reads the closed socket.
	deadline := time.Now().Add(30 * time.Second)
	for do("GET", "/resource_providers", "1.39", "").Code == 200 {
		if time.Now().After(deadline) {
			t.Fatal("reads still served from the snapshot 30s after the database went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
	requests := []struct {
		method, path, body string
		latestOnly         bool // the route or body needs a later microversion than 1.0
	}{
		{"GET", "/resource_providers", "", false},
		{"GET", "/resource_providers/" + rp, "", false},
		{"GET", "/allocation_candidates?resources=VCPU:1", "", true},
		{"GET", "/usages?project_id=p", "", true},
		{"POST", "/resource_providers", `{"name": "cn2"}`, false},
		{"PUT", "/resource_providers/" + rp + "/inventories", `{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}`, false},
		{"PUT", "/allocations/e0000000-0000-4000-8000-000000000001", `{"allocations": {"` + rp + `": {"resources": {"VCPU": 1}}},
			"project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`, true},
	}
	for _, version := range []string{"1.39", "1.0"} {
		for _, r := range requests {
			if version == "1.0" && r.latestOnly {
				continue
			}
			rec := do(r.method, r.path, version, r.body)
			if rec.Code != http.StatusServiceUnavailable {
				t.Errorf("%s %s at %s during the outage: %d %s", r.method, r.path, version, rec.Code, rec.Body)
				continue
			}
			if got := rec.Header().Get("Retry-After"); got != fmt.Sprint(retryAfterUnavailable) {
				t.Errorf("%s %s: Retry-After %q", r.method, r.path, got)
			}
			var body struct {
				Errors []map[string]any `json:"errors"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 {
				t.Errorf("%s %s: error body %q", r.method, r.path, rec.Body)
				continue
			}
			e := body.Errors[0]
			wantCode := any(fault.CodeDatabaseUnavailable)
			if version == "1.0" {
				wantCode = nil
			}
			if e["status"] != float64(503) || e["title"] != "Service Unavailable" || e["code"] != wantCode ||
				!strings.Contains(fmt.Sprint(e["detail"]), "The database is unavailable") || e["request_id"] == "" {
				t.Errorf("%s %s at %s: error %v", r.method, r.path, version, e)
			}
		}
	}

	proxy.resume(t)
	deadline = time.Now().Add(30 * time.Second)
	for {
		rec := do("GET", "/resource_providers/"+rp, "1.39", "")
		if rec.Code == 200 {
			break
		}
		if rec.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the database came back: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Nothing of the refused writes happened; writes work again.
	if rec := do("GET", "/resource_providers", "1.39", ""); rec.Code != 200 || strings.Contains(rec.Body.String(), "cn2") {
		t.Errorf("providers after the outage: %d %s", rec.Code, rec.Body)
	}
	if rec := do("POST", "/resource_providers", "1.39", `{"name": "cn2"}`); rec.Code != 200 {
		t.Errorf("create after the outage: %d %s", rec.Code, rec.Body)
	}
}

// TestRequestDeadline: when the database stops answering without closing
// anything (a silent network), a request fails with a clean 503 once its
// deadline passes instead of waiting for TCP to give up; when the network
// flows again the server answers again.
func TestRequestDeadline(t *testing.T) {
	proxy, dbURL := startDBProxy(t, ledgertest.NewDB(t))
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	// Only the request deadline may end the wait here.
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4, Logger: quiet,
		AcquireTimeout: 10 * time.Minute, ConnectTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, err := build(Config{RequestTimeout: 500 * time.Millisecond}, store, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if rec := serveBounded(t, s, "POST", "/resource_providers", "1.39", `{"name": "cn1"}`); rec.Code != 200 {
		t.Fatalf("create provider: %d %s", rec.Code, rec.Body)
	}
	proxy.stall()
	rec := serveBounded(t, s, "POST", "/resource_providers", "1.39", `{"name": "cn2"}`)
	var body struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != http.StatusServiceUnavailable || err != nil ||
		len(body.Errors) != 1 || body.Errors[0].Code != fault.CodeDatabaseUnavailable {
		t.Fatalf("write on a silent network: %d %s", rec.Code, rec.Body)
	}
	proxy.flow()
	deadline := time.Now().Add(30 * time.Second)
	// A new name each attempt: an attempt that ran out of time may still
	// have committed (its outcome is unknown to the client, as the 503
	// says), and a retry of the same name would then be a 409.
	for i := 0; ; i++ {
		rec := serveBounded(t, s, "POST", "/resource_providers", "1.39", fmt.Sprintf(`{"name": "cn3-%d"}`, i))
		if rec.Code == 200 {
			break
		}
		if rec.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the network flows again: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
