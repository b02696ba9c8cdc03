package httpapi

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/telemetry/instrument"
)

// BenchmarkClaimRouteChain is the request chain of POST /claims (request
// id, log line, span and metrics, microversion, deadline, routing,
// authentication, content checks, policy, admission) around a body the
// handler refuses at once (a 400): what the chain costs a claim beside
// its handler.
func BenchmarkClaimRouteChain(b *testing.B) {
	s, err := build(Config{}, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/claims", bytes.NewReader(body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement 1.39")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			b.Fatalf("POST /claims = %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkRequestTelemetry is the telemetry of one POST /claims beside
// the chain's other steps: the span started and ended (no tracer
// provider installed, berthd's default), the request's metrics on an SDK
// meter provider, and its log line through a text handler, as berthd
// logs at info.
func BenchmarkRequestTelemetry(b *testing.B) {
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	defer otel.SetMeterProvider(prev)
	s := &Server{
		log:    slog.New(instrument.LogHandler(slog.NewTextHandler(io.Discard, nil))),
		meters: newMeters(),
	}
	e := echo.New()
	req := httptest.NewRequest(http.MethodPost, "/claims", nil)
	c := e.NewContext(req, httptest.NewRecorder())
	c.SetPath("/claims")
	v := wire.Version{Major: 1, Minor: 39}
	c.Set(wire.ContextKeyVersion, &v)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		ctx, span := s.startSpan(c, "req-c0ffee00-0000-4000-8000-000000000000")
		s.finishTelemetry(c, ctx, span, http.StatusOK, start)
	}
}

// BenchmarkMetricOptions is the lookup of a request's metric attribute
// sets among a dozen routes' and statuses', from every core at once.
func BenchmarkMetricOptions(b *testing.B) {
	m := newMeters()
	routes := []string{"/claims", "/resource_providers/:uuid", "/allocations/:consumer_uuid", "/traits/:name"}
	for _, r := range routes {
		for _, st := range []int{200, 204, 409} {
			m.options(http.MethodPost, r, st)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if m.options(http.MethodPost, routes[i%len(routes)], 200) == nil {
				b.Fatal("no options")
			}
			i++
		}
	})
}
