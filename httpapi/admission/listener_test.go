package admission_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/admission"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/httpapi/apitest/apiserver"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// build is apiserver.Build with the claimer's MaxCandidates from cfg.
func build(cfg httpapi.Config, store *ledger.Store, sched *scheduler.Policy, log *slog.Logger) (*httpapi.Server, error) {
	s, _, err := apiserver.Build(cfg, claims.Config{MaxCandidates: cfg.MaxCandidates}, store, sched, log)
	return s, err
}

func TestWrapListenerInvalidContentLength(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: apiserver.Bare(t)}
	go srv.Serve(admission.WrapListener(l))
	defer srv.Close()

	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A good request with a body, then one whose Content-Length is not a number.
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	fmt.Fprintf(conn, "POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nContent-Type: application/json\r\nContent-Length: hi mom\r\n\r\n{\"a\": 1}")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("first response %d", resp.StatusCode)
	}
	resp, err = http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(body), "content-length header must be an integer") {
		t.Fatalf("second response %d %s", resp.StatusCode, body)
	}
}

// TestServerErrorsInPlacementFormat sends the requests net/http refuses
// before any handler runs and checks that each answer is Placement's JSON
// error body, with Berth's message, not net/http's plain text.
func TestServerErrorsInPlacementFormat(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: apiserver.Bare(t), MaxHeaderBytes: 4096}
	go srv.Serve(admission.WrapListener(l))
	defer srv.Close()

	tests := []struct {
		name, request string
		status        int
		detail        string
	}{
		{"header block too large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n",
			431, "header fields are larger than this server accepts"},
		{"HTTP/0.9", "GET /\r\n\r\n", 400, "not well-formed HTTP/1.1"},
		{"HTTP/0.9 version", "GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505, "HTTP version is not supported"},
		{"duplicate Content-Length", "POST /resource_providers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, "not well-formed HTTP/1.1"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400, "no Host header"},
		{"bad header name", "GET / HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n", 400, "malformed header field"},
		{"unknown transfer encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
			"transfer encoding is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, tt.request); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			apitest.CheckPlacementError(t, resp, body, tt.status, tt.detail)
			if !resp.Close {
				t.Errorf("the answer does not close the connection")
			}
		})
	}
}
