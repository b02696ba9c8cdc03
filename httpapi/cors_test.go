package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

func TestCORS(t *testing.T) {
	s := newServer(t, Config{CORSAllowedOrigins: []string{"http://valid.example.com"}})
	const valid, invalid = "http://valid.example.com", "http://invalid.example.com"
	preflight := func(origin, method, headers string) map[string]string {
		h := map[string]string{"Origin": origin, "Access-Control-Request-Method": method}
		if headers != "" {
			h["Access-Control-Request-Headers"] = headers
		}
		return h
	}
	for _, tc := range []struct {
		name        string
		method      string
		path        string
		headers     map[string]string
		wantStatus  int
		wantOrigin  string
		wantHeaders string
	}{
		{"preflight", http.MethodOptions, "/", preflight(valid, "GET", "openstack-api-version"), 200, valid, "openstack-api-version"},
		{"preflight on an API path, no token", http.MethodOptions, "/resource_providers",
			preflight(valid, "POST", "X-Auth-Token, Content-Type"), 200, valid, "X-Auth-Token,Content-Type"},
		{"preflight from another origin", http.MethodOptions, "/", preflight(invalid, "GET", ""), 200, "", ""},
		{"preflight for a method not allowed", http.MethodOptions, "/", preflight(valid, "TRACE", ""), 200, "", ""},
		{"preflight for a header not allowed", http.MethodOptions, "/", preflight(valid, "GET", "X-Roles"), 200, "", ""},
		{"preflight without a method", http.MethodOptions, "/", map[string]string{"Origin": valid}, 200, "", ""},
		{"OPTIONS without Origin", http.MethodOptions, "/", nil, 200, "", ""},
		{"GET", http.MethodGet, "/", map[string]string{"Origin": valid}, 200, valid, ""},
		{"GET from another origin", http.MethodGet, "/", map[string]string{"Origin": invalid}, 200, "", ""},
		{"error response", http.MethodGet, "/resource_providers", map[string]string{"Origin": valid}, 401, valid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(s, tc.method, tc.path, tc.headers)
			h := rec.Header()
			if rec.Code != tc.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tc.wantStatus)
			}
			if got := h.Get("Access-Control-Allow-Origin"); got != tc.wantOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.wantOrigin)
			}
			if got := h.Get("Access-Control-Allow-Headers"); got != tc.wantHeaders {
				t.Errorf("Access-Control-Allow-Headers %q, want %q", got, tc.wantHeaders)
			}
			if tc.wantOrigin == "" {
				for k := range h {
					if strings.HasPrefix(k, "Access-Control-") {
						t.Errorf("unexpected %s: %s", k, h.Get(k))
					}
				}
				return
			}
			if tc.method == http.MethodOptions {
				if got := h.Get("Access-Control-Allow-Methods"); got != tc.headers["Access-Control-Request-Method"] {
					t.Errorf("Access-Control-Allow-Methods %q", got)
				}
				if rec.Body.Len() != 0 || h.Get("Content-Type") != "" {
					t.Errorf("preflight has a body: %q %q", h.Get("Content-Type"), rec.Body)
				}
			} else if got := h.Get("Access-Control-Expose-Headers"); got != "X-Openstack-Request-Id,OpenStack-API-Version,Location" {
				t.Errorf("Access-Control-Expose-Headers %q", got)
			}
			if vary := h.Values("Vary"); len(vary) == 0 || vary[len(vary)-1] != "Origin" {
				t.Errorf("Vary %q lacks Origin", vary)
			}
		})
	}
}

func TestCORSWildcard(t *testing.T) {
	s := newServer(t, Config{CORSAllowedOrigins: []string{"*"}})
	rec := serve(s, http.MethodGet, "/", map[string]string{"Origin": "https://anywhere.example"})
	if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin %q, want *", got)
	}
}

func TestValidateOrigin(t *testing.T) {
	for _, o := range []string{"*", "http://valid.example.com", "https://a.example:8443", "http://[::1]:8080"} {
		if err := ValidateOrigin(o); err != nil {
			t.Errorf("%s: %v", o, err)
		}
	}
	for _, o := range []string{"", "valid.example.com", "http://valid.example.com/", "http://a/b", "ftp://a",
		"http://u@a", "http://a?x", "http://a#f", "null"} {
		if err := ValidateOrigin(o); err == nil {
			t.Errorf("%q: no error", o)
		}
	}
	if _, err := build(Config{CORSAllowedOrigins: []string{"http://a/"}}, nil, nil, nil); err == nil {
		t.Error("New accepted a bad origin")
	}
}
