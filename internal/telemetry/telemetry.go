package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter names accepted in Options.Exporter.
const (
	// ExporterNone exports nothing (the Prometheus endpoint still works).
	ExporterNone = "none"
	// ExporterStdout writes spans and, every minute (or
	// $OTEL_METRIC_EXPORT_INTERVAL ms), metrics to standard output as
	// JSON, one object per line.
	ExporterStdout = "stdout"
	// ExporterOTLP sends spans and metrics over OTLP/HTTP to the endpoint
	// named by the standard OTEL_EXPORTER_OTLP_ENDPOINT (or the
	// per-signal OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
	// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) variables, default
	// http://localhost:4318; headers, timeouts and TLS from the other
	// OTEL_EXPORTER_OTLP_* variables.
	ExporterOTLP = "otlp"
)

// Exporters returns the valid exporter names.
func Exporters() []string { return []string{ExporterNone, ExporterStdout, ExporterOTLP} }

// ServiceName is the default service.name resource attribute; the
// standard OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it.
const ServiceName = "berthd"

// Options says what Setup installs.
type Options struct {
	// Exporter is where traces and metrics are pushed: one of Exporters;
	// "" means none. The standard OTEL_TRACES_EXPORTER and
	// OTEL_METRICS_EXPORTER variables ("otlp", "console", "none";
	// "prometheus" for metrics means no push) override it per signal.
	Exporter string
	// Prometheus installs a pull reader whose text exposition
	// Telemetry.MetricsHandler serves.
	Prometheus bool
	// Getenv reads the OTEL_* variables above; nil means os.Getenv.
	// (The OTLP exporters and the SDK read their own variables from the
	// process environment.)
	Getenv func(string) string
	// Stdout receives the stdout exporter's output; nil means os.Stdout.
	Stdout io.Writer
}

// Telemetry is what Setup installed.
type Telemetry struct {
	// Traces and Metrics are the push exporters in use per signal.
	Traces, Metrics string
	metricsHandler  http.Handler
	shutdown        []func(context.Context) error
}

// MetricsHandler serves the metrics in the Prometheus text format; nil
// unless Options.Prometheus was set.
func (t *Telemetry) MetricsHandler() http.Handler { return t.metricsHandler }

// Shutdown flushes and stops the providers. Call it once, on exit, with a
// context that bounds how long flushing may take.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, fn := range t.shutdown {
		errs = append(errs, fn(ctx))
	}
	return errors.Join(errs...)
}

// Setup installs the global W3C trace-context and baggage propagators
// and, as opts asks, global tracer and meter providers. Providers not
// asked for stay as they were (no-ops in a fresh process).
func Setup(ctx context.Context, opts Options) (*Telemetry, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	traces, err := signalExporter(opts, "OTEL_TRACES_EXPORTER", nil)
	if err != nil {
		return nil, err
	}
	metrics, err := signalExporter(opts, "OTEL_METRICS_EXPORTER", []string{"prometheus"})
	if err != nil {
		return nil, err
	}
	t := &Telemetry{Traces: traces, Metrics: metrics}
	if traces == ExporterNone && metrics == ExporterNone && !opts.Prometheus {
		return t, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // after the default, so the environment wins
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}

	if traces != ExporterNone {
		var exp sdktrace.SpanExporter
		if traces == ExporterStdout {
			exp, err = stdouttrace.New(stdouttrace.WithWriter(opts.Stdout))
		} else {
			exp, err = otlptracehttp.New(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s trace exporter: %w", traces, err)
		}
		// The sampler follows OTEL_TRACES_SAMPLER (default: parent-based,
		// always on).
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		otel.SetTracerProvider(tp)
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}

	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	switch metrics {
	case ExporterStdout:
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(newJSONMetricExporter(opts.Stdout))))
	case ExporterOTLP:
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp metric exporter: %w", err)
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if opts.Prometheus {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
		}
		mopts = append(mopts, sdkmetric.WithReader(exp))
		t.metricsHandler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	if metrics != ExporterNone || opts.Prometheus {
		mp := sdkmetric.NewMeterProvider(mopts...)
		otel.SetMeterProvider(mp)
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	return t, nil
}

// signalExporter is the push exporter for one signal: the standard
// variable env if set, else opts.Exporter. noPush are values of env that
// mean "no push exporter" for this signal.
func signalExporter(opts Options, env string, noPush []string) (string, error) {
	switch v := opts.Getenv(env); {
	case v == "":
	case v == "console":
		return ExporterStdout, nil
	case v == ExporterOTLP || v == ExporterNone:
		return v, nil
	case slices.Contains(noPush, v):
		return ExporterNone, nil
	default:
		return "", fmt.Errorf("telemetry: $%s=%q: want otlp, console or none", env, v)
	}
	switch opts.Exporter {
	case "", ExporterNone:
		return ExporterNone, nil
	case ExporterStdout, ExporterOTLP:
		return opts.Exporter, nil
	}
	return "", fmt.Errorf("telemetry: unknown exporter %q (want one of %v)", opts.Exporter, Exporters())
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

// LogWriter is where berthd's log lines go: straight to its destination,
// or, given a flush interval, kept in memory and written in one piece.
// Buffered, a line is written at most the interval after it was logged,
// and at once when the lines held reach MaxLogBuffered bytes, on Flush
// (which FlushAbove calls after every record at or above a level) and
// on Close. A process that ends without Close (SIGKILL, the kernel's
// out-of-memory killer, an unrecovered panic) loses the lines of the
// last interval, at most MaxLogBuffered bytes of them.
type LogWriter struct {
	w        io.Writer
	interval time.Duration // 0: every line written at once

	mu     sync.Mutex
	buf    []byte
	timer  *time.Timer // flushes buf interval after its first line
	closed bool
}

// MaxLogBuffered bounds the lines a buffered LogWriter holds.
const MaxLogBuffered = 64 << 10

// NewLogWriter returns a LogWriter writing to w, whose lines wait up to
// interval; 0 writes every line at once.
func NewLogWriter(w io.Writer, interval time.Duration) *LogWriter {
	l := &LogWriter{w: w, interval: max(interval, 0)}
	if l.interval > 0 {
		l.timer = time.AfterFunc(time.Hour, func() { _ = l.Flush() })
		l.timer.Stop()
	}
	return l
}

// Write writes one or more whole lines (a slog handler writes each
// record's in one call). Buffered, an error is the destination's of a
// write of held lines it caused; lines a failed write held are dropped.
func (l *LogWriter) Write(p []byte) (int, error) {
	if l.interval == 0 {
		return l.w.Write(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(p) >= MaxLogBuffered {
		if err := l.flushLocked(); err != nil {
			return 0, err
		}
		return l.w.Write(p)
	}
	if len(l.buf)+len(p) > MaxLogBuffered {
		if err := l.flushLocked(); err != nil {
			return 0, err
		}
	}
	if len(l.buf) == 0 {
		l.timer.Reset(l.interval)
	}
	if l.buf == nil {
		// Sized once: held lines never pass MaxLogBuffered.
		l.buf = make([]byte, 0, MaxLogBuffered)
	}
	l.buf = append(l.buf, p...)
	return len(p), nil
}

// Flush writes the lines held.
func (l *LogWriter) Flush() error {
	if l.interval == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *LogWriter) flushLocked() error {
	if len(l.buf) == 0 {
		return nil
	}
	l.timer.Stop()
	_, err := l.w.Write(l.buf)
	l.buf = l.buf[:0]
	return err
}

// Close writes the lines held; lines written after it go to the
// destination at once. Call it before the process exits.
func (l *LogWriter) Close() error {
	if l.interval == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.flushLocked()
}

// FlushAbove returns h, whose every record at level or above also
// flushes l once written (a warning or an error is not held back), or h
// itself when l writes every line at once.
func (l *LogWriter) FlushAbove(h slog.Handler, level slog.Level) slog.Handler {
	if l.interval == 0 {
		return h
	}
	return flushingHandler{Handler: h, l: l, level: level}
}

type flushingHandler struct {
	slog.Handler
	l     *LogWriter
	level slog.Level
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= h.level {
		if ferr := h.l.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{Handler: h.Handler.WithAttrs(attrs), l: h.l, level: h.level}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{Handler: h.Handler.WithGroup(name), l: h.l, level: h.level}
}
