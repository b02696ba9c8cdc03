package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter names accepted by Setup.
const (
	// ExporterNone installs nothing: the global providers stay no-ops.
	ExporterNone = "none"
	// ExporterStdout writes spans and, every minute, metrics to standard
	// output as JSON, one object per line.
	ExporterStdout = "stdout"
	// ExporterOTLP sends spans over OTLP/HTTP to the endpoint named by the
	// standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// variables (default http://localhost:4318). Metrics are not exported
	// over OTLP yet: that needs the otlpmetrichttp module.
	ExporterOTLP = "otlp"
)

// Exporters returns the valid exporter names.
func Exporters() []string { return []string{ExporterNone, ExporterStdout, ExporterOTLP} }

// ServiceName is the default service.name resource attribute; the
// standard OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it.
const ServiceName = "berthd"

// metricInterval is how often the stdout exporter prints metrics.
const metricInterval = time.Minute

// Setup installs global tracer and meter providers and the W3C trace
// context and baggage propagators for exporter, one of Exporters. The
// returned shutdown flushes and stops the providers; call it once, on
// exit, with a context that bounds how long flushing may take.
func Setup(ctx context.Context, exporter string) (shutdown func(context.Context) error, err error) {
	return setup(ctx, exporter, os.Stdout)
}

func setup(ctx context.Context, exporter string, stdout io.Writer) (func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if exporter == ExporterNone || exporter == "" {
		return noop, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // after the default, so the environment wins
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}

	var spanExporter sdktrace.SpanExporter
	var readers []sdkmetric.Option
	switch exporter {
	case ExporterStdout:
		spanExporter, err = stdouttrace.New(stdouttrace.WithWriter(stdout))
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(
			newJSONMetricExporter(stdout), sdkmetric.WithInterval(metricInterval))))
	case ExporterOTLP:
		spanExporter, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("telemetry: unknown exporter %q (want one of %v)", exporter, Exporters())
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s exporter: %w", exporter, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spanExporter), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}, nil
}

// jsonMetricExporter writes each collection as one JSON line. It stands
// in for the stdoutmetric module, which Berth does not depend on.
type jsonMetricExporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

var _ sdkmetric.Exporter = (*jsonMetricExporter)(nil)

func newJSONMetricExporter(w io.Writer) *jsonMetricExporter {
	return &jsonMetricExporter{enc: json.NewEncoder(w)}
}

func (e *jsonMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *jsonMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *jsonMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Encode(rm)
}

func (e *jsonMetricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

func (e *jsonMetricExporter) Shutdown(ctx context.Context) error { return ctx.Err() }
