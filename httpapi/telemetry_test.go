package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/berthd/berth/ledger/ledgertest"
)

// recordSpans installs a global tracer provider that keeps every ended
// span in memory (and the W3C propagator), until the test ends.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		otel.SetTracerProvider(prev)
		otel.SetTextMapPropagator(prevProp)
	})
	return exp
}

func spanAttr(s tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestRequestSpanAndLog checks the server span of one request, that it
// continues the client's W3C trace, and that the request's log line
// carries its request and trace ids.
func TestRequestSpanAndLog(t *testing.T) {
	spans := recordSpans(t)
	var logs bytes.Buffer
	s, err := New(Config{}, ledgertest.NewStore(t), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req := httptest.NewRequest(http.MethodGet, "/resource_providers?name=x", nil)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.14")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /resource_providers = %d %s", rec.Code, rec.Body)
	}
	requestID := rec.Header().Get("X-Openstack-Request-Id")

	var server *tracetest.SpanStub
	for _, sp := range spans.GetSpans() {
		if sp.SpanContext.TraceID().String() == traceID && sp.Name == "GET /resource_providers" {
			server = &sp
		}
	}
	if server == nil {
		t.Fatalf("no span GET /resource_providers in trace %s: %v", traceID, spans.GetSpans().Snapshots())
	}
	if server.Parent.SpanID().String() != parentID || !server.Parent.IsRemote() {
		t.Errorf("server span parent %v, want the client's span %s", server.Parent, parentID)
	}
	for key, want := range map[string]any{
		"http.route": "/resource_providers", "http.response.status_code": int64(200),
		"http.request.method": "GET", "placement.request_id": requestID, "placement.microversion": "1.14",
	} {
		if got := spanAttr(*server, key).AsInterface(); got != want {
			t.Errorf("span attribute %s = %v, want %v", key, got, want)
		}
	}

	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if err := json.Unmarshal([]byte(l), &line); err == nil && line["msg"] == "request" {
			break
		}
	}
	if line["request_id"] != requestID || line["trace_id"] != traceID || line["span_id"] != server.SpanContext.SpanID().String() {
		t.Errorf("request log line %v: want request_id %s, trace_id %s, span_id %s", line, requestID, traceID,
			server.SpanContext.SpanID())
	}
}
