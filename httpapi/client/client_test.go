package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8778":             "http://127.0.0.1:8778",
		"http://127.0.0.1:8778/":            "http://127.0.0.1:8778",
		"https://cloud.example/placement//": "https://cloud.example/placement",
		"127.0.0.1:8778":                    "http://127.0.0.1:8778",
		"localhost:8778/placement/":         "http://localhost:8778/placement",
		"[::1]:8778":                        "http://[::1]:8778",
		"":                                  "",
	} {
		if got := BaseURL(in); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// seen is what the test server saw of a request.
type seen struct {
	method, uri, body                   string
	token, version, accept, contentType string
	hasToken, hasContentType            bool
}

func recorder(t *testing.T, status int, answer string) (*httptest.Server, *seen) {
	t.Helper()
	var s seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s = seen{method: r.Method, uri: r.URL.RequestURI(), body: string(b),
			token: r.Header.Get("X-Auth-Token"), version: r.Header.Get("OpenStack-API-Version"),
			accept: r.Header.Get("Accept"), contentType: r.Header.Get("Content-Type")}
		_, s.hasToken = r.Header["X-Auth-Token"]
		_, s.hasContentType = r.Header["Content-Type"]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &s
}

// TestJSONRequest: a bare host:port is an http:// endpoint; the token,
// microversion, JSON body and content headers go out; the answer is
// decoded.
func TestJSONRequest(t *testing.T) {
	srv, s := recorder(t, http.StatusOK, `{"name": "cn1", "generation": 3}`)
	c := New(Config{URL: strings.TrimPrefix(srv.URL, "http://") + "/", Token: "tok", Microversion: "1.39"})
	var out struct {
		Name       string `json:"name"`
		Generation int    `json:"generation"`
	}
	r, err := c.JSON(context.Background(), http.MethodPost, "/resource_providers?x=1", map[string]string{"name": "cn1"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "cn1" || out.Generation != 3 || r.Status != 200 || r.Method != "POST" || r.Path != "/resource_providers?x=1" {
		t.Errorf("answer %+v, response %+v", out, r)
	}
	want := seen{method: "POST", uri: "/resource_providers?x=1", body: `{"name":"cn1"}`, token: "tok",
		version: "placement 1.39", accept: "application/json", contentType: "application/json",
		hasToken: true, hasContentType: true}
	if *s != want {
		t.Errorf("server saw %+v\nwant %+v", *s, want)
	}

	// No token, no body, the default microversion.
	c = New(Config{URL: srv.URL})
	if _, err := c.Do(context.Background(), http.MethodGet, "/", nil, ""); err != nil {
		t.Fatal(err)
	}
	if s.hasToken || s.hasContentType || s.version != "placement latest" || s.body != "" {
		t.Errorf("server saw %+v", *s)
	}
}

// TestStream: Stream sends what Do sends for a GET and copies the body
// to its writer, keeping none of it.
func TestStream(t *testing.T) {
	srv, s := recorder(t, http.StatusOK, `{"allocation_requests": []}`)
	c := New(Config{URL: srv.URL, Token: "tok", Microversion: "1.39"})
	var got strings.Builder
	r, err := c.Stream(context.Background(), "/allocation_candidates?resources=VCPU:1", &got)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != `{"allocation_requests": []}` || r.Body != nil || r.Status != 200 || r.Method != "GET" ||
		r.Path != "/allocation_candidates?resources=VCPU:1" || r.Elapsed <= 0 {
		t.Errorf("body %q, response %+v", got.String(), r)
	}
	want := seen{method: "GET", uri: "/allocation_candidates?resources=VCPU:1", token: "tok",
		version: "placement 1.39", accept: "application/json", hasToken: true}
	if *s != want {
		t.Errorf("server saw %+v\nwant %+v", *s, want)
	}
}

func TestDecodeFailure(t *testing.T) {
	srv, _ := recorder(t, http.StatusOK, `<html>`)
	var out map[string]any
	r, err := New(Config{URL: srv.URL}).JSON(context.Background(), http.MethodGet, "/traits", nil, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "GET /traits: decoding the answer: ") || r == nil || string(r.Body) != "<html>" {
		t.Errorf("got %v, %+v", err, r)
	}
	// An empty 2xx body decodes nothing.
	srv, _ = recorder(t, http.StatusNoContent, ``)
	if _, err := New(Config{URL: srv.URL}).JSON(context.Background(), http.MethodDelete, "/traits/X", nil, &out); err != nil {
		t.Error(err)
	}
}

// TestErrorBodies: Placement's error format, webob's own, keystonemiddleware's
// and any other body all come back as one *Error.
func TestErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		want       ErrorItem
		raw        string
	}{
		{"placement", `{"errors": [{"status": 409, "title": "Conflict", "detail": "There was a conflict when trying to complete your request.\n\n resource provider generation conflict  ", "code": "placement.concurrent_update", "request_id": "req-1"}]}`,
			409, ErrorItem{Status: 409, Title: "Conflict", Detail: "There was a conflict when trying to complete your request.\n\n resource provider generation conflict  ", Code: "placement.concurrent_update", RequestID: "req-1"}, ""},
		{"webob", `{"message": "This server could not verify that you are authorized to access the document you requested.<br /><br />\n\n\n", "code": "401 Unauthorized", "title": "Unauthorized"}`,
			401, ErrorItem{Status: 401, Title: "Unauthorized", Detail: "This server could not verify that you are authorized to access the document you requested.\n\n\n\n\n"}, ""},
		{"keystonemiddleware", `{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`,
			401, ErrorItem{Status: 401, Title: "Unauthorized", Detail: "Unauthorized\n\nThe request you have made requires authentication."}, ""},
		{"other", "<html>bad gateway</html>", 502, ErrorItem{}, "<html>bad gateway</html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := recorder(t, tc.status, tc.body)
			r, err := New(Config{URL: srv.URL}).JSON(context.Background(), http.MethodGet, "/x", nil, nil)
			var e *Error
			if !errors.As(err, &e) || r == nil || r.Status != tc.status || !IsStatus(err, tc.status) || IsStatus(err, 200) {
				t.Fatalf("got %v (%T), %+v", err, err, r)
			}
			if e.Method != "GET" || e.Path != "/x" || e.Status != tc.status || string(e.Body) != tc.body {
				t.Errorf("error %+v", e)
			}
			items := e.Items()
			if tc.raw != "" {
				if len(items) != 0 || e.Code() != "" || e.RequestID() != "" {
					t.Errorf("errors %+v", items)
				}
				return
			}
			if len(items) != 1 || !reflect.DeepEqual(items[0], tc.want) || e.Code() != tc.want.Code || e.RequestID() != tc.want.RequestID {
				t.Errorf("errors %+v\nwant %+v", items, tc.want)
			}
		})
	}
}

func TestErrorReads(t *testing.T) {
	e := &Error{Method: "POST", Path: "/claims", Status: 409, Body: []byte(`{"errors": [{"status": 409, "code": "berth.no_valid_host",
		"detail": "There was a conflict when trying to complete your request.\n\n 10 providers; 10 lacked VCPU 64  "}]}`)}
	if got, want := e.Error(), "409 Conflict (berth.no_valid_host): 10 providers; 10 lacked VCPU 64"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = &Error{Method: "GET", Path: "/policy_units", Status: 404, Body: []byte(`{"errors": [{"status": 404,
		"code": "placement.undefined_code", "detail": "The resource could not be found."}]}`)}
	if got := e.Error(); got != "404 Not Found: GET /policy_units (no such object, or a server without this endpoint)" {
		t.Errorf("got %q", got)
	}
	e = &Error{Method: "GET", Path: "/", Status: 502, Body: []byte("<html>bad gateway</html>")}
	if got := e.Error(); got != "GET /: 502 Bad Gateway: <html>bad gateway</html>" {
		t.Errorf("got %q", got)
	}
	d := Detail("The server could not comply with the request since it is either malformed or otherwise incorrect.\n\n JSON does not validate: 'query' is a required property Failed validating 'required' in schema: {...}")
	if d != "JSON does not validate: 'query' is a required property" {
		t.Errorf("Detail = %q", d)
	}
}

// TestNoAnswer: a refused connection is a *NoAnswerError around
// http.Client's *url.Error; a URL that does not parse is its own error.
func TestNoAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = New(Config{URL: addr}).Do(context.Background(), http.MethodGet, "/", nil, "")
	var na *NoAnswerError
	var ue *url.Error
	if !errors.As(err, &na) || na.Reading || !errors.As(err, &ue) || !strings.Contains(err.Error(), "http://"+addr+"/") {
		t.Errorf("refused: %v (%T)", err, err)
	}
	_, err = New(Config{URL: "http://a b"}).Do(context.Background(), http.MethodGet, "/", nil, "")
	if err == nil || errors.As(err, &na) {
		t.Errorf("bad URL: %v (%T)", err, err)
	}
}

// BenchmarkErrorItems is the cost of decoding a Placement error body,
// which NewError leaves to the first caller that asks for the items.
func BenchmarkErrorItems(b *testing.B) {
	r := &Response{Method: "PUT", Path: "/allocations/5d6e1b3a-0000-4000-8000-000000000001", Status: 409,
		Body: []byte(`{"errors": [{"status": 409, "title": "Conflict", "detail": "There was a conflict when trying to complete your request.\n\n Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider '5d6e1b3a-0000-4000-8000-000000000002'. The requested amount would exceed the capacity.  ", "code": "placement.undefined_code", "request_id": "req-5d6e1b3a-0000-4000-8000-000000000003"}]}`)}
	b.ReportAllocs()
	for b.Loop() {
		if items := NewError(r).Items(); len(items) != 1 {
			b.Fatal(items)
		}
	}
}
