package httpapi

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// startSpan starts the server span of a request from the global tracer
// provider (a no-op unless the process installed one), as a child of the
// W3C traceparent the client sent, if any. It puts the request ID in the
// returned context for log lines, and returns a function that ends the
// span and records the request metrics in m.
func startSpan(c echo.Context, m httpMeters) (context.Context, func(status int, d time.Duration)) {
	req := c.Request()
	ctx := otel.GetTextMapPropagator().Extract(req.Context(), propagation.HeaderCarrier(req.Header))
	ctx = instrument.WithRequestID(ctx, requestID(c))
	ctx, span := otel.Tracer(instrument.ScopeHTTP).Start(ctx, "HTTP "+req.Method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("url.path", req.URL.Path),
			instrument.AttrRequestID.String(requestID(c)),
		))
	return ctx, func(status int, d time.Duration) {
		route := c.Path()
		if route == "" {
			route = "unmatched" // keeps unknown paths out of the metric's labels
		}
		span.SetName(req.Method + " " + route)
		span.SetAttributes(
			attribute.String("http.route", route),
			attribute.Int("http.response.status_code", status),
			attribute.String("placement.microversion", version(c).String()),
		)
		if status >= 500 {
			span.SetStatus(codes.Error, "server error")
		}
		span.End()
		attrs := metric.WithAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("http.route", route),
			attribute.Int("http.response.status_code", status),
		)
		m.requests.Add(ctx, 1, attrs)
		m.duration.Record(ctx, d.Seconds(), attrs)
	}
}

type httpMeters struct {
	requests metric.Int64Counter
	duration metric.Float64Histogram
}

// durationBuckets are the request latency histogram's boundaries, in
// seconds: OpenTelemetry's recommendation for http.server.request.duration.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// newMeters creates the request instruments from the global meter
// provider, which the process must install before building the Server.
func newMeters() httpMeters {
	meter := otel.Meter(instrument.ScopeHTTP)
	requests, _ := meter.Int64Counter("berth.http.requests", metric.WithUnit("{request}"),
		metric.WithDescription("HTTP requests served, by method, route and status"))
	duration, _ := meter.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("HTTP request duration, by method, route and status"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	return httpMeters{requests: requests, duration: duration}
}
