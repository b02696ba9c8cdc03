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
	p := keystonetest.NewProxy(t, k.URL)
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
	if n := p.Validations(); n != 1 {
		t.Errorf("Keystone saw %d validations, want 1", n)
	}
	if _, err := c.Authenticate(context.Background(), tok, ""); err != nil || p.Validations() != 1 {
		t.Errorf("cached: err %v, validations %d", err, p.Validations())
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
// keystonemiddleware does. It waits for the expiries (Keystone's clock is
// the real one) and for the renewal, never for work to end within a
// window: the tokens it needs alive come from the shared Keystone (same
// keys and database, tokens of an hour), and a token that expired before
// its first validation, on a machine that slow, is replaced.
func TestExpiry(t *testing.T) {
	t.Parallel()
	const lifetime = 15 * time.Second
	k := keystonetest.New(t, keystonetest.Options{TokenExpiration: lifetime})
	long := keystonetest.Shared(t)
	c := newClient(t, serviceConfig(k.URL))
	ctx := context.Background()
	first := c.session.Load()
	if first == nil {
		t.Fatal("no service session after New")
	}
	// Hang guard only: each step below takes seconds on an idle machine.
	guard := time.Now().Add(5 * time.Minute)
	var tok string
	var exp time.Time
	for {
		tok, exp = k.TokenExpiry(t, keystonetest.Member)
		_, err := c.Authenticate(ctx, tok, "")
		if err == nil {
			break
		}
		if !errors.Is(err, ErrInvalidToken) || time.Now().Before(exp) || time.Now().After(guard) {
			t.Fatalf("a token of %v, validated at once: %v", lifetime, err)
		}
	}
	// Until the token expired, and until Berth's session token (issued
	// before it, so expired by then too) was renewed. The first session
	// seen after first is its renewal: the next one comes three quarters
	// of a lifetime later.
	var renewed *sessionTimes
	for renewed == nil || time.Now().Before(exp.Add(500*time.Millisecond)) {
		if st := c.session.Load(); renewed == nil && st != first {
			renewed = st
		}
		if time.Now().After(guard) {
			t.Fatalf("Berth's service token (expiring %v) not renewed by %v", first.expires, time.Now())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Authenticate(ctx, tok, ""); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("expired token: err = %v, want ErrInvalidToken", err)
	}
	// The renewal started before the session token expired (when it
	// ended is Keystone's speed), and holds a token that lives longer.
	if !renewed.issued.Before(first.expires) || !renewed.expires.After(first.expires) {
		t.Errorf("service token not renewed before it expired: first %+v, renewed %+v", first, renewed)
	}
	fresh := long.Token(t, keystonetest.Reader)
	if _, err := c.Authenticate(ctx, fresh, ""); err != nil {
		t.Errorf("new token after the service token's renewal: %v", err)
	}
	// A service acting for the user: the expired token is accepted.
	svc := long.Token(t, keystonetest.Placement)
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
	p := keystonetest.NewProxy(t, k.URL)
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
		p.Fail(code)
		if _, err := c.Authenticate(ctx, fresh, ""); !errors.Is(err, ErrUnavailable) {
			t.Errorf("Keystone answering %d: err = %v, want ErrUnavailable", code, err)
		}
	}
	p.Fail(0)
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
	p := keystonetest.NewProxy(t, k.URL)
	p.Fail(503)
	c := newClient(t, serviceConfig(p.URL))
	tok := k.Token(t, keystonetest.Reader)
	if _, err := c.Authenticate(context.Background(), tok, ""); !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	p.Fail(0)
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
// fail at once without reaching Keystone, also once it answers again,
// until silentRetryInterval has passed; then one request probes it, and
// its answer ends the silence. The interval is read on a clock the test
// moves, so no step has to end within it. A Keystone slower than the
// timeout (a loaded machine's) looks silent to the client too: where the
// test needs an answer it moves the clock on and asks again, each time
// checking that the request was sent.
func TestSilentKeystone(t *testing.T) {
	t.Parallel()
	k := keystonetest.Shared(t)
	p := keystonetest.NewProxy(t, k.URL)
	cfg := serviceConfig(p.URL)
	// What the silent request waits, once.
	cfg.Timeout = 10 * time.Second
	c := newClient(t, cfg)
	clock := &fakeClock{at: time.Now()}
	c.now = clock.now
	ctx := context.Background()
	guard := time.Now().Add(5 * time.Minute) // a hang guard only
	// answered validates tok until Keystone answers in time, each attempt
	// sent to Keystone (validations counts it before sending).
	answered := func(what, tok string) {
		t.Helper()
		for {
			sent := c.validations.Load()
			_, err := c.Authenticate(ctx, tok, "")
			if n := c.validations.Load() - sent; n != 1 {
				t.Fatalf("%s: %d validations sent, want 1 (err %v)", what, n, err)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, errSilent) || time.Now().After(guard) {
				t.Fatalf("%s: %v", what, err)
			}
			clock.advance(silentRetryInterval)
		}
	}
	// Log in first, so that only validations meet the silence: until
	// Berth has a session and Keystone answered a validation in time.
	for reader := k.Token(t, keystonetest.Reader); ; {
		_, err := c.Authenticate(ctx, reader, "")
		if err == nil {
			break
		}
		if !errors.Is(err, ErrUnavailable) || time.Now().After(guard) {
			t.Fatal(err)
		}
		clock.advance(silentRetryInterval)
		time.Sleep(100 * time.Millisecond) // after a failed login, the next waits loginRetryInterval
	}
	var fresh []string
	for range 6 {
		fresh = append(fresh, k.Token(t, keystonetest.Member))
	}
	p.Fail(keystonetest.ProxySilent)
	if _, err := c.Authenticate(ctx, fresh[0], ""); !errors.Is(err, ErrUnavailable) || !errors.Is(err, errSilent) {
		t.Fatalf("first new token while silent: %v, want ErrUnavailable for a timeout", err)
	}
	// Counted by the client before it sends a validation (a count at the
	// proxy could still see the first, timed-out request arrive late).
	before := c.validations.Load()
	failFast := func(when string, tokens ...string) {
		t.Helper()
		for _, tok := range tokens {
			if _, err := c.Authenticate(ctx, tok, ""); !errors.Is(err, ErrUnavailable) || errors.Is(err, errSilent) {
				t.Fatalf("new token %s: %v, want ErrUnavailable at once", when, err)
			}
		}
		if n := c.validations.Load() - before; n != 0 {
			t.Fatalf("%d validations were sent to Keystone %s, want 0", n, when)
		}
	}
	failFast("while known silent", fresh[1:]...)
	p.Fail(0)
	clock.advance(silentRetryInterval - time.Nanosecond)
	failFast("answering again, before the retry interval passed", fresh[1:]...)
	clock.advance(time.Nanosecond)
	// The probe, sent; its answer ends the silence: the next token is
	// sent too.
	answered("the probe once the retry interval passed", fresh[1])
	answered("a new token after the probe", fresh[2])
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	at time.Time
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = f.at.Add(d)
}
