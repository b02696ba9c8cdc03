package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/claims/cloud"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
)

// Config configures the API server: the HTTP settings, and the
// components it serves, built by the caller (internal/daemon/compose).
type Config struct {
	// Store is the ledger the handlers read and write.
	Store *ledger.Store
	// Claimer serves POST /claims and the claim moves.
	Claimer *claims.Claimer
	// Catalog holds the stored scheduling policies, scriptlets and
	// config, compiled, and writes them (checked, then reloaded). The
	// caller keeps it fresh (Catalog.Run).
	Catalog *catalog.Catalog
	// Cloud is the scheduler's view of the cloud, for the balance
	// suggestions.
	Cloud *cloud.View
	// Authz decides who may do what.
	Authz *authz.Enforcer

	// Auth is AuthNoAuth2 (default), AuthTokens or AuthKeystoneHeaders.
	Auth string
	// Tokens maps static tokens to principals when Auth is AuthTokens.
	Tokens map[string]authz.Credentials
	// Keystone validates tokens when Auth is AuthKeystone (required then).
	Keystone KeystoneAuthenticator
	// CORSAllowedOrigins are the origins (scheme://host[:port], or "*")
	// whose browsers may call the API across origins; empty disables CORS,
	// and OPTIONS is answered 405 as by Placement without CORS.
	CORSAllowedOrigins []string
	// RandomizeCandidates shuffles allocation candidates instead of
	// returning them in a deterministic order.
	RandomizeCandidates bool
	// MaxCandidates caps how many allocation candidates one request may
	// generate before limit is applied; 0 means engine.DefaultMaxCandidates.
	MaxCandidates int
	// MaxBodyBytes caps request bodies; 0 means 32 MiB.
	MaxBodyBytes int64
	// MetricsHandler, if set, serves GET /metrics without authentication
	// (see health.go); nil leaves /metrics unrouted.
	MetricsHandler http.Handler
	// RequestTimeout bounds the work of one request: its context ends
	// then, so a database call that gets no answer (a silent network)
	// fails with 503 berth.database_unavailable instead of holding the
	// client. 0 means DefaultRequestTimeout; negative disables it.
	RequestTimeout time.Duration
	// MaxInflightExpensive bounds the expensive requests (candidates,
	// claims, lists; see admission.go) running at once; 0 means
	// DefaultMaxInflightExpensive(), negative no bound.
	// AdmissionQueueTimeout is how long one waits for its turn before a
	// 503 berth.overloaded; 0 means DefaultAdmissionQueueTimeout.
	MaxInflightExpensive  int
	AdmissionQueueTimeout time.Duration
	// AuditThresholds are the ages GET /audit and POST /audit/fix use
	// when a request names none; a zero field means its default
	// (ledger.DefaultAuditThresholds).
	AuditThresholds ledger.AuditThresholds
}

// DefaultRequestTimeout is the request deadline used when
// Config.RequestTimeout is 0: far above any request's normal duration.
const DefaultRequestTimeout = time.Minute

func (c *Config) setDefaults() error {
	switch c.Auth {
	case "":
		c.Auth = AuthNoAuth2
	case AuthNoAuth2, AuthTokens, AuthKeystoneHeaders:
	case AuthKeystone:
		if c.Keystone == nil {
			return errors.New("httpapi: auth keystone needs Config.Keystone")
		}
	default:
		return fmt.Errorf("httpapi: unknown auth strategy %q", c.Auth)
	}
	for _, o := range c.CORSAllowedOrigins {
		if err := ValidateOrigin(o); err != nil {
			return fmt.Errorf("httpapi: %w", err)
		}
	}
	if c.MaxCandidates <= 0 {
		c.MaxCandidates = engine.DefaultMaxCandidates
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 32 << 20
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	def := ledger.DefaultAuditThresholds()
	if c.AuditThresholds.MigrationAge == 0 {
		c.AuditThresholds.MigrationAge = def.MigrationAge
	}
	if c.AuditThresholds.StateAge == 0 {
		c.AuditThresholds.StateAge = def.StateAge
	}
	if c.AuditThresholds.MigrationAge < 0 || c.AuditThresholds.StateAge < 0 {
		return errors.New("httpapi: audit thresholds must not be negative")
	}
	return nil
}

// deadline ends the request's context after cfg.RequestTimeout (see
// Config.RequestTimeout).
func (s *Server) deadline(next echo.HandlerFunc) echo.HandlerFunc {
	if s.cfg.RequestTimeout < 0 {
		return next
	}
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.RequestTimeout)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// Server is the Placement API server. It implements http.Handler.
type Server struct {
	cfg     Config
	authz   *authz.Enforcer
	store   *ledger.Store
	claims  *claims.Claimer
	catalog *catalog.Catalog
	cloud   *cloud.View
	log     *slog.Logger
	e       *echo.Echo
	// chain serves a request through the middleware and the routes
	// (chainRouted).
	chain  echo.HandlerFunc
	meters *httpMeters
	// draining is set by Drain: /readyz fails from then on.
	draining atomic.Bool
	// admission bounds the expensive requests in flight (admission.go).
	admission *admission
	// bodies bounds the large request bodies held at once (bodies.go).
	bodies *bodyGate
	// outage rate-limits the log lines of 503s for an unavailable
	// database (outage.go).
	outage outageLog
	// allow is the Allow header of a 405 for each route path, the
	// methods in the route table's order (Placement's declaration order).
	allow map[string]string
}

// New builds the API server over the components of cfg. It builds none
// of them: internal/daemon/compose does.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if cfg.Claimer == nil || cfg.Catalog == nil || cfg.Cloud == nil || cfg.Authz == nil {
		return nil, errors.New("httpapi: Config needs the Claimer, Catalog, Cloud and Authz components (see internal/daemon/compose)")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	// Log lines written with a request's context carry its request id.
	logger = slog.New(instrument.LogHandler(logger.Handler()))
	s := &Server{cfg: cfg, authz: cfg.Authz, store: cfg.Store, claims: cfg.Claimer, catalog: cfg.Catalog, cloud: cfg.Cloud,
		log: logger, e: echo.New(), meters: newMeters()}
	s.e.HideBanner = true
	s.e.HidePort = true
	s.e.HTTPErrorHandler = s.errorHandler
	// Before routing.
	pre := []echo.MiddlewareFunc{assignRequestID, s.observe, s.microversion, s.deadline}
	if len(cfg.CORSAllowedOrigins) > 0 {
		// After microversion, as in Placement's pipeline, where a bad
		// OpenStack-API-Version header is refused before CORS sees it.
		pre = append(pre, newCORS(cfg.CORSAllowedOrigins).middleware)
	}
	s.admission = newAdmission(cfg)
	s.bodies = newBodyGate(cfg.AdmissionQueueTimeout)
	s.addRoutes()
	// After routing, before the handler the router chose (a route's, or
	// echo's 404 or 405).
	routed := []echo.MiddlewareFunc{s.authenticate, s.rejectMethod, checkContentHeaders}
	s.chain = chainRouted(s.e, pre, routed)
	return s, nil
}

// chainRouted is what echo's ServeHTTP runs for a request with e.Pre(pre)
// and e.Use(routed): the pre middleware, routing, the routed middleware
// and the handler the router chose. Echo composes these middleware (each
// a closure) anew for every request; here they are composed once, and
// the routed ones call the chosen handler when they reach it.
func chainRouted(e *echo.Echo, pre, routed []echo.MiddlewareFunc) echo.HandlerFunc {
	chosen := chainMiddleware(func(c echo.Context) error { return c.Handler()(c) }, routed)
	return chainMiddleware(func(c echo.Context) error {
		r := c.Request()
		e.Router().Find(r.Method, echo.GetPath(r), c)
		return chosen(c)
	}, pre)
}

// chainMiddleware wraps h in mw, the first outermost, as echo applies a
// list of middleware.
func chainMiddleware(h echo.HandlerFunc, mw []echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// ServeHTTP serves one request. The probe and metrics paths are answered
// before the API's middleware. The rest is echo's ServeHTTP, with the
// middleware composed once (chainRouted).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveOps(w, r) {
		return
	}
	c := s.e.AcquireContext()
	c.Reset(r, w)
	if err := s.chain(c); err != nil {
		s.e.HTTPErrorHandler(err, c)
	}
	s.bodies.release(c)
	s.e.ReleaseContext(c)
}

// rejectMethod prepares the 405 of a method a known path does not have:
// its Allow header lists the path's methods in Placement's order, and
// OPTIONS is refused too, as Placement does, instead of echo's automatic
// 204.
func (s *Server) rejectMethod(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Get(echo.ContextKeyHeaderAllow) == nil {
			return next(c)
		}
		if allow, ok := s.allow[c.Path()]; ok {
			c.Set(echo.ContextKeyHeaderAllow, allow)
		}
		if c.Request().Method == http.MethodOptions {
			return echo.ErrMethodNotAllowed
		}
		return next(c)
	}
}

// observe logs every request once it is answered and records its span and
// metrics. Errors are rendered here so the status is known.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		ctx, end := startSpan(c, s.meters)
		c.SetRequest(c.Request().WithContext(ctx))
		if err := next(c); err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		end(status, time.Since(start))
		// request_id (and trace_id) come from ctx: see instrument.LogHandler.
		s.log.LogAttrs(ctx, slog.LevelInfo, "request",
			slog.String("method", c.Request().Method),
			slog.String("path", c.Request().URL.Path),
			slog.String("route", c.Path()),
			slog.String("version", version(c).String()),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(start)))
		return nil
	}
}

// writeJSON writes v as the JSON body of a response.
func writeJSON(c echo.Context, status int, v any) error {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledAnswer {
			jsonBuffers.Put(buf)
		}
	}()
	b, err := encodeJSON(buf, v)
	if err != nil {
		return err
	}
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

// jsonBuffers pools writeJSON's buffers.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeJSON encodes v into buf as writeJSON answers it: compact, HTML
// characters not escaped, no trailing newline.
func encodeJSON(buf *bytes.Buffer, v any) ([]byte, error) {
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// setCacheHeaders marks a GET response as not cacheable and gives its last
// modification time, from microversion 1.15 on.
func setCacheHeaders(c echo.Context, lastModified time.Time) {
	if !version(c).AtLeast(15) {
		return
	}
	if lastModified.IsZero() {
		lastModified = time.Now()
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Last-Modified", lastModified.UTC().Format(http.TimeFormat))
}

// decodeBody reads a JSON body, validates it against schema and decodes it
// into dst. Errors read as Placement's: "Malformed JSON: ..." and
// "JSON does not validate: ...".
func (s *Server) decodeBody(c echo.Context, schema *jsonschema.Schema, dst any) error {
	return s.decodeBodyDoc(c, schema, dst, nil)
}

// decodeBodyDoc is decodeBody with decodeJSONDoc's fast path.
func (s *Server) decodeBodyDoc(c echo.Context, schema *jsonschema.Schema, dst any, fromDoc func(doc any, body []byte) bool) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	return decodeJSONDoc(body, schema, dst, fromDoc)
}

func decodeJSON(body []byte, schema *jsonschema.Schema, dst any) error {
	return decodeJSONDoc(body, schema, dst, nil)
}

// decodeJSONDoc is decodeJSON, but first tries fromDoc (if not nil),
// which fills dst from the document the schema validated, without a
// second parse (jsondoc.go): it must fill dst as json.Unmarshal(body,
// dst) would, or report false having changed nothing, and is called only
// with a document buildDoc made.
func decodeJSONDoc(body []byte, schema *jsonschema.Schema, dst any, fromDoc func(doc any, body []byte) bool) error {
	doc, built, err := parseJSONDoc(body)
	if err != nil {
		return badRequest("Malformed JSON: %v", err)
	}
	if schema != nil {
		if err := schema.Validate(doc); err != nil {
			return badRequest("JSON does not validate: %v", err)
		}
	}
	if dst == nil {
		return nil
	}
	if fromDoc != nil && built && fromDoc(doc, body) {
		return nil
	}
	if err := json.Unmarshal(body, dst); err != nil {
		if nonFinite(doc) {
			// Placement would store such a value where the schema lets
			// a float through (an allocation ratio); Berth does not.
			return badRequest("JSON does not validate: NaN, Infinity and -Infinity are not accepted.")
		}
		return decodeError(err)
	}
	return nil
}

// nonFinite reports whether v holds NaN, Infinity or -Infinity.
func nonFinite(v any) bool {
	switch t := v.(type) {
	case json.Number:
		s := t.String()
		return s == "NaN" || s == "Infinity" || s == "-Infinity"
	case []any:
		for _, e := range t {
			if nonFinite(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range t {
			if nonFinite(e) {
				return true
			}
		}
	}
	return false
}

// parseJSON decodes one JSON document, keeping numbers as json.Number. A
// body Python's json.loads refuses is refused with Python's words, as
// Placement does (pyJSONError).
func parseJSON(body []byte) (any, error) {
	doc, _, err := parseJSONDoc(body)
	return doc, err
}

// parseJSONDoc is parseJSON, and reports whether buildDoc built the
// document (so that it holds no NaN or Infinity).
func parseJSONDoc(body []byte) (any, bool, error) {
	if err := pyJSONError(body); err != nil {
		return nil, false, err
	}
	if doc, ok := buildDoc(body); ok {
		return doc, true, nil
	}
	doc, err := parseJSONGeneral(body)
	return doc, false, err
}

// parseJSONGeneral decodes a body pyJSONError accepted with encoding/json.
func parseJSONGeneral(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		// What Python reads and encoding/json does not: NaN, Infinity
		// and -Infinity, which the schema then judges as Python's floats.
		return pyJSONDecode(body)
	}
	return doc, nil
}

// root serves the version document.
func (s *Server) root(c echo.Context) error {
	setCacheHeaders(c, time.Now())
	return writeJSON(c, http.StatusOK, map[string]any{
		"versions": []any{map[string]any{
			"id":          "v1.0",
			"max_version": MaxVersion.String(),
			"min_version": MinVersion.String(),
			"status":      "CURRENT",
			"links":       []any{map[string]any{"rel": "self", "href": ""}},
		}},
	})
}
