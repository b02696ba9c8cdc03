package httpapi

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
)

// The operator console: read-only HTML pages at /ui over the components
// the API uses (the ledger, its snapshot and engine, the claimer, the
// catalogue), rendered on the server with html/template, its stylesheet
// embedded in the binary; nothing is fetched from elsewhere and no
// script runs in the browser. Each page is guarded by the policy rule of
// the API route whose data it shows (consoleRules) and authenticated as
// the API is: the token the operator enters once is kept in a session
// cookie (HttpOnly, SameSite=Strict, path /ui) and sent on as
// X-Auth-Token; with noauth2 and no token, the console acts as "admin",
// which noauth2 lets anyone claim anyway. Pages are aggregates or pages
// of a bounded size, so they stay small at 100,000 providers
// (docs/console.md). The pages themselves are in console_pages.go.

// ConsolePath is where the console is served.
const ConsolePath = "/ui"

// consoleCookie holds the token entered on the login page.
const consoleCookie = "berth_console_token"

//go:embed console
var consoleFiles embed.FS

// console serves /ui.
type console struct {
	s     *Server
	e     *echo.Echo
	pages map[string]*template.Template
}

// consolePage is a page's route, the policy rule of the API data it
// shows, and its handler.
type consolePage struct {
	path, rule string
	handler    func(c echo.Context, p authz.Credentials) error
}

// newConsole builds the console of s: its templates (a page is the
// layout and the page's own file) and its routes.
func newConsole(s *Server) (*console, error) {
	k := &console{s: s, e: echo.New(), pages: map[string]*template.Template{}}
	k.e.HideBanner, k.e.HidePort = true, true
	k.e.HTTPErrorHandler = k.errorPage
	files, err := fs.Glob(consoleFiles, "console/*.html")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "console/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(consoleFuncs).ParseFS(consoleFiles, "console/layout.html", f)
		if err != nil {
			return nil, fmt.Errorf("httpapi: console template %s: %w", name, err)
		}
		k.pages[name] = t
	}
	k.e.Use(assignRequestID, s.observe, s.deadline)
	k.e.GET(ConsolePath+"/style.css", k.style)
	k.e.GET(ConsolePath+"/login", k.loginForm)
	k.e.POST(ConsolePath+"/login", k.login)
	k.e.POST(ConsolePath+"/logout", k.logout)
	for _, p := range k.routes() {
		k.e.GET(p.path, k.guard(p))
	}
	// The scriptlet test sends a request body; it writes nothing.
	k.e.POST(ConsolePath+"/scriptlets/test", k.guard(consolePage{"", "berth:scriptlets:test", k.scriptletTest}))
	return k, nil
}

// serves reports whether path is the console's.
func (k *console) serves(path string) bool {
	return path == ConsolePath || strings.HasPrefix(path, ConsolePath+"/")
}

// guard authenticates the request as the API does, with the cookie's
// token, and checks page's rule.
func (k *console) guard(page consolePage) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if ck, err := r.Cookie(consoleCookie); err == nil && ck.Value != "" {
			r.Header.Set(headerAuthToken, ck.Value)
		} else if k.s.cfg.Auth == AuthNoAuth2 && r.Header.Get(headerAuthToken) == "" {
			r.Header.Set(headerAuthToken, "admin")
		}
		p, err := k.s.credentials(c)
		if err != nil {
			return err
		}
		if !k.s.authz.Allowed(page.rule, p, authz.Target{"project_id": p.ProjectID, "user_id": p.UserID}) {
			return newError(http.StatusForbidden, "", "Policy does not allow %s to be performed.", page.rule)
		}
		return page.handler(c, p)
	}
}

// render writes page name with data, in the layout, titled title.
func (k *console) render(c echo.Context, status int, name, title string, data any) error {
	t := k.pages[name]
	if t == nil {
		return fmt.Errorf("httpapi: no console page %q", name)
	}
	var buf bytes.Buffer
	err := t.Execute(&buf, map[string]any{"Title": title, "Page": name, "Data": data, "Auth": k.s.cfg.Auth})
	if err != nil {
		return fmt.Errorf("httpapi: console page %s: %w", name, err)
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	return c.HTMLBlob(status, buf.Bytes())
}

// errorPage renders an error as the API words it: its status, code and
// message; a 401 offers the login form.
func (k *console) errorPage(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := toError(c, err)
	if e.Status >= 500 {
		k.s.log.ErrorContext(c.Request().Context(), "console page failed", "path", c.Request().URL.Path, "error", err)
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
func (k *console) style(c echo.Context) error {
	b, err := consoleFiles.ReadFile("console/style.css")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "max-age=3600")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", b)
}

func (k *console) loginForm(c echo.Context) error {
	return k.render(c, http.StatusOK, "login", "Log in", map[string]any{"Failed": ""})
}

// login checks the token as the API would (a request with it as
// X-Auth-Token) and keeps it in the session cookie.
func (k *console) login(c echo.Context) error {
	token := strings.TrimSpace(c.FormValue("token"))
	c.Request().Header.Set(headerAuthToken, token)
	if _, err := k.s.credentials(c); err != nil || token == "" {
		msg := "No token was given."
		if err != nil {
			msg = toError(c, err).Msg
		}
		return k.render(c, http.StatusUnauthorized, "login", "Log in", map[string]any{"Failed": msg})
	}
	c.SetCookie(&http.Cookie{Name: consoleCookie, Value: token, Path: ConsolePath, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil})
	return c.Redirect(http.StatusSeeOther, ConsolePath)
}

func (k *console) logout(c echo.Context) error {
	c.SetCookie(&http.Cookie{Name: consoleCookie, Value: "", Path: ConsolePath, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	return c.Redirect(http.StatusSeeOther, ConsolePath+"/login")
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
	"heat": heatColour,
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

// pageParams reads the paging parameters offset and limit (at most max,
// default def) as the API words their refusal.
func pageParams(c echo.Context, def, most int) (offset, limit int, err error) {
	limit = def
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > most {
			return 0, 0, badRequest("Invalid limit %q: want an integer from 1 to %d.", v, most)
		}
	}
	if v := c.QueryParam("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, badRequest("Invalid offset %q: want an integer from 0.", v)
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
