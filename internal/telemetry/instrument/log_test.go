package instrument

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

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
