package httpapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// The request's telemetry instruments: its metrics, the tracer of its
// span, and the W3C trace context it reads. The chain (chain.go) starts
// and ends the span, records the metrics and writes the log line.

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
