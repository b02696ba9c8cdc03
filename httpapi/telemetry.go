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
)

const instrumentationName = "github.com/berthd/berth/httpapi"

// startSpan starts the server span of a request from the global tracer
// provider (a no-op unless the process installed one) and returns a
// function that ends it and records the request metrics in m.
func startSpan(c echo.Context, m httpMeters) (context.Context, func(status int, d time.Duration)) {
	req := c.Request()
	ctx := otel.GetTextMapPropagator().Extract(req.Context(), propagation.HeaderCarrier(req.Header))
	ctx, span := otel.Tracer(instrumentationName).Start(ctx, "HTTP "+req.Method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("url.path", req.URL.Path),
		))
	return ctx, func(status int, d time.Duration) {
		route := c.Path()
		span.SetName(req.Method + " " + route)
		span.SetAttributes(
			attribute.String("http.route", route),
			attribute.Int("http.response.status_code", status),
			attribute.String("placement.request_id", requestID(c)),
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

// newMeters creates the request instruments from the global meter
// provider, which the process must install before building the Server.
func newMeters() httpMeters {
	meter := otel.Meter(instrumentationName)
	requests, _ := meter.Int64Counter("berth.http.requests", metric.WithDescription("HTTP requests served"))
	duration, _ := meter.Float64Histogram("berth.http.duration", metric.WithUnit("s"),
		metric.WithDescription("HTTP request duration"))
	return httpMeters{requests: requests, duration: duration}
}
