package admission

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// echoServer serves, on a loopback listener (wrapped by WrapListener when
// wrap is set), a handler that answers each request with its method,
// path, the Content-Length and invalid-length headers it saw and its
// body. It returns the address.
func echoServer(t *testing.T, wrap bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			w.Header()["Date"] = nil
			fmt.Fprintf(w, "%s %s cl=%q invalid=%q x-a=%q err=%v body=%q\n", r.Method, r.URL.Path,
				r.Header.Values("Content-Length"), r.Header.Get(HeaderInvalidContentLength), r.Header.Get("X-A"), err, body)
		}),
	}
	ln := l
	if wrap {
		ln = WrapListener(l)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// exchange sends raw to addr, closes the writing side, and returns
// everything the server answers before it closes the connection. A
// server that stops answering fails the test after a few seconds instead
// of hanging it.
func exchange(t *testing.T, addr, raw string, closeWrite bool) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		conn.(*net.TCPConn).CloseWrite()
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("after %q: %v (read so far: %q)", raw, err, out)
	}
	return string(out)
}

// TestWrapListenerBareLF: net/http takes LF alone as a line end; the
// wrapper used to wait for CRLF CRLF and held such a request until the
// client gave up.
func TestWrapListenerBareLF(t *testing.T) {
	addr := echoServer(t, true)
	// The client keeps its side open, waiting for the answer, as a real
	// client does; Connection: close ends the exchange.
	got := exchange(t, addr, "GET /lf HTTP/1.1\nHost: x\nConnection: close\n\n", false)
	if !strings.Contains(got, "GET /lf") {
		t.Fatalf("bare-LF request answered %q", got)
	}
	got = exchange(t, addr, "POST /lf HTTP/1.1\nHost: x\nContent-Length: hi mom\nConnection: close\n\n", false)
	if !strings.Contains(got, `invalid="hi mom"`) {
		t.Fatalf("bare-LF request with an invalid length answered %q", got)
	}
}

// TestWrapListenerLeavesBodiesAlone: a body that looks like a header
// block with an invalid Content-Length used to be taken for one and
// rewritten (after a bare-LF header block, whose end the wrapper missed).
func TestWrapListenerLeavesBodiesAlone(t *testing.T) {
	addr := echoServer(t, true)
	body := "x\r\nContent-Length: hi mom\r\nX: y\r\n\r\n"
	req := fmt.Sprintf("POST /b HTTP/1.1\nHost: x\nContent-Length: %d\n\n%s", len(body), body)
	got := exchange(t, addr, req+"GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false)
	if !strings.Contains(got, fmt.Sprintf("body=%q", body)) || !strings.Contains(got, "GET /after") {
		t.Fatalf("answered %q", got)
	}
}

// TestWrapListenerFramesLikeNetHTTP sends streams of well-formed requests
// through a plain and a wrapped listener: the answers must be the same.
func TestWrapListenerFramesLikeNetHTTP(t *testing.T) {
	plain, wrapped := echoServer(t, false), echoServer(t, true)
	body := "{\"a\": 1}\r\n\r\nContent-Length: nope\r\n\r\n"
	for name, raw := range map[string]string{
		"pipelined CRLF": fmt.Sprintf("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%sGET /2 HTTP/1.1\r\nHost: x\r\n\r\n", len(body), body),
		"pipelined LF":   fmt.Sprintf("POST /1 HTTP/1.1\nHost: x\nContent-Length: %d\n\n%sGET /2 HTTP/1.1\nHost: x\n\n", len(body), body),
		"mixed line ends": fmt.Sprintf("PUT /1 HTTP/1.1\r\nHost: x\nContent-Length: %d\r\n\n%sGET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
			len(body), body),
		// A folded line belongs to the header before it: X-A, not a
		// Content-Length (the wrapper used to trim and count it).
		"continuation": "POST /1 HTTP/1.1\r\nHost: x\r\nX-A: a\r\n Content-Length: 5\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
		// A Content-Length folded over two lines is read joined.
		"folded length":      "POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 3\r\n\r\nabcGET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
		"duplicate lengths":  "POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabcGET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
		"chunked then more":  "POST /1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nPOST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
		"blank after a POST": "POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\na\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
		"no body, no length": "DELETE /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
		"malformed header":   "GET /1 HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
	} {
		want := exchange(t, plain, raw, true)
		got := exchange(t, wrapped, raw, true)
		if strings.Contains(want, goErrorHeaders) {
			// net/http's own plain-text refusal: the wrapper answers the
			// same status in Placement's format (listener_errors.go).
			statusLine := func(s string) string { l, _, _ := strings.Cut(s, "\r\n"); return l }
			if statusLine(got) != statusLine(want) || !strings.Contains(got, `{"errors":[{`) {
				t.Errorf("%s: through the wrapper\n%q\nwithout\n%q", name, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: through the wrapper\n%q\nwithout\n%q", name, got, want)
		}
	}
}

// TestWrapListenerInvalidLengths: each of these is refused by net/http
// itself; through the wrapper the handler sees the invalid value (and
// answers with Placement's message), with no body.
func TestWrapListenerInvalidLengths(t *testing.T) {
	addr := echoServer(t, true)
	for raw, invalid := range map[string]string{
		"POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: hi mom\r\n\r\n{}":     "hi mom",
		"POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n{}":            "(empty)",
		"POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n 2\r\n\r\n{}":    "1 2",
		"POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}":         "-1",
		"POST /1 HTTP/1.1\r\nHost: x\r\ncontent-length: +2\r\n\r\n{}":         "+2",
		"POST /1 HTTP/1.1\nHost: x\nContent-Length: 2\nContent-Length: x\n\n": "x",
	} {
		got := exchange(t, addr, raw, false)
		if !strings.Contains(got, fmt.Sprintf("invalid=%q", invalid)) || !strings.Contains(got, `body=""`) {
			t.Errorf("%q answered %q, want invalid=%q", raw, got, invalid)
		}
	}
}
