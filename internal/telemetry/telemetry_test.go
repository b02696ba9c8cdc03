package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

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

// lockedBuffer is a destination a LogWriter's timer and a test read
// concurrently; writes counts its Write calls.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestLogWriterUnbuffered: with no interval, every line is written at
// once, in its own write, and FlushAbove adds nothing.
func TestLogWriterUnbuffered(t *testing.T) {
	var out lockedBuffer
	l := NewLogWriter(&out, 0)
	log := slog.New(l.FlushAbove(slog.NewTextHandler(l, nil), slog.LevelWarn))
	log.Info("one")
	log.Info("two")
	if got := out.String(); !strings.Contains(got, "msg=one") || !strings.Contains(got, "msg=two") || out.writes != 2 {
		t.Errorf("after two lines: %d writes of %q, want both lines, one write each", out.writes, got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLogWriterBuffered: lines are held until Flush, a warning or an
// error, the size bound or Close, each time written in one piece; after
// Close every line is written at once.
func TestLogWriterBuffered(t *testing.T) {
	var out lockedBuffer
	l := NewLogWriter(&out, time.Hour)
	log := slog.New(l.FlushAbove(slog.NewTextHandler(l, nil), slog.LevelWarn))
	log.Info("one")
	log.With("k", "v").Info("two")
	if got := out.String(); got != "" {
		t.Fatalf("info lines written before a flush: %q", got)
	}
	log.With("k", "v").Warn("three")
	got := out.String()
	if out.writes != 1 || !strings.Contains(got, "msg=one") || !strings.Contains(got, "msg=two k=v") || !strings.HasSuffix(got, "msg=three k=v\n") {
		t.Fatalf("after a warning: %d writes of %q, want the three lines in one", out.writes, got)
	}

	log.Info("four")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got = out.String(); out.writes != 2 || !strings.HasSuffix(got, "msg=four\n") {
		t.Fatalf("after Flush: %d writes of %q", out.writes, got)
	}

	// Past MaxLogBuffered, what is held is written first.
	line := strings.Repeat("x", 1000) + "\n"
	for range MaxLogBuffered / len(line) {
		_, _ = l.Write([]byte(line))
	}
	if out.writes != 2 {
		t.Fatalf("%d writes while under the bound, want 2", out.writes)
	}
	_, _ = l.Write([]byte(line))
	if out.writes != 3 || out.b.Len() != len(got)+MaxLogBuffered/len(line)*len(line) {
		t.Fatalf("past the bound: %d writes, %d bytes", out.writes, out.b.Len())
	}

	log.Info("five")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got = out.String()
	if tail := got[strings.LastIndex(got, line)+len(line):]; out.writes != 4 || !strings.HasPrefix(tail, "time=") || !strings.HasSuffix(tail, "msg=five\n") {
		t.Fatalf("Close did not write the held lines in one piece (%d writes): %q", out.writes, got[len(got)-100:])
	}
	n := out.writes
	log.Info("six")
	if out.writes != n+1 || !strings.HasSuffix(out.String(), "msg=six\n") {
		t.Errorf("a line after Close was not written at once")
	}
}

// TestLogWriterInterval: a held line is written once the interval has
// passed, without any other call.
func TestLogWriterInterval(t *testing.T) {
	var out lockedBuffer
	l := NewLogWriter(&out, 10*time.Millisecond)
	defer l.Close()
	_, _ = l.Write([]byte("held\n"))
	for deadline := time.Now().Add(30 * time.Second); out.String() == ""; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a held line was not written after its interval")
		}
	}
	if got := out.String(); got != "held\n" {
		t.Errorf("written %q", got)
	}
}

// TestLogWriterConcurrent: lines written from many goroutines, with the
// timer flushing meanwhile, all arrive whole.
func TestLogWriterConcurrent(t *testing.T) {
	var out lockedBuffer
	l := NewLogWriter(&out, time.Millisecond)
	log := slog.New(slog.NewTextHandler(l, nil))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				log.Info("line", "g", g, "i", i)
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " msg=line g=") {
			t.Fatalf("line %q is not whole", line)
		}
	}
}

// BenchmarkRequestLogLine is a request's log line, as berthd writes it
// (text, info) to a file: written at once, and held for an interval.
func BenchmarkRequestLogLine(b *testing.B) {
	for _, interval := range []time.Duration{0, 50 * time.Millisecond} {
		b.Run("interval="+interval.String(), func(b *testing.B) {
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			l := NewLogWriter(f, interval)
			defer l.Close()
			log := slog.New(l.FlushAbove(slog.NewTextHandler(l, nil), slog.LevelWarn))
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(context.Background(), slog.LevelInfo, "request",
					slog.String("method", "POST"), slog.String("path", "/claims"), slog.String("route", "/claims"),
					slog.String("version", "1.39"), slog.Int("status", 200), slog.Duration("duration", 1234567),
					slog.String("request_id", "req-c0ffee00-0000-4000-8000-000000000000"))
			}
		})
	}
}
