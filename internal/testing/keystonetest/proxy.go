package keystonetest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// Proxy sits between Berth and a Keystone on loopback: it counts the token
// validations that reach Keystone and can answer in its place with an
// error status.
type Proxy struct {
	*httptest.Server
	// URL is the proxy's Identity endpoint (.../v3).
	URL string
	// validations counts GET /v3/auth/tokens requests passed on.
	validations atomic.Int64
	// fail, when not 0, is the status every request is answered with, or
	// ProxyDown: every connection is dropped, or ProxySilent: no answer
	// at all.
	fail atomic.Int32
}

// ProxyDown is the Fail status that drops connections; ProxySilent the one
// that accepts them and never answers (until the client gives up).
const (
	ProxyDown   = -1
	ProxySilent = -2
)

// Validations counts the token validations the proxy passed to Keystone.
func (p *Proxy) Validations() int64 { return p.validations.Load() }

// Fail makes the proxy answer every request with status (ProxyDown: drop
// the connection; ProxySilent: never answer; 0: pass requests on again).
func (p *Proxy) Fail(status int32) { p.fail.Store(status) }

// NewProxy starts a Proxy in front of the Keystone at keystoneURL (its
// .../v3 endpoint), closed when t ends.
func NewProxy(t testing.TB, keystoneURL string) *Proxy {
	t.Helper()
	target, err := url.Parse(strings.TrimSuffix(keystoneURL, "/v3"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	// No idle connections to Keystone: uwsgi would keep a thread each.
	rp.Transport = &http.Transport{DisableKeepAlives: true}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch code := p.fail.Load(); {
		case code == ProxySilent:
			<-r.Context().Done()
			return
		case code == ProxyDown:
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
