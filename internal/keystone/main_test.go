package keystone

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/keystonetest"
	"github.com/berthd/berth/ledger/ledgertest"
)

// One Keystone (and one PostgreSQL, for the API tests) serves every test
// of the package.
func TestMain(m *testing.M) { os.Exit(keystonetest.Run(m, ledgertest.Run)) }

// proxy sits between Berth and a Keystone on loopback: it counts the token
// validations that reach Keystone and can answer in its place with an
// error status.
type proxy struct {
	*httptest.Server
	// URL is the proxy's Identity endpoint (.../v3).
	URL string
	// validations counts GET /v3/auth/tokens requests passed on.
	validations atomic.Int64
	// fail, when not 0, is the status every request is answered with, or
	// down: every connection is dropped, or silent: no answer at all.
	fail atomic.Int32
}

// down is the proxy.fail value that drops connections; silent the one
// that accepts them and never answers (until the client gives up).
const (
	down   = -1
	silent = -2
)

// Validations counts the token validations the proxy passed to Keystone.
func (p *proxy) Validations() int64 { return p.validations.Load() }

// Fail makes the proxy answer every request with status (down: drop the
// connection; 0: pass requests on again).
func (p *proxy) Fail(status int32) { p.fail.Store(status) }

func newProxy(t testing.TB, keystoneURL string) *proxy {
	t.Helper()
	target, err := url.Parse(strings.TrimSuffix(keystoneURL, "/v3"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	// No idle connections to Keystone: uwsgi would keep a thread each.
	rp.Transport = &http.Transport{DisableKeepAlives: true}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch code := p.fail.Load(); {
		case code == silent:
			<-r.Context().Done()
			return
		case code == down:
			// As a Keystone whose host went away: the connection drops.
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		case code != 0:
			http.Error(w, "proxy says no", int(code))
			return
		}
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/auth/tokens") {
			p.validations.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	p.URL = p.Server.URL + "/v3"
	return p
}

// serviceConfig is Berth's service user on the Keystone at authURL.
func serviceConfig(authURL string) Config {
	return Config{
		AuthURL:  authURL,
		Username: keystonetest.Placement, Password: keystonetest.Password(keystonetest.Placement),
		ProjectName: keystonetest.ServiceProject,
		// Far above a validation's time, even on a loaded machine.
		Timeout: time.Minute,
	}
}

// newClient makes a Client of cfg, closed when t ends.
func newClient(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("keystone.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
