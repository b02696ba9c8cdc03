package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/httpapi/admission"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/internal/uuid"
)

// The request chain: every request, from ServeHTTP to the handler of
// its route, in the order it runs.
//
//  1. The probes and /metrics (health.go) and the console's paths
//     (package console) are answered apart.
//  2. The request id, req-<uuid>, in X-Openstack-Request-Id, logs, spans
//     and error bodies.
//  3. Telemetry starts: the server span, a child of the client's trace
//     context, and the clock of the request's metrics and log line.
//  4. The microversion is negotiated (OpenStack-API-Version) and answered
//     with Vary, errors included.
//  5. The request's deadline (Config.RequestTimeout).
//  6. CORS, when configured: OPTIONS is a preflight, answered here;
//     answers to allowed origins get its headers.
//  7. Routing (echo's router over the route table, routes.go).
//  8. Authentication (Config.Auth; auth.go), but for the public paths.
//  9. The method: a 405's Allow header, and OPTIONS refused.
//  10. The content headers: a body needs a Content-Type, and
//     Content-Length must be an integer.
//  11. The route's steps (routeStep.serve): its microversions, its
//     policy rule, Accept for a JSON route, an admission slot for a
//     bounded one, and its handler.
//  12. An error is answered in Placement's format (errors.go), then
//     telemetry finishes: the span ends, the metrics are recorded and the
//     request's log line is written.

// ServeHTTP serves one request (see the steps above).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every handler reads the query as webob does: a bad percent-escape
	// is a value as given (which the route's checks refuse or match as
	// it is), never a parameter dropped.
	r.URL.RawQuery = wire.WebobQuery(r.URL.RawQuery)
	// 1. The probes, /metrics and the console.
	if s.serveOps(w, r) {
		return
	}
	if s.console.Serves(r.URL.Path) {
		s.console.ServeHTTP(w, r)
		return
	}
	c := s.requests.Get().(*request)
	c.Reset(r, w)
	// 2. The request id.
	c.id = uuid.NewPrefixed("req-")
	c.Response().Header()[wire.HeaderRequestID] = []string{c.id}
	// 3. Telemetry starts.
	start := time.Now()
	ctx, span := s.startSpan(c, c.id)
	// 4 to 11.
	if err := s.serveAPI(c, ctx); err != nil {
		// 12. The error's answer, then telemetry finishes.
		s.errorHandler(err, c)
	}
	s.finishTelemetry(c, ctx, span, c.Response().Status, start)
	s.budget.Release(c)
	*c = request{Context: c.Context, target: c.target}
	s.requests.Put(c)
}

// request is the echo.Context of an API request: echo's own, and what the
// chain learns of the request, kept in fields instead of echo's store (a
// map made for every request).
type request struct {
	echo.Context
	id      string
	version *wire.Version
	creds   authz.Credentials
	// target is the default policy target of the request's caller
	// (policyTarget), kept with the pooled request for the next.
	target authz.Target
}

// Get answers wire.ContextKeyVersion from the request's field, the rest
// from echo's store.
func (c *request) Get(key string) any {
	if key == wire.ContextKeyVersion {
		if c.version == nil {
			return nil
		}
		return c.version
	}
	return c.Context.Get(key)
}

// Set keeps wire.ContextKeyVersion in the request's field, the rest in
// echo's store.
func (c *request) Set(key string, val any) {
	if key == wire.ContextKeyVersion {
		c.version, _ = val.(*wire.Version)
		return
	}
	c.Context.Set(key, val)
}

// requestID is the request's id, req-<uuid> (empty before it has one).
func requestID(c echo.Context) string {
	if r, ok := c.(*request); ok {
		return r.id
	}
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// ctxRequestID is the key of the request id in a console page's
// echo.Context.
const ctxRequestID = "berth.request_id"

// credentialsOf is the caller's identity as authentication resolved it.
func credentialsOf(c echo.Context) authz.Credentials {
	if r, ok := c.(*request); ok {
		return r.creds
	}
	return authz.Credentials{}
}

// serveAPI runs steps 4 to 11 in the telemetry's context ctx.
func (s *Server) serveAPI(c *request, ctx context.Context) error {
	// 4. The microversion.
	if err := s.negotiateVersion(c, ctx); err != nil {
		return err
	}

	// 5. The deadline.
	if s.cfg.RequestTimeout >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
	}
	c.SetRequest(c.Request().WithContext(ctx))
	req := c.Request()

	// 6. CORS. After the microversion, as in Placement's pipeline, where a
	// bad OpenStack-API-Version header is refused before CORS sees it.
	if s.cors != nil {
		if req.Method == http.MethodOptions {
			s.cors.preflight(req.Header, c.Response().Header())
			return c.NoContent(http.StatusOK)
		}
		s.cors.decorate(req.Header, c.Response().Header())
	}

	// 7. Routing.
	s.e.Router().Find(req.Method, echo.GetPath(req), c.Context)

	// 8. Authentication.
	if !public(req.URL.Path) {
		p, err := s.credentials(c)
		if err != nil {
			return err
		}
		c.creds = p
	}

	// 9. The method: the 405 of a method a known path does not have lists
	// the path's methods in Placement's order, and OPTIONS is refused
	// too, as Placement does, instead of echo's automatic 204.
	if c.Get(echo.ContextKeyHeaderAllow) != nil {
		if allow, ok := s.allow[c.Path()]; ok {
			c.Set(echo.ContextKeyHeaderAllow, allow)
		}
		if req.Method == http.MethodOptions {
			return echo.ErrMethodNotAllowed
		}
	}

	// 10. The content headers.
	if err := checkContentHeaders(c); err != nil {
		return err
	}

	// 11. The route (routeStep.serve), or echo's 404 or 405.
	return c.Handler()(c)
}

// negotiateVersion is the chain's step 4: the request's microversion,
// set on c and answered in its headers. Placement's microversion
// middleware refuses a bad header before the application runs: no
// version header, no Vary. Repeated headers fold into one value, joined
// by commas, as WSGI does.
func (s *Server) negotiateVersion(c *request, ctx context.Context) error {
	v, raw, err := wire.ParseVersionHeader(strings.Join(c.Request().Header[wire.HeaderAPIVersionKey], ","))
	if err == nil && (v.Less(wire.MinVersion) || wire.MaxVersion.Less(v)) {
		err = wire.NewError(http.StatusNotAcceptable, "", "Invalid microversion: Unacceptable version header: %s", raw)
	}
	if err != nil {
		c.SetRequest(c.Request().WithContext(ctx))
		// Placement's auth middleware runs first: a request it refuses
		// gets its 401 whatever the version header says.
		if !public(c.Request().URL.Path) {
			if _, aerr := s.credentials(c); aerr != nil {
				return aerr
			}
		}
		return err
	}
	setVersionHeaders(c.Response().Header(), v)
	wire.SetVersion(c, v)
	return nil
}

// versionVary and versionHeaders are the microversion's response
// headers, one value each answer's header shares (see
// wire.WriteJSONBody).
var (
	versionVary    = []string{"openstack-api-version"}
	versionHeaders = func() [][]string {
		out := make([][]string, wire.MaxVersion.Minor+1)
		for i := range out {
			out[i] = []string{wire.VersionHeader(wire.Version{Major: 1, Minor: i})}
		}
		return out
	}()
)

// setVersionHeaders sets the negotiated microversion v's headers on h:
// Vary: openstack-api-version and OpenStack-API-Version.
func setVersionHeaders(h http.Header, v wire.Version) {
	if vary, ok := h[echo.HeaderVary]; ok {
		h[echo.HeaderVary] = append(vary, versionVary[0])
	} else {
		h[echo.HeaderVary] = versionVary
	}
	if v.Major == 1 && v.Minor >= 0 && v.Minor < len(versionHeaders) {
		h[wire.HeaderAPIVersionKey] = versionHeaders[v.Minor]
	} else {
		h[wire.HeaderAPIVersionKey] = []string{wire.VersionHeader(v)}
	}
}

// checkContentHeaders checks the content headers: a body needs a content
// type, and Content-Length must be an integer.
func checkContentHeaders(c echo.Context) error {
	req := c.Request()
	if req.Header.Get(admission.HeaderInvalidContentLength) != "" {
		c.Response().Header().Set(echo.HeaderConnection, "close")
		return wire.BadRequest("content-length header must be an integer")
	}
	if cl := req.Header.Get(echo.HeaderContentLength); cl != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64)
		if err != nil {
			return wire.BadRequest("content-length header must be an integer")
		}
		if n > 0 && req.Header.Get(echo.HeaderContentType) == "" {
			return contentTypeRequired()
		}
	} else if req.ContentLength > 0 && req.Header.Get(echo.HeaderContentType) == "" {
		return contentTypeRequired()
	}
	return nil
}

// contentTypeRequired is Placement's answer to a body without a
// Content-Type, which its content check raises outside the handler's
// wrapper: no Vary.
func contentTypeRequired() *wire.Error {
	e := wire.BadRequest("content-type header required when content-length > 0")
	e.NoVary = true
	return e
}

// routeStep is a row of the route table as the chain runs it, with its
// policy check built; its serve is the handler the router chooses.
type routeStep struct {
	route
	policy policyCheck
	s      *Server
}

// serve runs the steps of a route of the table (11), after routing,
// authentication and the checks of the method and content headers.
func (r *routeStep) serve(c echo.Context) error {
	s := r.s
	// The route's microversions: outside them, 404.
	if err := versionGate(c, r.versions); err != nil {
		return err
	}
	// The route's policy rule.
	p := credentialsOf(c)
	if !s.authz.Allowed(r.rule, p, r.policy.target(c, p)) {
		// Placement's PolicyNotAuthorized escapes the handler: its 403
		// has no Vary.
		e := wire.NewError(http.StatusForbidden, "", "Policy does not allow %s to be performed.", r.rule)
		e.NoVary = true
		return e
	}
	if r.flags&acceptJSON != 0 {
		if err := requireJSONAccept(c); err != nil {
			return err
		}
	}
	// Admission: after authorisation, so that a caller who may not run
	// the request never takes or waits for a slot.
	if r.flags&bounded != 0 {
		if err := s.slots.Acquire(c.Request().Context()); err != nil {
			return err
		}
		defer s.slots.Release()
	}
	return r.handler(c)
}

// versionGate answers 404 to requests outside the route's microversions,
// as Placement does for routes that did not exist yet.
func versionGate(c echo.Context, v minors) error {
	ver := wire.VersionOf(c)
	if !ver.AtLeast(v.first) || (v.last > 0 && ver.AtLeast(v.last+1)) {
		return wire.NotFound("")
	}
	return nil
}

// requireJSONAccept refuses requests whose Accept header rules out JSON,
// the only media type this API produces. A header webob cannot parse
// rules out nothing.
func requireJSONAccept(c echo.Context) error {
	h := wire.AcceptHeader(c.Request())
	// The usual header, and no header (which AcceptHeader answers as
	// JSON), accept JSON as parsing them would say (TestJSONAcceptShortcut).
	if h == echo.MIMEApplicationJSON {
		return nil
	}
	if len(wire.AcceptableOffers(h, echo.MIMEApplicationJSON)) == 0 {
		return wire.NewError(http.StatusNotAcceptable, "", "Only application/json is provided")
	}
	return nil
}

// startSpan starts the server span of a request from the global tracer
// provider, as a child of the W3C traceparent the client sent, if any,
// and puts the request id id in the returned context for log lines.
//
// The span's attributes are built only when the span records (a no-op
// tracer's spans, and spans a sampler dropped, do not); when it does,
// they are set right after it starts, in the same order as if they had
// been given to Start. (The samplers berthd configures, from
// OTEL_TRACES_SAMPLER, decide by trace id and parent, not by attribute.)
//
// While no tracer provider is installed no span is started (it would
// record nothing; the span returned is nil): the context keeps the
// client's trace context for the log line.
func (s *Server) startSpan(c echo.Context, id string) (context.Context, trace.Span) {
	req := c.Request()
	ctx := otel.GetTextMapPropagator().Extract(req.Context(), headerCarrier(req.Header))
	ctx = instrument.WithRequestID(ctx, id)
	if !instrument.Tracing() {
		return ctx, nil
	}
	ctx, span := s.meters.tracer().Start(ctx, spanStartName(req.Method), serverSpan...)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("url.path", req.URL.Path),
			instrument.AttrRequestID.String(id),
		)
	}
	return ctx, span
}

// endSpan ends the request's span (if startSpan started one) and records
// the request's metrics: its status, and its duration d.
func (s *Server) endSpan(c echo.Context, ctx context.Context, span trace.Span, status int, d time.Duration) {
	method, route := c.Request().Method, routeOf(c)
	if span != nil {
		if span.IsRecording() {
			span.SetName(method + " " + route)
			span.SetAttributes(
				attribute.String("http.route", route),
				attribute.Int("http.response.status_code", status),
				attribute.String("placement.microversion", wire.VersionOf(c).String()),
			)
		}
		if status >= 500 {
			span.SetStatus(codes.Error, "server error")
		}
		span.End()
	}
	s.meters.record(ctx, method, route, status, d)
}

// routeOf is the request's route for its span and metrics: "unmatched"
// for an unknown path, which keeps such paths out of the metric's labels.
func routeOf(c echo.Context) string {
	if route := c.Path(); route != "" {
		return route
	}
	return "unmatched"
}

// finishTelemetry ends the request's span, records its metrics and
// writes its log line (step 12), for a request begun at start that was
// answered status: one reading of the clock ends it for all three.
func (s *Server) finishTelemetry(c echo.Context, ctx context.Context, span trace.Span, status int, start time.Time) {
	end := time.Now()
	s.endSpan(c, ctx, span, status, end.Sub(start))
	s.logRequest(ctx, c, status, start, end)
}

// logRequest writes the request's log line, at info level, at end:
// method, path, route, microversion, status and the time from start to
// end; request_id (and trace_id) come from ctx (instrument.LogHandler).
// It is built only when the logger takes info lines.
func (s *Server) logRequest(ctx context.Context, c echo.Context, status int, start, end time.Time) {
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	req := c.Request()
	r := slog.NewRecord(end, slog.LevelInfo, "request", logRequestPC())
	_ = instrument.Log(ctx, s.log.Handler(), r,
		slog.String("method", req.Method),
		slog.String("path", req.URL.Path),
		slog.String("route", c.Path()),
		slog.String("version", wire.VersionOf(c).String()),
		slog.Int("status", status),
		slog.Duration("duration", end.Sub(start)))
}

// logRequestPCs holds the program counter of logRequest's line, the
// source of every request's log line, once found.
var logRequestPCs atomic.Uintptr

// logRequestPC is the source of the request's log line, found once (a
// logger's LogAttrs walks the stack for it on every line).
func logRequestPC() uintptr {
	if pc := logRequestPCs.Load(); pc != 0 {
		return pc
	}
	var pcs [1]uintptr
	runtime.Callers(2, pcs[:])
	logRequestPCs.Store(pcs[0])
	return pcs[0]
}

// consoleChain is the chain's steps the console's pages take (package
// console runs it before its routes): the request id (2), telemetry (3
// and 12) and the deadline (5).
func (s *Server) consoleChain(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := uuid.NewPrefixed("req-")
		c.Set(ctxRequestID, id)
		c.Response().Header()[wire.HeaderRequestID] = []string{id}
		start := time.Now()
		ctx, span := s.startSpan(c, id)
		c.SetRequest(c.Request().WithContext(ctx))
		if err := s.withDeadline(c, next); err != nil {
			c.Error(err)
		}
		s.finishTelemetry(c, ctx, span, c.Response().Status, start)
		return nil
	}
}

// withDeadline runs next with the request's context ended after
// Config.RequestTimeout.
func (s *Server) withDeadline(c echo.Context, next echo.HandlerFunc) error {
	if s.cfg.RequestTimeout < 0 {
		return next(c)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.RequestTimeout)
	defer cancel()
	c.SetRequest(c.Request().WithContext(ctx))
	return next(c)
}

// The request's telemetry instruments: its metrics, the tracer of its
// span, and the W3C trace context it reads (step 3 starts the span;
// finishTelemetry ends it, records the metrics and writes the log line).

// record records a request's metrics: one request, and its duration d.
func (m *httpMeters) record(ctx context.Context, method, route string, status int, d time.Duration) {
	o := m.options(method, route, status)
	m.requests.Add(ctx, 1, o.add...)
	m.duration.Record(ctx, d.Seconds(), o.record...)
}

// serverSpan are the options of every request's span.
var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// spanStartName is the name a request's span starts with, "HTTP
// <method>", without building the string for the usual methods.
func spanStartName(method string) string {
	switch method {
	case http.MethodGet:
		return "HTTP GET"
	case http.MethodPost:
		return "HTTP POST"
	case http.MethodPut:
		return "HTTP PUT"
	case http.MethodDelete:
		return "HTTP DELETE"
	case http.MethodPatch:
		return "HTTP PATCH"
	}
	return "HTTP " + method
}

// headerCarrier is propagation.HeaderCarrier whose Get finds the W3C
// headers without canonicalising their names on every request (they
// are not among net/textproto's common headers, so canonicalising
// allocates).
type headerCarrier http.Header

var _ propagation.TextMapCarrier = headerCarrier{}

func (hc headerCarrier) Get(key string) string {
	var v []string
	switch key {
	case "traceparent":
		v = hc["Traceparent"]
	case "tracestate":
		v = hc["Tracestate"]
	case "baggage":
		v = hc["Baggage"]
	default:
		return propagation.HeaderCarrier(hc).Get(key)
	}
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func (hc headerCarrier) Set(key, value string) { propagation.HeaderCarrier(hc).Set(key, value) }

func (hc headerCarrier) Keys() []string { return propagation.HeaderCarrier(hc).Keys() }

// httpMeters are the request instruments, the tracer of the current
// global provider, and the metric attribute sets already built.
type httpMeters struct {
	requests metric.Int64Counter
	duration metric.Float64Histogram
	// dbUnavailable counts the 503 berth.database_unavailable answers.
	dbUnavailable metric.Int64Counter
	// tr is the tracer of the global tracer provider it was taken from:
	// otel.Tracer looks it up under a lock on every call.
	tr atomic.Pointer[providerTracer]
	// sets holds the *metricOptions of each metricKey, at most
	// maxMetricSets of them (the method is the client's: past the bound,
	// the attributes are built per request, as the SDK bounds its own
	// series). The map is never changed once stored: a new key stores a
	// copy with it, under setsMu, so that a lookup takes no lock.
	sets   atomic.Pointer[map[metricKey]*metricOptions]
	setsMu sync.Mutex
}

type providerTracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

// tracer returns the HTTP scope's tracer of the global tracer provider
// installed now.
func (m *httpMeters) tracer() trace.Tracer {
	tp := otel.GetTracerProvider()
	if pt := m.tr.Load(); pt != nil && pt.tp == tp {
		return pt.t
	}
	pt := &providerTracer{tp: tp, t: tp.Tracer(instrument.ScopeHTTP)}
	m.tr.Store(pt)
	return pt.t
}

type metricKey struct {
	method, route string
	status        int
}

const maxMetricSets = 4096

// metricOptions are the options of a request's measurements: the
// attribute set of its method, route and status, as the option lists
// the counter's Add and the histogram's Record take.
type metricOptions struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// options returns the options of a request's metrics: its method, route
// and status.
func (m *httpMeters) options(method, route string, status int) *metricOptions {
	k := metricKey{method, route, status}
	if sets := m.sets.Load(); sets != nil {
		if o, ok := (*sets)[k]; ok {
			return o
		}
	}
	set := metric.WithAttributeSet(attribute.NewSet(
		attribute.String("http.request.method", method),
		attribute.String("http.route", route),
		attribute.Int("http.response.status_code", status),
	))
	o := &metricOptions{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
	m.setsMu.Lock()
	defer m.setsMu.Unlock()
	old := m.sets.Load()
	if old == nil {
		m.sets.Store(&map[metricKey]*metricOptions{k: o})
		return o
	}
	if prev, ok := (*old)[k]; ok {
		return prev
	}
	if len(*old) >= maxMetricSets {
		return o
	}
	sets := make(map[metricKey]*metricOptions, len(*old)+1)
	for key, v := range *old {
		sets[key] = v
	}
	sets[k] = o
	m.sets.Store(&sets)
	return o
}

// durationBuckets are the request latency histogram's boundaries, in
// seconds: OpenTelemetry's recommendation for http.server.request.duration.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// newMeters creates the request instruments from the global meter
// provider, which the process must install before building the Server.
func newMeters() *httpMeters {
	meter := otel.Meter(instrument.ScopeHTTP)
	requests, _ := meter.Int64Counter("berth.http.requests", metric.WithUnit("{request}"),
		metric.WithDescription("HTTP requests served, by method, route and status"))
	duration, _ := meter.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("HTTP request duration, by method, route and status"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	dbUnavailable, _ := meter.Int64Counter("berth.db.unavailable", metric.WithUnit("{request}"),
		metric.WithDescription("Requests answered 503 berth.database_unavailable: the database did not answer (outage, failover)"))
	if dbUnavailable != nil {
		dbUnavailable.Add(context.Background(), 0) // exported from the start, before the first outage
	}
	return &httpMeters{requests: requests, duration: duration, dbUnavailable: dbUnavailable}
}
