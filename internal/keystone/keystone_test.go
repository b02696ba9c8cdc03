package keystone

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/keystonetest"
)

// TestValidateIdentities: what Keystone says about each kind of token
// reaches the Identity, implied roles included.
func TestValidateIdentities(t *testing.T) {
	k := keystonetest.Shared(t)
	c := newClient(t, serviceConfig(k.URL))
	ctx := context.Background()
	for _, tc := range []struct {
		user, project, system string
		roles                 []string
	}{
		{keystonetest.Admin, keystonetest.AdminProject, "", []string{"admin", "member", "reader"}},
		{keystonetest.Member, keystonetest.DemoProject, "", []string{"member", "reader"}},
		{keystonetest.Reader, keystonetest.DemoProject, "", []string{"reader"}},
		{keystonetest.SystemReader, "", "all", []string{"reader"}},
		{keystonetest.Placement, keystonetest.ServiceProject, "", []string{"service"}},
	} {
		id, err := c.Validate(ctx, k.Token(t, tc.user), false)
		if err != nil {
			t.Fatalf("%s: %v", tc.user, err)
		}
		roles := slices.Clone(id.Roles)
		slices.Sort(roles)
		if id.UserID != k.UserIDs[tc.user] || id.UserName != tc.user || id.ProjectID != k.ProjectIDs[tc.project] ||
			id.SystemScope != tc.system || !slices.Equal(roles, tc.roles) || id.UserDomainName != keystonetest.Domain {
			t.Errorf("%s: identity %+v, want project %q system %q roles %v", tc.user, id, tc.project, tc.system, tc.roles)
		}
		if !id.ExpiresAt.After(time.Now()) {
			t.Errorf("%s: expires at %v", tc.user, id.ExpiresAt)
		}
	}
	for _, bad := range []string{"", "not-a-token", "gAAAAABnotafernettoken0000000000000000000000", "a b", strings.Repeat("x", maxTokenLen+1)} {
		if _, err := c.Validate(ctx, bad, false); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("token %.20q: err = %v, want ErrInvalidToken", bad, err)
		}
	}
	if _, err := c.Authenticate(ctx, "", ""); !errors.Is(err, ErrNoToken) {
		t.Errorf("no token: err = %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

// TestWrongCredentials: Berth's own credentials refused at start is an
// ErrCredentials error of one line that names the user, not the password.
func TestWrongCredentials(t *testing.T) {
	k := keystonetest.Shared(t)
	cfg := serviceConfig(k.URL)
	cfg.Password = "wrong-password-123"
	_, err := New(context.Background(), cfg)
	if !errors.Is(err, ErrCredentials) || strings.Contains(err.Error(), "\n") ||
		strings.Contains(err.Error(), cfg.Password) || !strings.Contains(err.Error(), keystonetest.Placement) {
		t.Fatalf("err = %v, want one line of ErrCredentials naming the user", err)
	}
	cfg = serviceConfig(k.URL)
	cfg.ProjectName = "no-such-project"
	if _, err := New(context.Background(), cfg); !errors.Is(err, ErrCredentials) {
		t.Fatalf("unknown project: err = %v", err)
	}
}

// TestApplicationCredential: Berth's session may be an application
// credential instead of a password.
func TestApplicationCredential(t *testing.T) {
	k := keystonetest.Shared(t)
	id, secret := k.ApplicationCredential(t, keystonetest.Placement)
	c := newClient(t, Config{AuthURL: k.URL, ApplicationCredentialID: id, ApplicationCredentialSecret: secret})
	if _, err := c.Validate(context.Background(), k.Token(t, keystonetest.Reader), false); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentNewToken: 200 concurrent requests with one new token
// cause one validation in Keystone; the next ones come from the cache.
func TestConcurrentNewToken(t *testing.T) {
	k := keystonetest.Shared(t)
	p := newProxy(t, k.URL)
	c := newClient(t, serviceConfig(p.URL))
	tok := k.Token(t, keystonetest.Member)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := c.Authenticate(context.Background(), tok, ""); err != nil {
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := p.validations.Load(); n != 1 {
		t.Errorf("Keystone saw %d validations, want 1", n)
	}
	if _, err := c.Authenticate(context.Background(), tok, ""); err != nil || p.validations.Load() != 1 {
		t.Errorf("cached: err %v, validations %d", err, p.validations.Load())
	}
	if s := c.Stats(); s.Validations != 1 || s.CacheHits < 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestRevokedAfterCacheTTL: a revoked token is served from the cache until
// the cache TTL passes, and refused after.
func TestRevokedAfterCacheTTL(t *testing.T) {
	k := keystonetest.Shared(t)
	cfg := serviceConfig(k.URL)
	cfg.CacheTTL = 2 * time.Second
	c := newClient(t, cfg)
	ctx := context.Background()
	tok := k.Token(t, keystonetest.Reader)
	if _, err := c.Validate(ctx, tok, false); err != nil {
		t.Fatal(err)
	}
	validated := time.Now()
	k.Revoke(t, tok)
	if time.Since(validated) < cfg.CacheTTL {
		if _, err := c.Validate(ctx, tok, false); err != nil {
			t.Errorf("within the cache TTL: %v", err)
		}
	}
	time.Sleep(time.Until(validated.Add(cfg.CacheTTL + 100*time.Millisecond)))
	if _, err := c.Validate(ctx, tok, false); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("after the cache TTL: err = %v, want ErrInvalidToken", err)
	}
}

// TestExpiry runs against a Keystone whose tokens live 15 seconds: a
// token is refused once it expired although the cache TTL is longer;
// Berth's own token is renewed before it expires; and an expired user
// token is accepted with a service's X-Service-Token, as
// keystonemiddleware does.
func TestExpiry(t *testing.T) {
	const lifetime = 15 * time.Second
	k := keystonetest.New(t, keystonetest.Options{TokenExpiration: lifetime})
	c := newClient(t, serviceConfig(k.URL))
	ctx := context.Background()
	first := c.session.Load()
	tok, exp := k.TokenExpiry(t, keystonetest.Member)
	if _, err := c.Authenticate(ctx, tok, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(exp.Add(500 * time.Millisecond)))
	if _, err := c.Authenticate(ctx, tok, ""); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("expired token: err = %v, want ErrInvalidToken", err)
	}
	// Berth's session token (issued before the user's) has expired by
	// now too: it must have been renewed.
	if st := c.session.Load(); st == first || !st.expires.After(time.Now()) {
		t.Errorf("service token not renewed: first expired %v, now %+v", first.expires, st)
	}
	fresh := k.Token(t, keystonetest.Reader)
	if _, err := c.Authenticate(ctx, fresh, ""); err != nil {
		t.Errorf("new token after the service token's renewal: %v", err)
	}
	// A service acting for the user: the expired token is accepted.
	svc := k.Token(t, keystonetest.Placement)
	a, err := c.Authenticate(ctx, tok, svc)
	if err != nil {
		t.Fatalf("expired token with a service token: %v", err)
	}
	if a.User.UserID != k.UserIDs[keystonetest.Member] || a.Service == nil ||
		a.Service.UserID != k.UserIDs[keystonetest.Placement] || !slices.Contains(a.Service.Roles, "service") {
		t.Errorf("auth %+v / %+v", a.User, a.Service)
	}
	// ...but not with a token that is no service's.
	if _, err := c.Authenticate(ctx, tok, fresh); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("expired token with a reader's token as service token: err = %v", err)
	}
	if _, err := c.Authenticate(ctx, fresh, "garbage-service-token"); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("invalid service token: err = %v", err)
	}
}

// TestOutage: with Keystone stopped, cached tokens keep working, new ones
// fail with ErrUnavailable (never ErrInvalidToken), as they do when it
// answers 5xx; when it is back everything works again.
func TestOutage(t *testing.T) {
	k := keystonetest.New(t, keystonetest.Options{})
	p := newProxy(t, k.URL)
	c := newClient(t, serviceConfig(p.URL))
	ctx := context.Background()
	cached, fresh := k.Token(t, keystonetest.Member), k.Token(t, keystonetest.Reader)
	if _, err := c.Authenticate(ctx, cached, ""); err != nil {
		t.Fatal(err)
	}
	k.Stop()
	if _, err := c.Authenticate(ctx, cached, ""); err != nil {
		t.Errorf("cached token during the outage: %v", err)
	}
	if _, err := c.Authenticate(ctx, fresh, ""); !errors.Is(err, ErrUnavailable) {
		t.Errorf("new token during the outage: err = %v, want ErrUnavailable", err)
	}
	if err := c.Ready(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ready during the outage: %v", err)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	for _, code := range []int32{500, 502, 503} {
		p.fail.Store(code)
		if _, err := c.Authenticate(ctx, fresh, ""); !errors.Is(err, ErrUnavailable) {
			t.Errorf("Keystone answering %d: err = %v, want ErrUnavailable", code, err)
		}
	}
	p.fail.Store(0)
	if _, err := c.Authenticate(ctx, fresh, ""); err != nil {
		t.Errorf("after the outage: %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready after the outage: %v", err)
	}
}

// TestUnreachableAtStart: New does not fail when Keystone is down; the
// session is made once it answers.
func TestUnreachableAtStart(t *testing.T) {
	k := keystonetest.Shared(t)
	p := newProxy(t, k.URL)
	p.fail.Store(503)
	c := newClient(t, serviceConfig(p.URL))
	tok := k.Token(t, keystonetest.Reader)
	if _, err := c.Authenticate(context.Background(), tok, ""); !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	p.fail.Store(0)
	// Requests fail fast for a moment after a failed login; the
	// background renewal logs in within its backoff.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.Authenticate(context.Background(), tok, "")
		if err == nil {
			break
		}
		if !errors.Is(err, ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("once Keystone answers: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSilentKeystone: a Keystone that accepts connections and never
// answers costs one request the whole timeout; the new tokens after it
// fail at once without reaching Keystone, until a probe after
// silentRetryInterval finds it answering again.
func TestSilentKeystone(t *testing.T) {
	k := keystonetest.Shared(t)
	p := newProxy(t, k.URL)
	cfg := serviceConfig(p.URL)
	// Long enough for a loaded machine's Keystone; the silent request waits it once.
	cfg.Timeout = 10 * time.Second
	c := newClient(t, cfg)
	ctx := context.Background()
	// Log in first, so that only validations meet the silence.
	if _, err := c.Authenticate(ctx, k.Token(t, keystonetest.Reader), ""); err != nil {
		t.Fatal(err)
	}
	// Tokens are made beforehand: on a loaded machine making them could
	// take longer than silentRetryInterval, and let a probe through.
	var fresh []string
	for range 6 {
		fresh = append(fresh, k.Token(t, keystonetest.Member))
	}
	p.fail.Store(silent)
	if _, err := c.Authenticate(ctx, fresh[0], ""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("first new token while silent: %v, want ErrUnavailable", err)
	}
	// Counted by the client before it sends a validation (a count at the
	// proxy could still see the first, timed-out request arrive late).
	before := c.validations.Load()
	for _, tok := range fresh[1:] {
		if _, err := c.Authenticate(ctx, tok, ""); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("new token while known silent: %v, want ErrUnavailable", err)
		}
	}
	if n := c.validations.Load() - before; n != 0 {
		t.Fatalf("%d validations were sent to the silent Keystone after the first timeout, want 0", n)
	}
	p.fail.Store(0)
	tok := fresh[1]
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.Authenticate(ctx, tok, "")
		if err == nil {
			break
		}
		if !errors.Is(err, ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("once Keystone answers again: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
