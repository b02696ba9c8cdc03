package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkClaimRouteChain is the request chain of POST /claims (request
// id, log line, span and metrics, microversion, deadline, routing,
// authentication, content checks, policy, admission) around a body the
// handler refuses at once (a 400): what the chain costs a claim beside
// its handler.
func BenchmarkClaimRouteChain(b *testing.B) {
	s, err := build(Config{}, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/claims", bytes.NewReader(body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement 1.39")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			b.Fatalf("POST /claims = %d %s", rec.Code, rec.Body)
		}
	}
}
