package telemetry

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestSetupStdout(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	tel, err := Setup(ctx, Options{Exporter: ExporterStdout, Getenv: env(), Stdout: &out})
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	_, span := otel.Tracer("test").Start(ctx, "test-span")
	span.End()
	counter, err := otel.Meter("test").Int64Counter("test.requests")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(ctx, 3)
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for _, want := range []string{`"Name":"test-span"`, `"Name":"test.requests"`, `"berthd"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
}

func TestSetupPrometheus(t *testing.T) {
	ctx := context.Background()
	tel, err := Setup(ctx, Options{Prometheus: true, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	if tel.Traces != ExporterNone || tel.Metrics != ExporterNone {
		t.Errorf("push exporters %s/%s, want none", tel.Traces, tel.Metrics)
	}
	counter, err := otel.Meter("test").Int64Counter("berth.test.things")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(ctx, 5)
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{"berth_test_things_total 5", "go_goroutines", `service_name="berthd"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

func TestSetupEnvironmentPerSignal(t *testing.T) {
	for _, tc := range []struct {
		name            string
		exporter        string
		env             func(string) string
		traces, metrics string
	}{
		{"flag for both", ExporterStdout, env(), ExporterStdout, ExporterStdout},
		{"env overrides traces", ExporterStdout, env("OTEL_TRACES_EXPORTER", "none"), ExporterNone, ExporterStdout},
		{"console is stdout", "", env("OTEL_METRICS_EXPORTER", "console"), ExporterNone, ExporterStdout},
		{"prometheus metrics means no push", ExporterStdout, env("OTEL_METRICS_EXPORTER", "prometheus"), ExporterStdout, ExporterNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel, err := Setup(context.Background(), Options{Exporter: tc.exporter, Getenv: tc.env, Stdout: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			if tel.Traces != tc.traces || tel.Metrics != tc.metrics {
				t.Errorf("traces %s, metrics %s; want %s, %s", tel.Traces, tel.Metrics, tc.traces, tc.metrics)
			}
		})
	}
}

func TestSetupRejectsUnknownExporter(t *testing.T) {
	if _, err := Setup(context.Background(), Options{Exporter: "carrier-pigeon", Getenv: env()}); err == nil {
		t.Fatal("no error for an unknown exporter")
	}
	if _, err := Setup(context.Background(), Options{Getenv: env("OTEL_TRACES_EXPORTER", "zipkin")}); err == nil ||
		!strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Fatalf("unknown OTEL_TRACES_EXPORTER: %v", err)
	}
}

func TestSetupNone(t *testing.T) {
	tel, err := Setup(context.Background(), Options{Exporter: ExporterNone, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if tel.MetricsHandler() != nil {
		t.Error("a metrics handler without Prometheus")
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
