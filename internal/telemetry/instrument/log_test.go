package instrument

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

func TestLogHandlerAddsRequestAndTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	log = slog.New(LogHandler(log.Handler())) // wrapping again changes nothing
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))
	ctx = WithRequestID(ctx, "req-1")
	log.InfoContext(ctx, "hello")
	if n := bytes.Count(buf.Bytes(), []byte(`"request_id"`)); n != 1 {
		t.Errorf("request_id logged %d times: %s", n, buf.String())
	}
	log.Info("no context")

	dec := json.NewDecoder(&buf)
	var first, second map[string]any
	if err := dec.Decode(&first); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&second); err != nil {
		t.Fatal(err)
	}
	if first["request_id"] != "req-1" || first["trace_id"] != traceID.String() ||
		first["span_id"] != spanID.String() || first["component"] != "test" {
		t.Errorf("with context: %v", first)
	}
	if _, ok := second["trace_id"]; ok || second["request_id"] != nil {
		t.Errorf("without context: %v", second)
	}
}

// TestLogAsHandle: Log writes the line that adding its attributes to the
// record and handing it to the handler writes, in the same order, on a
// LogHandler (request and trace ids, a multi-line error made one line)
// and on any other handler.
func TestLogAsHandle(t *testing.T) {
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))
	attrs := []slog.Attr{
		slog.String("method", "POST"), slog.String("path", "/claims"), slog.String("route", "/claims"),
		slog.String("version", "1.39"), slog.Int("status", 200), slog.Duration("duration", 1500),
		slog.Any("error", errors.New("connect:\n\tfailed")),
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, wrap := range []bool{true, false} {
		for name, ctx := range map[string]context.Context{
			"request id":          WithRequestID(context.Background(), "req-1"),
			"request id and span": WithRequestID(traced, "req-2"),
			"none":                context.Background(),
		} {
			var want, got bytes.Buffer
			newHandler := func(buf *bytes.Buffer) slog.Handler {
				h := slog.Handler(slog.NewTextHandler(buf, nil))
				if wrap {
					h = LogHandler(h)
				}
				return h
			}
			r := slog.NewRecord(when, slog.LevelInfo, "request", 0)
			r.AddAttrs(attrs...)
			if err := newHandler(&want).Handle(ctx, r); err != nil {
				t.Fatal(err)
			}
			if err := Log(ctx, newHandler(&got), slog.NewRecord(when, slog.LevelInfo, "request", 0), attrs...); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("LogHandler %v, %s: Log wrote\n%s, Handle\n%s", wrap, name, got.String(), want.String())
			}
		}
	}
}
