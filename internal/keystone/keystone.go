package keystone

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Error kinds; every error the Client returns wraps one of them.
var (
	// ErrNoToken: the request has no X-Auth-Token.
	ErrNoToken = errors.New("no token")
	// ErrInvalidToken: Keystone does not know the token, or it expired or
	// was revoked (or so did the X-Service-Token).
	ErrInvalidToken = errors.New("invalid token")
	// ErrUnavailable: Keystone could not be asked (unreachable, timed out,
	// answered 5xx, or refused Berth's own session). The request may be
	// retried.
	ErrUnavailable = errors.New("keystone unavailable")
	// ErrCredentials: Keystone refused Berth's service credentials.
	ErrCredentials = errors.New("service credentials refused")
)

// Defaults of Config.
const (
	DefaultCacheTTL    = 5 * time.Minute
	DefaultCacheSize   = 10000
	DefaultTimeout     = 10 * time.Second
	DefaultDomainName  = "Default"
	DefaultServiceRole = "service"
)

// loginRetryInterval: after a failed login, requests fail at once for
// this long rather than each trying again.
const loginRetryInterval = time.Second

// silentRetryInterval: after a validation that Keystone did not answer
// within the timeout (a Keystone that accepts connections and then says
// nothing), new tokens fail at once for this long instead of each waiting
// the whole timeout; then one request at a time probes Keystone again
// while the others keep failing fast, until one gets an answer.
const silentRetryInterval = 5 * time.Second

// errSilent marks a request that Keystone did not answer in time.
var errSilent = errors.New("no answer in time")

// maxTokenLen bounds what is sent to Keystone as a token; fernet tokens
// are about 200 bytes, JWS tokens under 1 KiB.
const maxTokenLen = 8192

// Config configures a Client.
type Config struct {
	// AuthURL is Keystone's Identity endpoint, such as
	// http://keystone.example:5000/v3 (a versionless URL works too). It is
	// also the uri of the WWW-Authenticate challenge of a 401.
	AuthURL string
	// Username and Password log Berth's service user in, to project
	// ProjectName. UserDomainName and ProjectDomainName default to
	// "Default".
	Username, Password, ProjectName, UserDomainName, ProjectDomainName string
	// ApplicationCredentialID and ApplicationCredentialSecret log in with
	// an application credential instead of a password (its project is the
	// credential's own).
	ApplicationCredentialID, ApplicationCredentialSecret string
	// CacheTTL is the longest a validated token is trusted without asking
	// Keystone again (never past its expiry). 0 means DefaultCacheTTL;
	// negative disables the cache.
	CacheTTL time.Duration
	// CacheSize bounds the cache in tokens (least recently used first
	// out). 0 means DefaultCacheSize.
	CacheSize int
	// Timeout bounds one request to Keystone. 0 means DefaultTimeout.
	Timeout time.Duration
	// ServiceRoles are the roles that make an X-Service-Token a service's
	// (keystonemiddleware's service_token_roles): with one, the user's
	// token may be expired (allow_expired). Empty means ["service"].
	ServiceRoles []string
	// Transport, if set, carries the requests to Keystone.
	Transport http.RoundTripper
	// Logger receives warnings (nil: slog.Default()). Tokens and secrets
	// are never logged; TokenHash identifies a token instead.
	Logger *slog.Logger
}

// Validate reports what is missing or contradictory in c.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.AuthURL)
	if c.AuthURL == "" {
		errs = append(errs, errors.New("keystone auth url: required with auth keystone"))
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("keystone auth url %q: want an http:// or https:// URL", c.AuthURL))
	}
	appCred := c.ApplicationCredentialID != "" || c.ApplicationCredentialSecret != ""
	password := c.Username != "" || c.Password != ""
	switch {
	case appCred && password:
		errs = append(errs, errors.New("keystone: give a username and password or an application credential, not both"))
	case appCred:
		if c.ApplicationCredentialID == "" || c.ApplicationCredentialSecret == "" {
			errs = append(errs, errors.New("keystone: an application credential needs both its id and its secret"))
		}
	default:
		if c.Username == "" || c.Password == "" || c.ProjectName == "" {
			errs = append(errs, errors.New("keystone: Berth's service user needs a username, a password and a project name (or an application credential)"))
		}
	}
	if c.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("keystone cache size %d: want 0 or more", c.CacheSize))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("keystone timeout %v: want 0 or more", c.Timeout))
	}
	return errors.Join(errs...)
}

// Identity is what Keystone says about a valid token: what
// keystonemiddleware hands Placement in its X-User-Id, X-Project-Id,
// X-Roles... headers.
type Identity struct {
	UserID, UserName, UserDomainID, UserDomainName             string
	ProjectID, ProjectName, ProjectDomainID, ProjectDomainName string
	// DomainID and DomainName are set for a domain-scoped token.
	DomainID, DomainName string
	// SystemScope is "all" for a system-scoped token, else empty.
	SystemScope string
	// Roles are the token's role names, with the roles they imply as
	// Keystone lists them.
	Roles []string
	// IsAdminProject is Keystone's is_admin_project (true when the token
	// does not say).
	IsAdminProject bool
	// ExpiresAt is when the token expires.
	ExpiresAt time.Time
}

// Auth is the identity of one request: the user's token and, when the
// request carried a valid X-Service-Token, the service's.
type Auth struct {
	User *Identity
	// Service is nil without an X-Service-Token.
	Service *Identity
}

// Stats count the work of a Client since it was made.
type Stats struct {
	// Validations is how many tokens were sent to Keystone.
	Validations int64
	// CacheHits is how many token lookups the cache answered.
	CacheHits int64
	// Invalid is how many validations Keystone answered "not a valid
	// token"; Unavailable how many got no usable answer (Keystone
	// unreachable, silent, in error, or Berth without a session), the
	// requests answered 503.
	Invalid, Unavailable int64
}

// Client validates tokens. Its methods are safe for concurrent use.
type Client struct {
	cfg       Config
	log       *slog.Logger
	pc        *gophercloud.ProviderClient
	sc        *gophercloud.ServiceClient
	opts      *gophercloud.AuthOptions
	tokensURL string
	// cache maps a token's cacheKey to its identity; nil when disabled.
	cache *lru.Cache[[sha256.Size]byte, entry]
	group singleflight.Group

	validations, hits, invalid, unavailable atomic.Int64

	// loginMu serialises first logins (before gophercloud can
	// re-authenticate by itself).
	loginMu  sync.Mutex
	loggedIn atomic.Bool
	// loginFailed is when the last login failed (unix nanoseconds), so
	// that requests during an outage at start fail fast instead of
	// queueing behind one login attempt each.
	loginFailed atomic.Int64
	// silentSince is when a validation last timed out (unix nanoseconds;
	// 0: Keystone answers), and probing is set while the one request
	// allowed through after silentRetryInterval is on its way.
	silentSince atomic.Int64
	probing     atomic.Bool
	// now is the clock of silentSince and silentRetryInterval: time.Now
	// (a test sets it, before any validation, to decide when the interval
	// has passed).
	now func() time.Time
	// session is the service token's issue and expiry time.
	session atomic.Pointer[sessionTimes]

	stop func()
	done chan struct{}
}

type sessionTimes struct{ issued, expires time.Time }

type entry struct {
	id    *Identity
	until time.Time
}

// New logs Berth's service user in and starts renewing its token. Wrong
// credentials are an error wrapping ErrCredentials; an unreachable
// Keystone is not an error: New logs a warning, keeps trying in the
// background, and validations fail with ErrUnavailable until it answers.
// Close stops the renewal.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserDomainName == "" {
		cfg.UserDomainName = DefaultDomainName
	}
	if cfg.ProjectDomainName == "" {
		cfg.ProjectDomainName = DefaultDomainName
	}
	if len(cfg.ServiceRoles) == 0 {
		cfg.ServiceRoles = []string{DefaultServiceRole}
	}
	c := &Client{cfg: cfg, log: cfg.Logger, now: time.Now}
	if c.log == nil {
		c.log = slog.Default()
	}
	pc, err := openstack.NewClient(cfg.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("keystone auth url %q: %w", cfg.AuthURL, err)
	}
	transport := cfg.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		transport = t
	}
	pc.HTTPClient = http.Client{Transport: transport, Timeout: cfg.Timeout}
	pc.UserAgent.Prepend("berthd")
	c.pc = pc
	if c.sc, err = openstack.NewIdentityV3(pc, gophercloud.EndpointOpts{}); err != nil {
		return nil, err
	}
	c.tokensURL = c.sc.ServiceURL("auth", "tokens") + "?nocatalog"
	c.opts = &gophercloud.AuthOptions{
		IdentityEndpoint: cfg.AuthURL,
		AllowReauth:      true,
	}
	if cfg.ApplicationCredentialID != "" {
		c.opts.ApplicationCredentialID = cfg.ApplicationCredentialID
		c.opts.ApplicationCredentialSecret = cfg.ApplicationCredentialSecret
	} else {
		c.opts.Username = cfg.Username
		c.opts.Password = cfg.Password
		c.opts.DomainName = cfg.UserDomainName
		c.opts.Scope = &gophercloud.AuthScope{ProjectName: cfg.ProjectName, DomainName: cfg.ProjectDomainName}
	}
	if cfg.CacheTTL > 0 {
		if c.cache, err = lru.New[[sha256.Size]byte, entry](cfg.CacheSize); err != nil {
			return nil, err
		}
	}
	lctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	err = c.login(lctx)
	cancel()
	switch {
	case errors.Is(err, ErrCredentials):
		return nil, err
	case err != nil:
		c.log.Warn("keystone: not reachable at start; requests needing a token validation answer 503 until it is",
			"auth_url", cfg.AuthURL, "error", err)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c.stop, c.done = stop, make(chan struct{})
	go c.renew(rctx)
	return c, nil
}

// Close stops renewing the service token and closes idle connections.
func (c *Client) Close() {
	c.stop()
	<-c.done
	c.pc.HTTPClient.CloseIdleConnections()
}

// AuthURL is the configured Identity endpoint.
func (c *Client) AuthURL() string { return c.cfg.AuthURL }

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Validations: c.validations.Load(), CacheHits: c.hits.Load(),
		Invalid: c.invalid.Load(), Unavailable: c.unavailable.Load()}
}

// who names the service identity in messages.
func (c *Client) who() string {
	if c.cfg.ApplicationCredentialID != "" {
		return fmt.Sprintf("application credential %s", c.cfg.ApplicationCredentialID)
	}
	return fmt.Sprintf("user %s (domain %s), project %s (domain %s)",
		c.cfg.Username, c.cfg.UserDomainName, c.cfg.ProjectName, c.cfg.ProjectDomainName)
}

// login authenticates the service user from scratch. A 4xx answer is
// ErrCredentials; anything else that fails is ErrUnavailable.
func (c *Client) login(ctx context.Context) error {
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	if c.loggedIn.Load() {
		return nil
	}
	start := time.Now()
	if err := openstack.AuthenticateV3(ctx, c.pc, c.opts, gophercloud.EndpointOpts{}); err != nil {
		c.loginFailed.Store(time.Now().UnixNano())
		var code gophercloud.ErrUnexpectedResponseCode
		if errors.As(err, &code) && code.Actual >= 400 && code.Actual < 500 {
			return fmt.Errorf("keystone: %w: %s answered %d for %s", ErrCredentials, c.cfg.AuthURL, code.Actual, c.who())
		}
		return fmt.Errorf("%w: log in at %s: %v", ErrUnavailable, c.cfg.AuthURL, err)
	}
	c.noteSession(start)
	c.loggedIn.Store(true)
	return nil
}

// noteSession records the expiry of the session token just obtained.
func (c *Client) noteSession(issued time.Time) {
	st := &sessionTimes{issued: issued, expires: issued.Add(time.Hour)}
	if r, ok := c.pc.GetAuthResult().(tokens.CreateResult); ok {
		if tok, err := r.ExtractToken(); err == nil && !tok.ExpiresAt.IsZero() {
			st.expires = tok.ExpiresAt
		}
	}
	c.session.Store(st)
}

// renew keeps the service token fresh: it logs in again when three
// quarters of the token's lifetime have passed, and retries with backoff
// (up to 30s) while Keystone does not answer. It returns when ctx ends.
func (c *Client) renew(ctx context.Context) {
	defer close(c.done)
	backoff := time.Second
	for {
		var wait time.Duration
		st := c.session.Load()
		if !c.loggedIn.Load() || st == nil {
			wait = backoff
		} else {
			wait = time.Until(st.issued.Add(st.expires.Sub(st.issued) * 3 / 4))
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		var err error
		if !c.loggedIn.Load() {
			err = c.login(rctx)
		} else {
			start := time.Now()
			if err = c.pc.Reauthenticate(rctx, ""); err == nil {
				c.noteSession(start)
			}
		}
		cancel()
		if err == nil {
			backoff = time.Second
			continue
		}
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("keystone: renewing Berth's service token failed; retrying", "in", backoff, "error", err)
		if st := c.session.Load(); st != nil && c.loggedIn.Load() && time.Now().After(st.expires) {
			c.log.Error("keystone: Berth's service token expired and could not be renewed", "error", err)
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// TokenHash identifies token in logs without revealing it: the first 8
// hex digits of its SHA-256.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

// Authenticate validates a request's X-Auth-Token (userToken) and, if
// given, its X-Service-Token, as keystonemiddleware does: an invalid
// service token fails the request; a valid one holding one of
// Config.ServiceRoles lets the user's token be expired (Keystone's
// allow_expired window), so that a service finishing a long operation for
// a user is still recognised.
func (c *Client) Authenticate(ctx context.Context, userToken, serviceToken string) (Auth, error) {
	if userToken == "" {
		return Auth{}, ErrNoToken
	}
	var a Auth
	allowExpired := false
	if serviceToken != "" {
		svc, err := c.Validate(ctx, serviceToken, false)
		if err != nil {
			if errors.Is(err, ErrInvalidToken) {
				return Auth{}, fmt.Errorf("%w: the X-Service-Token is not valid", ErrInvalidToken)
			}
			return Auth{}, err
		}
		a.Service = svc
		allowExpired = slices.ContainsFunc(svc.Roles, func(r string) bool {
			return slices.ContainsFunc(c.cfg.ServiceRoles, func(s string) bool { return strings.EqualFold(r, s) })
		})
	}
	user, err := c.Validate(ctx, userToken, allowExpired)
	if err != nil {
		return Auth{}, err
	}
	a.User = user
	return a, nil
}

// Validate returns the identity of token, from the cache or from
// Keystone. With allowExpired, a token past its expiry (within Keystone's
// allow_expired_window) is valid too. Concurrent calls for one token not
// in the cache share one request to Keystone.
func (c *Client) Validate(ctx context.Context, token string, allowExpired bool) (*Identity, error) {
	if !wellFormed(token) {
		return nil, ErrInvalidToken
	}
	key := cacheKey(token, allowExpired)
	if id, ok := c.cached(key); ok {
		return id, nil
	}
	v, err, _ := c.group.Do(string(key[:]), func() (any, error) {
		if id, ok := c.cached(key); ok {
			return id, nil
		}
		// The flight serves every caller waiting on it: it must not end
		// because the first one went away.
		probe, err := c.silentGate()
		if err != nil {
			c.unavailable.Add(1)
			return nil, err
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
		defer cancel()
		id, err := c.fetch(fctx, token, allowExpired)
		c.noteSilence(err, probe)
		switch {
		case errors.Is(err, ErrInvalidToken):
			c.invalid.Add(1)
		case err != nil:
			c.unavailable.Add(1)
		}
		if err != nil {
			return nil, err
		}
		c.store(key, id, allowExpired)
		return id, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Identity), nil
}

// silentGate fails at once while Keystone is known to be silent (see
// silentRetryInterval). Once the interval has passed it lets one request
// through as a probe (probe true: the caller must report its outcome to
// noteSilence) and keeps failing the others until that one ends.
func (c *Client) silentGate() (probe bool, err error) {
	since := c.silentSince.Load()
	if since == 0 {
		return false, nil
	}
	ago := c.now().Sub(time.Unix(0, since))
	if ago >= silentRetryInterval && c.probing.CompareAndSwap(false, true) {
		return true, nil
	}
	return false, fmt.Errorf("%w: Keystone did not answer within %v, %v ago; retrying at most every %v",
		ErrUnavailable, c.cfg.Timeout, ago.Round(time.Millisecond), silentRetryInterval)
}

// noteSilence records the outcome of a validation for silentGate: a
// timeout makes Keystone silent (again), anything that Keystone answered
// ends the silence, and other failures (a refused connection, which
// fails fast by itself) leave it as it was.
func (c *Client) noteSilence(err error, probe bool) {
	switch {
	case errors.Is(err, errSilent):
		if c.silentSince.Swap(c.now().UnixNano()) == 0 {
			c.log.Warn("keystone: a token validation got no answer in time; new tokens fail at once for a while",
				"timeout", c.cfg.Timeout, "retry_every", silentRetryInterval)
		}
	case err == nil || errors.Is(err, ErrInvalidToken):
		if c.silentSince.Swap(0) != 0 {
			c.log.Info("keystone: answering again")
		}
	}
	if probe {
		c.probing.Store(false)
	}
}

// wellFormed rejects what cannot be a token without asking Keystone (and
// what could not be sent in a header).
func wellFormed(token string) bool {
	if token == "" || len(token) > maxTokenLen {
		return false
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] >= 0x7f {
			return false
		}
	}
	return true
}

func cacheKey(token string, allowExpired bool) [sha256.Size]byte {
	h := sha256.New()
	if allowExpired {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	_, _ = io.WriteString(h, token)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func (c *Client) cached(key [sha256.Size]byte) (*Identity, bool) {
	if c.cache == nil {
		return nil, false
	}
	e, ok := c.cache.Get(key)
	if !ok {
		return nil, false
	}
	if !time.Now().Before(e.until) {
		// Left in place (a concurrent validation may be replacing it
		// right now); the next store overwrites it, or it ages out.
		return nil, false
	}
	c.hits.Add(1)
	return e.id, true
}

// store caches id for the cache TTL, but not past the token's expiry
// (unless expired tokens were allowed).
func (c *Client) store(key [sha256.Size]byte, id *Identity, allowExpired bool) {
	if c.cache == nil {
		return
	}
	until := time.Now().Add(c.cfg.CacheTTL)
	if !allowExpired && id.ExpiresAt.Before(until) {
		until = id.ExpiresAt
	}
	if time.Now().Before(until) {
		c.cache.Add(key, entry{id: id, until: until})
	}
}

// fetch asks Keystone about token.
func (c *Client) fetch(ctx context.Context, token string, allowExpired bool) (*Identity, error) {
	if !c.loggedIn.Load() {
		if failed := c.loginFailed.Load(); failed != 0 && time.Since(time.Unix(0, failed)) < loginRetryInterval {
			return nil, fmt.Errorf("%w: Berth has no service session yet (the last login failed %v ago)",
				ErrUnavailable, time.Since(time.Unix(0, failed)).Round(time.Millisecond))
		}
		if err := c.login(ctx); err != nil {
			if errors.Is(err, ErrCredentials) {
				c.log.Error("keystone: Berth's service credentials are refused", "error", err)
			}
			return nil, fmt.Errorf("%w: Berth has no service session: %v", ErrUnavailable, err)
		}
	}
	c.validations.Add(1)
	u := c.tokensURL
	if allowExpired {
		u += "&allow_expired=1"
	}
	resp, err := c.sc.Request(ctx, http.MethodGet, u, &gophercloud.RequestOpts{
		MoreHeaders:      map[string]string{"X-Subject-Token": token},
		OkCodes:          []int{http.StatusOK, http.StatusNonAuthoritativeInfo, http.StatusBadRequest, http.StatusNotFound},
		KeepResponseBody: true,
	})
	if err != nil {
		var code gophercloud.ErrUnexpectedResponseCode
		if errors.As(err, &code) && code.Actual < 500 {
			// 401 even after a fresh login, or 403: Keystone refuses
			// Berth's session. Not the caller's fault.
			c.log.Error("keystone: token validation refused to Berth's service user (does it hold the service role?)",
				"status", code.Actual, "token_hash", TokenHash(token))
		}
		var ne net.Error
		if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
			return nil, fmt.Errorf("%w: validate token %s: %w: %v", ErrUnavailable, TokenHash(token), errSilent, err)
		}
		return nil, fmt.Errorf("%w: validate token %s: %v", ErrUnavailable, TokenHash(token), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, ErrInvalidToken
	}
	var body tokenBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("%w: validate token %s: decode: %v", ErrUnavailable, TokenHash(token), err)
	}
	return body.identity(), nil
}

// Ready reports whether Keystone answers and Berth holds a service
// session: nil, or an error wrapping ErrUnavailable or ErrCredentials.
func (c *Client) Ready(ctx context.Context) error {
	if !c.loggedIn.Load() {
		if err := c.login(ctx); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.sc.Endpoint, nil)
	if err != nil {
		return err
	}
	resp, err := c.pc.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%w: %s answered %d", ErrUnavailable, c.sc.Endpoint, resp.StatusCode)
	}
	return nil
}

// tokenBody is the part of GET /v3/auth/tokens' answer Berth uses.
type tokenBody struct {
	Token struct {
		ExpiresAt time.Time `json:"expires_at"`
		User      struct {
			ID, Name string
			Domain   named
		} `json:"user"`
		Project *struct {
			ID, Name string
			Domain   named
		} `json:"project"`
		Domain         *named          `json:"domain"`
		System         map[string]bool `json:"system"`
		Roles          []named         `json:"roles"`
		IsAdminProject *bool           `json:"is_admin_project"`
	} `json:"token"`
}

type named struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (b tokenBody) identity() *Identity {
	t := b.Token
	id := &Identity{
		UserID: t.User.ID, UserName: t.User.Name, UserDomainID: t.User.Domain.ID, UserDomainName: t.User.Domain.Name,
		ExpiresAt: t.ExpiresAt, IsAdminProject: t.IsAdminProject == nil || *t.IsAdminProject,
	}
	if t.Project != nil {
		id.ProjectID, id.ProjectName = t.Project.ID, t.Project.Name
		id.ProjectDomainID, id.ProjectDomainName = t.Project.Domain.ID, t.Project.Domain.Name
	}
	if t.Domain != nil {
		id.DomainID, id.DomainName = t.Domain.ID, t.Domain.Name
	}
	if t.System["all"] {
		id.SystemScope = "all"
	}
	for _, r := range t.Roles {
		id.Roles = append(id.Roles, r.Name)
	}
	return id
}
