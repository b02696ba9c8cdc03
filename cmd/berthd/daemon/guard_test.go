package daemon

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi"
)

func TestNoAuthStaysOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		listen, auth string
		allow        bool
		refused      bool
	}{
		{"127.0.0.1:8778", httpapi.AuthNoAuth2, false, false},
		{"127.0.0.2:8778", httpapi.AuthNoAuth2, false, false},
		{"[::1]:8778", httpapi.AuthNoAuth2, false, false},
		{"localhost:8778", httpapi.AuthNoAuth2, false, false},
		{"0.0.0.0:8778", httpapi.AuthNoAuth2, false, true},
		{":8778", httpapi.AuthNoAuth2, false, true},
		{"[::]:8778", httpapi.AuthNoAuth2, false, true},
		{"10.0.0.5:8778", httpapi.AuthNoAuth2, false, true},
		{"berth.example:8778", httpapi.AuthNoAuth2, false, true},
		{"0.0.0.0:8778", httpapi.AuthNoAuth2, true, false},
		{"0.0.0.0:8778", httpapi.AuthKeystoneHeaders, false, false},
	} {
		c := Default()
		c.Listen, c.Auth, c.InsecureAllowNoAuthOnNetwork = tc.listen, tc.auth, tc.allow
		err := c.Validate()
		if refused := err != nil && strings.Contains(err.Error(), "refusing --auth noauth2"); refused != tc.refused {
			t.Errorf("auth %s on %s (allowed: %v): %v", tc.auth, tc.listen, tc.allow, err)
		}
		if err != nil && strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("the refusal is more than one line: %q", err)
		}
	}
}

// TestSlowHeadersAreBounded: 300 clients each send headers slowly and
// without end. Only MaxConnections of them are taken in at once, each is
// refused once its header block passes MaxHeaderBytes, and the heap
// stays far below what 300 connections of 1 MiB header (net/http's
// default limit) would hold.
func TestSlowHeadersAreBounded(t *testing.T) {
	const clients, limit = 300, 50
	cfg := Default()
	cfg.MaxConnections = limit
	var open, peak atomic.Int64
	srv := apiServer(cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), slog.New(slog.DiscardHandler))
	srv.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			if n := open.Add(1); n > peak.Load() {
				peak.Store(n)
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(apiListener(cfg, ln))
	defer srv.Close()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	// Every client sends a request line and 48 KiB of header (under the
	// limit), then waits.
	chunk := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	for range clients {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"); err != nil {
				return
			}
			for range 48 {
				if _, err := io.WriteString(c, chunk); err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for open.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // more would be taken in by now
	if p := peak.Load(); p != limit {
		t.Errorf("%d connections taken in at once, want %d (the limit)", p, limit)
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	// 300 × 48 KiB sent; the server holds at most 50 connections' worth.
	if grew := int64(during.HeapInuse) - int64(before.HeapInuse); grew > 32<<20 {
		t.Errorf("heap grew by %d MiB with %d slow clients", grew>>20, clients)
	}

	// One taken-in client goes on past the header limit: 431, and its
	// connection closes, letting a waiting client in.
	var refused int
	for _, c := range conns {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		for range 32 {
			if _, err := io.WriteString(c, chunk); err != nil {
				break
			}
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			continue // still waiting to be accepted: its writes filled the backlog's buffer
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("a header block past the limit answered %d", resp.StatusCode)
		}
		refused++
		break
	}
	if refused == 0 {
		t.Fatal("no client got its 431")
	}
}

func TestMetricsServerTimeouts(t *testing.T) {
	cfg := Default()
	srv := metricsServer(cfg, http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if srv.ReadTimeout <= 0 || srv.ReadTimeout > metricsReadTimeout || srv.ReadHeaderTimeout <= 0 ||
		srv.IdleTimeout <= 0 || srv.MaxHeaderBytes != DefaultMaxHeaderBytes {
		t.Fatalf("metrics server: read %v, read header %v, idle %v, max header %d",
			srv.ReadTimeout, srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	// A request whose body never comes is cut at the read timeout (a
	// small body is read after the handler, to reuse the connection).
	srv.ReadTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("the connection was not closed by the server: %v", err)
	}
}
