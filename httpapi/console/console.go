package console

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/berthapi"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
)

// The operator console: read-only HTML pages at /ui over the components
// the API uses (the ledger, its snapshot and engine, the claimer, the
// catalogue), rendered on the server with html/template, its stylesheet
// embedded in the binary; nothing is fetched from elsewhere and no
// script runs in the browser. Each page is guarded by the policy rule of
// the API route whose data it shows (pages.go) and authenticated as
// the API is: the token the operator enters once is kept in a session
// cookie (HttpOnly, SameSite=Strict, path /ui) and sent on as
// X-Auth-Token; with noauth2 and no token, the console acts as "admin",
// which noauth2 lets anyone claim anyway. Pages are aggregates or pages
// of a bounded size, so they stay small however large the cloud
// (docs/console.md). The pages themselves are in pages.go, their
// templates and the stylesheet in templates/.

// Path is where the console is served.
const Path = "/ui"

// consoleCookie holds the token entered on the login page.
const consoleCookie = "berth_console_token"

// headerAuthToken carries the token the console sends on as the API's.
const headerAuthToken = "X-Auth-Token"

//go:embed templates
var consoleFiles embed.FS

// Config is what the console reads through and how it authenticates, as
// the API server gives it.
type Config struct {
	Store Store
	// Claims reads a scriptlet test's sample claim, and its Claimer
	// explains it and remembers the recent refusals.
	Claims *berthapi.Claims
	// Capacity reads the "where does it fit" form as GET /capacity's
	// query.
	Capacity *berthapi.Capacity
	Catalog  ScriptletCatalog
	Limits   LimitsSource
	Authz    Enforcer
	// Authenticate resolves the identity of a request as the API does,
	// or refuses it.
	Authenticate func(c echo.Context) (authz.Credentials, error)
	// AdminWithoutToken acts as "admin" for a request with no token
	// (noauth2, which lets anyone claim it anyway).
	AdminWithoutToken bool
	// Auth is the authentication strategy, for the pages.
	Auth string
	// AuditThresholds are the ages the audit page lists findings with.
	AuditThresholds audit.AuditThresholds
	Log             *slog.Logger
	// ErrorOf maps an error to the API's answer (the server's one
	// table), which the error page shows.
	ErrorOf func(c echo.Context, err error) *wire.Error
	// Middleware runs before each page: the request id, the log line,
	// span and metrics, and the request deadline, as for the API.
	Middleware []echo.MiddlewareFunc
}

// Store is what the console reads of the ledger, part by part (each
// field the part of a *ledger.Store of the same name).
type Store struct {
	Providers   ProviderReader
	Allocations AllocationReader
	Snapshots   SnapshotReader
	Cloud       StateReader
	Catalogue   CatalogueReader
	Quotas      UsageReader
	Auditor     AuditReader
	Claims      GangReader
	Preemptions PreemptionReader
}

// ProviderReader reads a provider's inventories, usages, traits and
// aggregates (a *resources.Providers).
type ProviderReader interface {
	ProviderGet(ctx context.Context, uuid string) (engine.Provider, error)
	InventoryList(ctx context.Context, providerUUID string) (resources.ProviderInventories, error)
	ProviderUsagesGet(ctx context.Context, providerUUID string) (resources.ProviderUsages, error)
	ProviderTraits(ctx context.Context, rpUUID string) (generation int64, traits []resources.Trait, err error)
	ProviderAggregates(ctx context.Context, rpUUID string) (generation int64, aggregates []string, err error)
}

// AllocationReader reads the allocations against a provider (a
// *resources.Allocations).
type AllocationReader interface {
	AllocationsByProvider(ctx context.Context, providerUUID string) (int64, []resources.AllocationRecord, error)
}

// SnapshotReader reads the snapshot: the whole of it, a provider's tree,
// what fits (a *snapshot.Cache).
type SnapshotReader interface {
	Snapshot(ctx context.Context, classes, traits []string) (*engine.Snapshot, error)
	ProvidersMatching(ctx context.Context, f engine.ProviderFilter) ([]engine.Provider, error)
	Capacity(ctx context.Context, p engine.CapacityParams) (*engine.Capacity, error)
}

// StateReader reads what a provider's agent last reported (a
// *scheduling.Cloud).
type StateReader interface {
	ProviderStateGet(ctx context.Context, providerUUID string) (engine.ProviderState, error)
}

// CatalogueReader reads the stored policies, scriptlets and shadows (a
// *scheduling.Catalogue).
type CatalogueReader interface {
	SchedulingPolicies(ctx context.Context) ([]scheduling.SchedulingPolicy, error)
	Scriptlets(ctx context.Context) ([]scheduling.Scriptlet, error)
	Shadows(ctx context.Context) ([]scheduling.Shadow, error)
}

// UsageReader reads the projects' usage (a *quotas.Quotas).
type UsageReader interface {
	ProjectUsages(ctx context.Context, p quotas.ProjectUsagesParams) ([]quotas.ProjectUsage, error)
}

// AuditReader reads a page of the allocation audit (an *audit.Auditor).
type AuditReader interface {
	Audit(ctx context.Context, p audit.AuditParams) (audit.AuditPage, error)
}

// GangReader lists the latest gangs (a *claimrecords.Records).
type GangReader interface {
	Gangs(ctx context.Context, limit int) ([]claimrecords.GangSummary, error)
}

// PreemptionReader reads the consumers claims preempted (a
// *claimrecords.Records).
type PreemptionReader interface {
	Preemptions(ctx context.Context, p claimrecords.PreemptionsParams) ([]claimrecords.Preemption, bool, error)
}

// ScriptletCatalog builds the policy a scriptlet test ranks with (a
// *catalog.Catalog).
type ScriptletCatalog interface {
	PolicyWithScriptlet(ctx context.Context, policy, scriptlet string) (*scheduler.Policy, error)
}

// LimitsSource gives a project's limits (a quota.Source).
type LimitsSource interface {
	Limits(ctx context.Context, project string) (own, registered quotas.Limits, err error)
}

// Enforcer decides whether credentials pass a policy rule (an
// *authz.Enforcer).
type Enforcer interface {
	Allowed(rule string, creds authz.Credentials, target authz.Target) bool
}

// Console serves /ui.
type Console struct {
	cfg   Config
	e     *echo.Echo
	pages map[string]*template.Template
}

// recentRefusals is what the refusals page reads of the claimer.
func (k *Console) recentRefusals(since time.Time) []claims.Refusal {
	return k.cfg.Claims.Claimer.RecentRefusals(since)
}

// consolePage is a page's route, the policy rule of the API data it
// shows, and its handler.
type consolePage struct {
	path, rule string
	handler    func(c echo.Context, p authz.Credentials) error
}

// New builds the console over cfg: its templates (a page is the layout
// and the page's own file) and its routes.
func New(cfg Config) (*Console, error) {
	k := &Console{cfg: cfg, e: echo.New(), pages: map[string]*template.Template{}}
	k.e.HideBanner, k.e.HidePort = true, true
	k.e.HTTPErrorHandler = k.errorPage
	files, err := fs.Glob(consoleFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(consoleFuncs).ParseFS(consoleFiles, "templates/layout.html", f)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		k.pages[name] = t
	}
	k.e.Use(cfg.Middleware...)
	k.e.GET(Path+"/style.css", k.style)
	k.e.GET(Path+"/login", k.loginForm)
	k.e.POST(Path+"/login", k.login)
	k.e.POST(Path+"/logout", k.logout)
	for _, p := range k.routes() {
		k.e.GET(p.path, k.guard(p))
	}
	// The scriptlet test sends a request body; it writes nothing.
	k.e.POST(Path+"/scriptlets/test", k.guard(consolePage{"", "berth:scriptlets:test", k.scriptletTest}))
	return k, nil
}

// Serves reports whether path is the console's.
func (k *Console) Serves(path string) bool {
	return path == Path || strings.HasPrefix(path, Path+"/")
}

// ServeHTTP serves a request of the console's paths.
func (k *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { k.e.ServeHTTP(w, r) }

// guard authenticates the request as the API does, with the cookie's
// token, and checks page's rule.
func (k *Console) guard(page consolePage) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if ck, err := r.Cookie(consoleCookie); err == nil && ck.Value != "" {
			r.Header.Set(headerAuthToken, ck.Value)
		} else if k.cfg.AdminWithoutToken && r.Header.Get(headerAuthToken) == "" {
			r.Header.Set(headerAuthToken, "admin")
		}
		p, err := k.cfg.Authenticate(c)
		if err != nil {
			return err
		}
		if !k.cfg.Authz.Allowed(page.rule, p, authz.Target{"project_id": p.ProjectID, "user_id": p.UserID}) {
			return wire.NewError(http.StatusForbidden, "", "Policy does not allow %s to be performed.", page.rule)
		}
		return page.handler(c, p)
	}
}

// render writes page name with data, in the layout, titled title. The
// layout offers "Log out" only to someone logged in: a request with the
// session cookie (not a visitor let in as admin without a token).
func (k *Console) render(c echo.Context, status int, name, title string, data any) error {
	t := k.pages[name]
	if t == nil {
		return fmt.Errorf("console: no page %q", name)
	}
	ck, err := c.Request().Cookie(consoleCookie)
	loggedIn := err == nil && ck.Value != ""
	var buf bytes.Buffer
	err = t.Execute(&buf, map[string]any{"Title": title, "Page": name, "Data": data, "Auth": k.cfg.Auth, "LoggedIn": loggedIn})
	if err != nil {
		return fmt.Errorf("console: page %s: %w", name, err)
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	return c.HTMLBlob(status, buf.Bytes())
}

// errorPage renders an error as the API words it: its status, code and
// message; a 401 offers the login form.
func (k *Console) errorPage(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := k.cfg.ErrorOf(c, err)
	if e.Status >= 500 {
		k.cfg.Log.ErrorContext(c.Request().Context(), "console page failed", "path", c.Request().URL.Path, "error", err)
	}
	msg := e.Msg
	if e.Status == http.StatusNotFound && msg == "" {
		msg = "No such page."
	}
	data := map[string]any{"Status": e.Status, "StatusText": http.StatusText(e.Status), "Code": e.Code, "Msg": msg}
	if rerr := k.render(c, e.Status, "error", http.StatusText(e.Status), data); rerr != nil {
		_ = c.String(http.StatusInternalServerError, "console error page failed")
	}
}

// style serves the stylesheet.
func (k *Console) style(c echo.Context) error {
	b, err := consoleFiles.ReadFile("templates/style.css")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "max-age=3600")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", b)
}

func (k *Console) loginForm(c echo.Context) error {
	return k.render(c, http.StatusOK, "login", "Log in", map[string]any{"Failed": ""})
}

// login checks the token as the API would (a request with it as
// X-Auth-Token) and keeps it in the session cookie.
func (k *Console) login(c echo.Context) error {
	token := strings.TrimSpace(c.FormValue("token"))
	c.Request().Header.Set(headerAuthToken, token)
	if _, err := k.cfg.Authenticate(c); err != nil || token == "" {
		msg := "No token was given."
		if err != nil {
			msg = k.cfg.ErrorOf(c, err).Msg
		}
		return k.render(c, http.StatusUnauthorized, "login", "Log in", map[string]any{"Failed": msg})
	}
	c.SetCookie(&http.Cookie{Name: consoleCookie, Value: token, Path: Path, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil})
	return c.Redirect(http.StatusSeeOther, Path)
}

func (k *Console) logout(c echo.Context) error {
	c.SetCookie(&http.Cookie{Name: consoleCookie, Value: "", Path: Path, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	return c.Redirect(http.StatusSeeOther, Path+"/login")
}

// consoleFuncs are the templates' helpers. Escaping is html/template's;
// shown turns what it would let through unseen (control characters,
// invalid UTF-8) into visible escapes first.
var consoleFuncs = template.FuncMap{
	"shown": shown,
	"sum64": func(a, b int64) int64 { return a + b },
	"pct": func(f float64) string {
		return strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
	},
	"width": func(f float64) string {
		return strconv.FormatFloat(math.Min(100, math.Max(0, 100*f)), 'f', 1, 64)
	},
	"heat":       heatColour,
	"heatLegend": heatLegend,
	"ratio": func(f float64) string {
		return strconv.FormatFloat(f, 'g', 4, 64)
	},
	"query": consoleQuery,
	"add":   func(a, b int) int { return a + b },
	"pagerOf": func(base string, p pager, kv ...any) pagerLinks {
		with := func(offset int) string {
			args := append([]any{"offset", offset, "limit", p.Limit}, kv...)
			return consoleQuery(base, args...)
		}
		return pagerLinks{P: p, Prev: with(p.Prev()), Next: with(p.Next())}
	},
}

// pagerLinks are a pager's links.
type pagerLinks struct {
	P          pager
	Prev, Next string
}

// consoleQuery is base with the query of kv's key, value pairs (empty
// values and zeros left out).
func consoleQuery(base string, kv ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if v := fmt.Sprint(kv[i+1]); v != "" && v != "0" {
			q.Set(fmt.Sprint(kv[i]), v)
		}
	}
	if len(q) == 0 {
		return base
	}
	return base + "?" + q.Encode()
}

// shown is s with every control character and invalid byte written as a
// Go escape (\x01, \u200e, \xff), so that a name holding them reads as
// what it is.
func shown(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// heatColour is the heat map's colour of a utilisation fraction: green
// when idle, through yellow, to red when full.
func heatColour(f float64) string {
	f = math.Min(1, math.Max(0, f))
	return fmt.Sprintf("hsl(%.0f,70%%,45%%)", 120*(1-f))
}

// heatStop is one swatch of the heat map's legend.
type heatStop struct {
	Label, Colour string
}

// heatLegend is the heat map's legend: heatColour at 0%, 25%, ... 100%.
func heatLegend() []heatStop {
	var out []heatStop
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		out = append(out, heatStop{Label: strconv.Itoa(25*i) + "%", Colour: heatColour(f)})
	}
	return out
}

// pageParams reads the paging parameters offset and limit (at most max,
// default def) as the API words their refusal.
func pageParams(c echo.Context, def, most int) (offset, limit int, err error) {
	limit = def
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > most {
			return 0, 0, wire.BadRequest("Invalid limit %q: want an integer from 1 to %d.", v, most)
		}
	}
	if v := c.QueryParam("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, wire.BadRequest("Invalid offset %q: want an integer from 0.", v)
		}
	}
	return offset, limit, nil
}

// pager is what a page's links to the previous and next pages need.
type pager struct {
	Offset, Limit, Total int
}

func (p pager) HasPrev() bool { return p.Offset > 0 }
func (p pager) HasNext() bool { return p.Offset+p.Limit < p.Total }
func (p pager) Prev() int     { return max(p.Offset-p.Limit, 0) }
func (p pager) Next() int     { return p.Offset + p.Limit }
func (p pager) Last() int     { return min(p.Offset+p.Limit, p.Total) }
