package load

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connServer is an httptest server that counts the connections it
// accepted and closed.
type connServer struct {
	*httptest.Server
	opened, closed atomic.Int64
	requests       atomic.Int64
}

func newConnServer(t *testing.T, h http.HandlerFunc) *connServer {
	t.Helper()
	s := &connServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// waitFor polls cond for up to 10 s: the server sees a client's close a
// moment after it happens. Only a hang reaches the bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// keepAliveOf is c's own transport.
func keepAliveOf(t *testing.T, c *Client) *keepAliveTransport {
	t.Helper()
	tr, ok := c.http.Transport.(*keepAliveTransport)
	if !ok {
		t.Fatalf("client transport is %T", c.http.Transport)
	}
	return tr
}

// echo answers a request's method, path, body and the headers the tests
// look at, as JSON-ish text.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"method":%q,"path":%q,"body":%q,"token":%q,"version":%q,"encoding":%q,"length":%d}`,
		r.Method, r.URL.RequestURI(), b, r.Header.Get("X-Auth-Token"), r.Header.Get("OpenStack-API-Version"),
		r.Header.Get("Accept-Encoding"), r.ContentLength)
}

// TestTransportReusesConnections: sequential requests share one
// connection, concurrent ones at most Conns, and what arrives is what the
// client meant to send.
func TestTransportReusesConnections(t *testing.T) {
	s := newConnServer(t, echo)
	c := NewClient(ClientConfig{URL: s.URL, Token: "tok", Conns: 4, Timeout: 10 * time.Second})
	tr := keepAliveOf(t, c)
	var got struct {
		Method, Path, Body, Token, Version, Encoding string
		Length                                       int
	}
	for i := 0; i < 20; i++ {
		if _, err := c.JSON(context.Background(), http.MethodPost, "/x?i="+strconv.Itoa(i), map[string]int{"i": i}, &got); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"i":%d}`, i)
		if got.Method != "POST" || got.Path != "/x?i="+strconv.Itoa(i) || got.Body != want || got.Length != len(want) ||
			got.Token != "tok" || got.Version != "placement "+DefaultMicroversion || got.Encoding != "gzip" {
			t.Fatalf("request %d arrived as %+v", i, got)
		}
	}
	if s.opened.Load() != 1 || tr.dials.Load() != 1 {
		t.Errorf("20 sequential requests: %d connections (%d dials), want 1", s.opened.Load(), tr.dials.Load())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*25)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if _, err := c.Do(context.Background(), http.MethodGet, "/y", nil); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := s.opened.Load(); n > 4 {
		t.Errorf("4 concurrent clients opened %d connections", n)
	}
	if n := tr.idleCount(); n < 1 || n > 4 {
		t.Errorf("%d idle connections after the run, want 1 to 4", n)
	}
	c.CloseIdleConnections()
	waitFor(t, "the server to see every connection closed", func() bool { return s.closed.Load() == s.opened.Load() })
}

// TestTransportChunkedAndGzip: a streamed (chunked) answer is read whole
// and its connection reused; a gzip answer is decompressed as net/http's
// Transport would; HEAD and 204 answers have no body and keep the
// connection.
func TestTransportChunkedAndGzip(t *testing.T) {
	s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			for i := 0; i < 50; i++ {
				fmt.Fprintf(w, "line %d %s\n", i, strings.Repeat("x", 1000))
				w.(http.Flusher).Flush()
			}
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprint(zw, strings.Repeat("compressed ", 1000))
			zw.Close()
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			fmt.Fprint(w, "plain")
		}
	})
	c := NewClient(ClientConfig{URL: s.URL, Timeout: 10 * time.Second})
	r, err := c.Do(context.Background(), http.MethodGet, "/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(r.Body), "\n"), "\n"); len(lines) != 50 || !strings.HasPrefix(lines[49], "line 49 xxx") {
		t.Fatalf("streamed body: %d lines", len(lines))
	}
	// The same answer through http.Client, to see that it was chunked.
	resp, err := c.http.Get(s.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || !bytes.Equal(b, r.Body) {
		t.Errorf("transfer encoding %v, %d bytes", resp.TransferEncoding, len(b))
	}
	r, err = c.Do(context.Background(), http.MethodGet, "/gzip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body) != strings.Repeat("compressed ", 1000) {
		t.Errorf("gzip body: %.40q...", r.Body)
	}
	if _, err := c.Do(context.Background(), http.MethodDelete, "/empty", nil, http.StatusNoContent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(context.Background(), http.MethodHead, "/plain", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(context.Background(), http.MethodGet, "/plain", nil); err != nil {
		t.Fatal(err)
	}
	if n := s.opened.Load(); n != 1 {
		t.Errorf("%d connections for 6 requests, want 1", n)
	}
}

// TestTransportUnreadBodyClosesConnection: a body closed before its end,
// and an answer with Connection: close, close their connection; the next
// request dials.
func TestTransportUnreadBodyClosesConnection(t *testing.T) {
	s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		fmt.Fprint(w, strings.Repeat("y", 100000))
	})
	c := NewClient(ClientConfig{URL: s.URL, Timeout: 10 * time.Second})
	tr := keepAliveOf(t, c)
	resp, err := c.http.Get(s.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, part); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(part); err == nil {
		t.Error("read after close succeeded")
	}
	waitFor(t, "the half-read connection to close", func() bool { return s.closed.Load() == 1 })
	if tr.idleCount() != 0 {
		t.Errorf("%d idle connections after a half-read body", tr.idleCount())
	}
	if _, err := c.Do(context.Background(), http.MethodGet, "/close", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Connection: close connection to close", func() bool { return s.closed.Load() == 2 })
	if _, err := c.Do(context.Background(), http.MethodGet, "/big", nil); err != nil {
		t.Fatal(err)
	}
	if s.opened.Load() != 3 || tr.idleCount() != 1 {
		t.Errorf("%d connections, %d idle; want 3 and 1", s.opened.Load(), tr.idleCount())
	}
}

// TestTransportServerClosedConnection: a connection the server closed
// while it sat in the pool costs no request: an idempotent request whose
// connection ends before any answer is sent again on a new one; an idle
// connection found closed by the probe is not used; a POST that met a
// closed connection without the probe is not sent twice.
func TestTransportServerClosedConnection(t *testing.T) {
	s := newConnServer(t, echo)
	c := NewClient(ClientConfig{URL: s.URL, Timeout: 10 * time.Second})
	tr := keepAliveOf(t, c)
	tr.staleAfter = time.Hour // no probe: the retry rule alone
	get := func(method string) error {
		_, err := c.Do(context.Background(), method, "/r", map[string]int{"a": 1})
		return err
	}
	if err := get(http.MethodGet); err != nil {
		t.Fatal(err)
	}
	for i, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		s.CloseClientConnections()
		waitFor(t, "the server to close", func() bool { return s.closed.Load() == int64(i+1) })
		before := s.requests.Load()
		if err := get(method); err != nil {
			t.Fatalf("%s after the server closed the connection: %v", method, err)
		}
		if s.requests.Load() != before+1 {
			t.Errorf("%s: the server saw %d requests, want 1", method, s.requests.Load()-before)
		}
	}
	if n := s.opened.Load(); n != 4 {
		t.Errorf("%d connections, want 4", n)
	}

	// With two stale connections in the pool, the retry dials rather than
	// taking the other stale one.
	var held []*http.Response
	for i := 0; i < 2; i++ {
		resp, err := c.http.Get(s.URL + "/hold")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, resp)
	}
	for _, resp := range held {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if tr.idleCount() != 2 {
		t.Fatalf("%d idle connections, want 2", tr.idleCount())
	}
	s.CloseClientConnections()
	waitFor(t, "the server to close", func() bool { return s.closed.Load() == s.opened.Load() })
	if err := get(http.MethodGet); err != nil {
		t.Fatalf("GET with two stale connections pooled: %v", err)
	}

	// A POST is not retried: the server could have acted on it.
	s.CloseClientConnections()
	waitFor(t, "the server to close", func() bool { return s.closed.Load() == s.opened.Load() })
	before := s.requests.Load()
	if err := get(http.MethodPost); err == nil {
		t.Error("POST on a connection the server had closed succeeded without the probe")
	}
	if s.requests.Load() != before {
		t.Errorf("the server saw the failed POST")
	}
	c.CloseIdleConnections() // the other stale one

	// With the probe, a POST on a pooled connection the server closed
	// (here by its idle timeout) goes on a new connection.
	if err := get(http.MethodPost); err != nil {
		t.Fatal(err)
	}
	tr.staleAfter = 0
	opened := s.opened.Load()
	s.CloseClientConnections()
	waitFor(t, "the server to close", func() bool { return s.closed.Load() == s.opened.Load() })
	for i := 0; i < 3; i++ {
		if err := get(http.MethodPost); err != nil {
			t.Fatalf("POST %d after the server closed the idle connection, with the probe: %v", i, err)
		}
	}
	if n := s.opened.Load() - opened; n != 1 {
		t.Errorf("%d new connections for 3 POSTs after the close, want 1", n)
	}
}

// TestTransportServerIdleTimeout: the realistic case of the above, a
// server whose idle timeout closes kept-alive connections between
// requests.
func TestTransportServerIdleTimeout(t *testing.T) {
	s := &connServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(echo))
	s.Config.IdleTimeout = 20 * time.Millisecond
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed:
			s.closed.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	c := NewClient(ClientConfig{URL: s.URL, Timeout: 10 * time.Second})
	keepAliveOf(t, c).staleAfter = 0
	for i := 0; i < 3; i++ {
		if _, err := c.Do(context.Background(), http.MethodPost, "/p", map[string]int{"i": i}); err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		waitFor(t, "the server's idle timeout", func() bool { return s.closed.Load() == int64(i+1) })
	}
	if s.opened.Load() != 3 {
		t.Errorf("%d connections, want 3", s.opened.Load())
	}
}

// TestTransportContext: cancelling the request's context or passing its
// deadline ends the request at once, while waiting for the answer or in
// the middle of its body, with the context's error, and closes the
// connection.
func TestTransportContext(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/half" {
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, strings.Repeat("h", 500))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(free) // before the server's Close, which waits for handlers
	c := NewClient(ClientConfig{URL: s.URL, Timeout: 200 * time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Do(ctx, http.MethodGet, "/wait", nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("cancelled while waiting: %v", err)
	}
	waitFor(t, "the cancelled connection to close", func() bool { return s.closed.Load() == 1 })

	for i, path := range []string{"/wait", "/half"} {
		_, err = c.Do(context.Background(), http.MethodGet, path, nil)
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("%s past the client's timeout: %v", path, err)
		}
		waitFor(t, "the timed-out connection to close", func() bool { return s.closed.Load() == int64(2+i) })
	}

	// Cancelled in the middle of the body, through http.Client directly.
	ctx, cancel = context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/half", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 500)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := resp.Body.Read(buf); !errors.Is(err, context.Canceled) {
		t.Errorf("body read after cancel: %v", err)
	}
	resp.Body.Close()
	// An already cancelled context sends nothing.
	before := s.requests.Load()
	if _, err := c.Do(ctx, http.MethodGet, "/wait", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before sending: %v", err)
	}
	if tr := keepAliveOf(t, c); tr.idleCount() != 0 || s.requests.Load() != before {
		t.Errorf("%d idle connections, %d requests after cancelling", tr.idleCount(), s.requests.Load()-before)
	}
	// And the client still works.
	free()
	if _, err := c.Do(context.Background(), http.MethodGet, "/ok", nil); err != nil {
		t.Fatal(err)
	}
}

// TestTransportNoKeepAlive: with NoKeepAlive every request has its own
// connection, through net/http's Transport.
func TestTransportNoKeepAlive(t *testing.T) {
	s := newConnServer(t, echo)
	c := NewClient(ClientConfig{URL: s.URL, NoKeepAlive: true, Timeout: 10 * time.Second})
	if _, ok := c.http.Transport.(*http.Transport); !ok {
		t.Fatalf("transport %T", c.http.Transport)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Do(context.Background(), http.MethodPost, "/", "x"); err != nil {
			t.Fatal(err)
		}
	}
	if s.opened.Load() != 3 {
		t.Errorf("%d connections, want 3", s.opened.Load())
	}
}

// TestTransportWriteFailureRetry: a request whose writing failed before
// any byte reached a reused connection may go again, whatever its method;
// on a new connection it may not (the failure is not a stale pool's).
func TestTransportWriteFailureRetry(t *testing.T) {
	tr := newKeepAliveTransport(1, nil)
	for _, reused := range []bool{true, false} {
		local, remote := net.Pipe()
		remote.Close()
		pc := &persistConn{addr: "pipe", nc: local, reused: reused}
		pc.br = bufio.NewReader(local)
		pc.bw = bufio.NewWriter(countWriter{pc})
		req, _ := http.NewRequest(http.MethodPost, "http://pipe/x", strings.NewReader(`{"a":1}`))
		_, retry, err := tr.exchange(context.Background(), pc, req)
		if err == nil || retry != reused {
			t.Errorf("reused %v: retry %v, error %v", reused, retry, err)
		}
	}
}
