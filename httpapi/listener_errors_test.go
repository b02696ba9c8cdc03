package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/ledgertest"
)

// TestServerErrorsInPlacementFormat sends the requests net/http refuses
// before any handler runs and checks that each answer is Placement's JSON
// error body, with Berth's message, not net/http's plain text.
func TestServerErrorsInPlacementFormat(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newBareServer(t), MaxHeaderBytes: 4096}
	go srv.Serve(WrapListener(l))
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
			checkPlacementError(t, resp, body, tt.status, tt.detail)
			if !resp.Close {
				t.Errorf("the answer does not close the connection")
			}
		})
	}
}

// checkPlacementError checks that resp, with body, is Placement's JSON
// error of status whose detail contains detail, and names no Go type.
func checkPlacementError(t *testing.T, resp *http.Response, body []byte, status int, detail string) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var doc struct {
		Errors []struct {
			Status    int    `json:"status"`
			Title     string `json:"title"`
			Detail    string `json:"detail"`
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) != 1 {
		t.Fatalf("not a Placement error body (%v): %s", err, body)
	}
	e := doc.Errors[0]
	if e.Status != status || e.Title != http.StatusText(status) || e.Code != "placement.undefined_code" ||
		!strings.HasPrefix(e.RequestID, "req-") || !strings.Contains(e.Detail, detail) {
		t.Errorf("error %+v, want status %d and a detail with %q", e, status, detail)
	}
	for _, goWords := range []string{"json:", "Go ", "struct", "int64", "strconv", "http:"} {
		if strings.Contains(e.Detail, goWords) {
			t.Errorf("detail %q has Go's words %q", e.Detail, goWords)
		}
	}
}

// TestPlacementServerErrorLeavesAnswers checks that the listener leaves
// a handler's answer alone, even one that starts like net/http's own.
func TestPlacementServerErrorLeavesAnswers(t *testing.T) {
	for _, b := range []string{
		"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nX-Openstack-Request-Id: req-1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nok",
		"{\"a\": 1}",
		"HTTP/1.1 ",
	} {
		if _, ok := placementServerError([]byte(b)); ok {
			t.Errorf("%q rewritten", b)
		}
	}
}

// TestDecodeErrorsNameNoGoTypes sends bodies that pass the schema but do
// not fit the typed body (an integer past 64 bits) and checks the answer
// words it in the API's terms.
func TestDecodeErrorsNameNoGoTypes(t *testing.T) {
	store := ledgertest.NewStore(t)
	s, err := build(Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rp := ledgertest.Provider(t, store, "cn1")
	for _, tt := range []struct{ method, path, body, detail string }{
		{http.MethodPut, "/resource_providers/" + rp + "/inventories",
			`{"resource_provider_generation": 1e30, "inventories": {}}`,
			"resource_provider_generation: 1e30 is not an integer"},
		{http.MethodPost, "/claims", `{"consumer_uuid": "11111111-2222-3333-4444-555555555555", "project_id": "p",
			"user_id": "u", "consumer_generation": 99999999999999999999999, "resources": {"VCPU": 1}}`,
			"consumer_generation: 99999999999999999999999 is not an integer"},
	} {
		req, _ := http.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement latest")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		resp := rec.Result()
		checkPlacementError(t, resp, rec.Body.Bytes(), http.StatusBadRequest, tt.detail)
	}
}
