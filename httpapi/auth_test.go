package httpapi

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/berthd/berth/authz"
)

func newServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := build(cfg, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPolicy(t *testing.T, set string) *authz.Enforcer {
	t.Helper()
	e, err := authz.New(set, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func serve(s *Server, method, target string, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func TestNoAuth2Credentials(t *testing.T) {
	for _, tc := range []struct {
		name    string
		token   string
		headers map[string]string
		want    authz.Credentials
	}{
		{"admin", "admin", nil, authz.Credentials{Roles: []string{"admin"}, ProjectID: "admin", UserID: "admin"}},
		{"user", "user", nil, authz.Credentials{ProjectID: "user", UserID: "user"}},
		{"user and project", "alice:p9", nil, authz.Credentials{ProjectID: "p9", UserID: "alice"}},
		{"X-Roles replaces admin", "admin", map[string]string{"X-Roles": "reader"},
			authz.Credentials{Roles: []string{"reader"}, ProjectID: "admin", UserID: "admin"}},
		{"empty X-Roles is no role", "admin", map[string]string{"X-Roles": ""},
			authz.Credentials{ProjectID: "admin", UserID: "admin"}},
		{"X-Project-Id wins", "user", map[string]string{"X-Roles": "admin, member,reader", "X-Project-Id": "p1"},
			authz.Credentials{Roles: []string{"admin", "member", "reader"}, ProjectID: "p1", UserID: "user"}},
		{"system scope has no project", "user", map[string]string{"X-Roles": "reader", "OpenStack-System-Scope": "all"},
			authz.Credentials{Roles: []string{"reader"}, UserID: "user", SystemScope: "all"}},
		{"X-User-Id is ignored", "user", map[string]string{"X-User-Id": "root"},
			authz.Credentials{ProjectID: "user", UserID: "user"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			if got := noAuth2Credentials(tc.token, h); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// GET /usages checks its policy before its query, so an extra query
// parameter tells the two apart without a database: 403 is the policy's
// refusal, 400 the schema's, after the policy let the request through.
const usagesProbe = "/usages?project_id=p1&probe=1"

func TestAuthorizeNoAuth2Secure(t *testing.T) {
	s := newServer(t, Config{Authz: mustPolicy(t, authz.SetSecure)})
	v := map[string]string{"OpenStack-API-Version": "placement 1.9"}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		target  string
		want    int
	}{
		{"no token", nil, usagesProbe, 401},
		{"seeding admin", map[string]string{"X-Auth-Token": "admin"}, usagesProbe, 400},
		{"plain user", map[string]string{"X-Auth-Token": "user"}, usagesProbe, 403},
		{"own project reader", map[string]string{"X-Auth-Token": "user", "X-Roles": "reader", "X-Project-Id": "p1"}, usagesProbe, 400},
		{"other project reader", map[string]string{"X-Auth-Token": "user", "X-Roles": "reader", "X-Project-Id": "p2"}, usagesProbe, 403},
		{"reader without project_id", map[string]string{"X-Auth-Token": "user", "X-Roles": "reader", "X-Project-Id": "p1"}, "/usages?probe=1", 403},
		{"admin without project_id", map[string]string{"X-Auth-Token": "user", "X-Roles": "admin", "X-Project-Id": "p2"}, "/usages?probe=1", 400},
		{"system admin", map[string]string{"X-Auth-Token": "user", "X-Roles": "admin", "OpenStack-System-Scope": "all"}, usagesProbe, 403},
		{"service", map[string]string{"X-Auth-Token": "user", "X-Roles": "service", "X-Project-Id": "svc"}, usagesProbe, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			for k, x := range v {
				h[k] = x
			}
			for k, x := range tc.headers {
				h[k] = x
			}
			if rec := serve(s, http.MethodGet, tc.target, h); rec.Code != tc.want {
				t.Errorf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
		})
	}
}

func TestAuthorizeDefaultIsAdminOnly(t *testing.T) {
	s := newBareServer(t)
	h := map[string]string{"OpenStack-API-Version": "placement 1.9", "X-Auth-Token": "user", "X-Roles": "reader,service", "X-Project-Id": "p1"}
	rec := serve(s, http.MethodGet, usagesProbe, h)
	if rec.Code != 403 {
		t.Fatalf("status %d, want 403", rec.Code)
	}
	if want := "Policy does not allow placement:usages to be performed."; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("body %s lacks %q", rec.Body, want)
	}
	h["X-Roles"] = "admin"
	if rec := serve(s, http.MethodGet, usagesProbe, h); rec.Code != 400 {
		t.Errorf("admin: status %d, want 400 (past the policy)", rec.Code)
	}
}

func TestKeystoneHeaders(t *testing.T) {
	s := newServer(t, Config{Auth: AuthKeystoneHeaders, Authz: mustPolicy(t, authz.SetSecure)})
	reader := map[string]string{"OpenStack-API-Version": "placement 1.9", "X-Roles": "reader", "X-Project-Id": "p1", "X-User-Id": "u1"}
	if rec := serve(s, http.MethodGet, usagesProbe, reader); rec.Code != 401 {
		t.Errorf("without X-Identity-Status: status %d, want 401", rec.Code)
	}
	reader["X-Identity-Status"] = "Invalid"
	if rec := serve(s, http.MethodGet, usagesProbe, reader); rec.Code != 401 {
		t.Errorf("X-Identity-Status Invalid: status %d, want 401", rec.Code)
	}
	reader["X-Identity-Status"] = "Confirmed"
	if rec := serve(s, http.MethodGet, usagesProbe, reader); rec.Code != 400 {
		t.Errorf("own project: status %d, want 400 (past the policy)", rec.Code)
	}
	reader["X-Project-Id"] = "p2"
	if rec := serve(s, http.MethodGet, usagesProbe, reader); rec.Code != 403 {
		t.Errorf("other project: status %d, want 403", rec.Code)
	}
	// No token is needed, and a token means nothing by itself.
	admin := map[string]string{"OpenStack-API-Version": "placement 1.9", "X-Auth-Token": "admin", "X-Identity-Status": "Confirmed"}
	if rec := serve(s, http.MethodGet, usagesProbe, admin); rec.Code != 403 {
		t.Errorf("token admin without roles: status %d, want 403", rec.Code)
	}
}

func TestUnknownRulePanics(t *testing.T) {
	s := newBareServer(t)
	defer func() {
		if recover() == nil {
			t.Error("no panic for an unknown rule")
		}
	}()
	s.authorize("placement:frobnicate")
}
