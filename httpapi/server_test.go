package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/scheduler"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// build builds a server as berthd does: the components over store wired
// as cmd/berthd/compose wires them (apitest.Wire), sched the
// --scheduler-policy fallback (nil for none), cfg.Authz kept if set; and
// New serves them with the HTTP settings of cfg.
func build(cfg Config, store *ledger.Store, sched *scheduler.Policy, log *slog.Logger) (*Server, error) {
	c, err := apitest.Wire(store, sched, cfg.Authz, claims.Config{MaxCandidates: cfg.MaxCandidates}, log)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Authz, cfg.Limits, cfg.Cloud, cfg.Catalog, cfg.Claimer = store, c.Authz, c.Limits, c.Cloud, c.Catalog, c.Claimer
	return New(cfg, log)
}

// New builds no component: a Config without them is refused.
func TestNewNeedsComponents(t *testing.T) {
	if _, err := New(Config{}, nil); err == nil || !strings.Contains(err.Error(), "components") {
		t.Errorf("New without components: err = %v", err)
	}
}

// newBareServer builds a server without a store, enough for the parts of the
// API that never reach the ledger.
func newBareServer(t *testing.T) *Server {
	t.Helper()
	s, err := build(Config{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMicroversionNegotiation(t *testing.T) {
	s := newBareServer(t)
	tests := []struct {
		header     string
		wantStatus int
		wantHeader string
		wantBody   string
	}{
		{"", 200, "placement 1.0", ""},
		{"placement latest", 200, "placement 1.39", ""},
		{"placement 1.15", 200, "placement 1.15", ""},
		{"compute 2.1, placement 1.7", 200, "placement 1.7", ""},
		// As Placement's middleware: a refused header gets no version
		// header and no Vary (integration/testdata/placement/errors.json).
		{"placement 0.5", 406, "", "Invalid microversion: Unacceptable version header: 0.5"},
		{"placement 1.40", 406, "", "Invalid microversion: Unacceptable version header: 1.40"},
		{"placement pony.horse", 400, "", "invalid version string: pony.horse; invalid literal for int() with base 10: 'pony'"},
		{"placement 1.2.3", 400, "", "invalid version string: 1.2.3; invalid literal for int() with base 10: '2.3'"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if tt.header != "" {
			req.Header.Set("OpenStack-API-Version", tt.header)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != tt.wantStatus {
			t.Errorf("%q: status %d, want %d", tt.header, rec.Code, tt.wantStatus)
		}
		if got := rec.Header().Get("OpenStack-API-Version"); got != tt.wantHeader {
			t.Errorf("%q: version header %q, want %q", tt.header, got, tt.wantHeader)
		}
		if wantVary := tt.wantHeader != ""; wantVary != strings.EqualFold(rec.Header().Get("Vary"), "openstack-api-version") {
			t.Errorf("%q: Vary %q (want one: %v)", tt.header, rec.Header().Get("Vary"), wantVary)
		}
		if !strings.Contains(rec.Body.String(), tt.wantBody) {
			t.Errorf("%q: body %q lacks %q", tt.header, rec.Body.String(), tt.wantBody)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	s := newBareServer(t)
	req := httptest.NewRequest(http.MethodGet, "/barnabas", nil)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.23")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 404 {
		t.Fatalf("status %d", rec.Code)
	}
	var body struct {
		Errors []struct {
			Status    int    `json:"status"`
			Title     string `json:"title"`
			Detail    string `json:"detail"`
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	e := body.Errors[0]
	if e.Status != 404 || e.Title != "Not Found" || e.Code != "placement.undefined_code" ||
		!strings.HasPrefix(e.RequestID, "req-") || e.RequestID != rec.Header().Get("X-Openstack-Request-Id") {
		t.Errorf("unexpected error body %+v", e)
	}
}

func TestAuthRequired(t *testing.T) {
	s := newBareServer(t)
	req := httptest.NewRequest(http.MethodGet, "/resource_providers", nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", rec.Code)
	}
}

func TestMethodNotAllowedAtRoot(t *testing.T) {
	s := newBareServer(t)
	req := httptest.NewRequest(http.MethodDelete, "/", nil)
	req.Header.Set("X-Auth-Token", "admin")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET" {
		t.Fatalf("status %d allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	if !strings.Contains(rec.Body.String(), "The method DELETE is not allowed for this resource.") {
		t.Errorf("body %s", rec.Body.String())
	}
}

func TestOptionsIsNotAllowed(t *testing.T) {
	s := newBareServer(t)
	req := httptest.NewRequest(http.MethodOptions, "/", nil)
	req.Header.Set("X-Auth-Token", "admin")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET" {
		t.Fatalf("status %d allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}
