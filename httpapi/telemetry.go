package httpapi

import (
	"context"
	"log/slog"
	"net/http"
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

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/telemetry/instrument"
)

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
			slog.String("version", wire.VersionOf(c).String()),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(start)))
		return nil
	}
}

// startSpan starts the server span of a request from the global tracer
// provider (a no-op unless the process installed one), as a child of the
// W3C traceparent the client sent, if any. It puts the request ID in the
// returned context for log lines, and returns a function that ends the
// span and records the request metrics in m.
//
// The span's attributes are built only when the span records (a no-op
// tracer's spans, and spans a sampler dropped, do not); when it does,
// they are set right after it starts, in the same order as if they had
// been given to Start. (The samplers berthd configures, from
// OTEL_TRACES_SAMPLER, decide by trace id and parent, not by attribute.)
//
// While no tracer provider is installed no span is started (it would
// record nothing): the context keeps the client's trace context for the
// log line, and the metrics are recorded as ever.
func startSpan(c echo.Context, m *httpMeters) (context.Context, func(status int, d time.Duration)) {
	req := c.Request()
	ctx := otel.GetTextMapPropagator().Extract(req.Context(), headerCarrier(req.Header))
	id := requestID(c)
	ctx = instrument.WithRequestID(ctx, id)
	if !instrument.Tracing() {
		return ctx, func(status int, d time.Duration) { m.record(ctx, req.Method, routeOf(c), status, d) }
	}
	ctx, span := m.tracer().Start(ctx, spanStartName(req.Method), serverSpan...)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("url.path", req.URL.Path),
			instrument.AttrRequestID.String(id),
		)
	}
	return ctx, func(status int, d time.Duration) {
		route := routeOf(c)
		if span.IsRecording() {
			span.SetName(req.Method + " " + route)
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
		m.record(ctx, req.Method, route, status, d)
	}
}

// routeOf is the request's route for its span and metrics: "unmatched"
// for an unknown path, which keeps such paths out of the metric's labels.
func routeOf(c echo.Context) string {
	if route := c.Path(); route != "" {
		return route
	}
	return "unmatched"
}

// record records a request's metrics: one request, and its duration d.
func (m *httpMeters) record(ctx context.Context, method, route string, status int, d time.Duration) {
	attrs := m.attributes(method, route, status)
	m.requests.Add(ctx, 1, attrs)
	m.duration.Record(ctx, d.Seconds(), attrs)
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
func (hc headerCarrier) Keys() []string        { return propagation.HeaderCarrier(hc).Keys() }

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
	// sets holds a metric.MeasurementOption per metricKey, at most
	// maxMetricSets of them (the method is the client's: past the bound,
	// the attributes are built per request, as the SDK bounds its own
	// series).
	sets    sync.Map
	setsLen atomic.Int64
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

// attributes returns the measurement option of a request's metrics:
// its method, route and status.
func (m *httpMeters) attributes(method, route string, status int) metric.MeasurementOption {
	k := metricKey{method, route, status}
	if o, ok := m.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(
		attribute.String("http.request.method", method),
		attribute.String("http.route", route),
		attribute.Int("http.response.status_code", status),
	))
	if m.setsLen.Load() < maxMetricSets {
		if _, loaded := m.sets.LoadOrStore(k, o); !loaded {
			m.setsLen.Add(1)
		}
	}
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
