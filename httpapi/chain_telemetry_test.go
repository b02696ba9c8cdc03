package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/telemetry"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/scheduler"
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
	s, err := build(Config{}, ledgertest.NewStore(t), nil, slog.New(slog.NewJSONHandler(&logs, nil)))
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

// claimJSON is a POST /claims body for consumer asking for resources
// (a resources query value such as "VCPU:4,MEMORY_MB:1024").
func claimJSON(consumer, resources string) string {
	var amounts []string
	for _, r := range strings.Split(resources, ",") {
		class, n, _ := strings.Cut(r, ":")
		amounts = append(amounts, `"`+class+`": `+n)
	}
	return `{"consumer_uuid": "` + consumer + `", "project_id": "p", "user_id": "u",
		"resources": {` + strings.Join(amounts, ", ") + `}}`
}

// TestClaimTraceAndMetrics exports the trace of one claim to memory and
// checks its spans and their attributes, then checks that the claim
// counters on /metrics move with claims that place and that do not.
func TestClaimTraceAndMetrics(t *testing.T) {
	spans := recordSpans(t)
	prevMeter := otel.GetMeterProvider()
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{Prometheus: true, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()); otel.SetMeterProvider(prevMeter) })
	otel.SetTextMapPropagator(propagation.TraceContext{}) // Setup installed its own

	store := ledgertest.NewStore(t)
	for _, name := range []string{"cn1", "cn2"} {
		ledgertest.Provider(t, store, name, resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("MEMORY_MB", 4096))
	}
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "max_usage_ratio", "params": {"max": 0.75}}],
		"weighers": [{"name": "pack"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := scheduler.NewPolicy(pc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := build(Config{MetricsHandler: tel.MetricsHandler()}, store, policy, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	post := func(body, traceparent string) int {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/claims", strings.NewReader(body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement latest")
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code
	}
	claims := func(outcome string) float64 {
		t.Helper()
		code, body := apitest.Get(t, s, "/metrics")
		if code != http.StatusOK {
			t.Fatalf("GET /metrics = %d", code)
		}
		return promValue(t, body, "berth_claims_total", `outcome="`+outcome+`"`)
	}
	claimed0, novalid0 := claims("claimed"), claims("no_valid_host")

	const traceID = "0af7651916cd43dd8448eb211c80319c"
	if code := post(claimJSON("11111111-2222-3333-4444-555555555555", "VCPU:4,MEMORY_MB:1024"),
		"00-"+traceID+"-b7ad6b7169203331-01"); code != http.StatusOK {
		t.Fatalf("claim: %d", code)
	}

	// The claim's trace, by span name.
	trace := map[string]tracetest.SpanStub{}
	for _, sp := range spans.GetSpans() {
		if sp.SpanContext.TraceID().String() == traceID {
			trace[sp.Name] = sp
		}
	}
	parentOf := func(child, parent string) {
		t.Helper()
		c, ok := trace[child]
		if !ok {
			t.Errorf("no span %s in the claim's trace (%d spans)", child, len(trace))
			return
		}
		if p := trace[parent]; c.Parent.SpanID() != p.SpanContext.SpanID() {
			t.Errorf("span %s is not a child of %s", child, parent)
		}
	}
	parentOf("claims.claim", "POST /claims")
	parentOf("claims.candidates", "claims.claim")
	parentOf("scheduler.rank", "claims.claim")
	parentOf("scheduler.filter max_usage_ratio", "scheduler.rank")
	parentOf("scheduler.weigher pack", "scheduler.rank")
	parentOf("claims.write", "claims.claim")
	for span, want := range map[string]map[string]any{
		"POST /claims":      {"http.route": "/claims", "http.response.status_code": int64(200)},
		"claims.claim":      {"berth.claim.outcome": "claimed", "berth.claim.attempts": int64(1)},
		"claims.candidates": {"berth.candidates": int64(2)},
		"scheduler.rank":    {"berth.candidates": int64(2), "berth.candidates.remaining": int64(2)},
		"claims.write":      {"berth.claim.attempt": int64(1), "berth.claim.outcome": "claimed"},
	} {
		for key, v := range want {
			if got := spanAttr(trace[span], key).AsInterface(); got != v {
				t.Errorf("%s: %s = %v, want %v", span, key, got, v)
			}
		}
	}

	// Nothing has 7 VCPU under the 0.75 ratio: no valid host.
	if code := post(claimJSON("22222222-2222-3333-4444-555555555555", "VCPU:7"), ""); code != http.StatusConflict {
		t.Fatalf("claim that cannot fit: %d", code)
	}
	if got := claims("claimed"); got != claimed0+1 {
		t.Errorf("berth_claims_total{outcome=claimed} went from %v to %v after one claim", claimed0, got)
	}
	if got := claims("no_valid_host"); got != novalid0+1 {
		t.Errorf("berth_claims_total{outcome=no_valid_host} went from %v to %v after one refused claim", novalid0, got)
	}
	_, body := apitest.Get(t, s, "/metrics")
	if n := promValue(t, body, "berth_candidates_count", `operation="claim"`); n < 2 {
		t.Errorf("berth_candidates_count = %v after two claims", n)
	}
	if n := promValue(t, body, "http_server_request_duration_seconds_count", `http_route="/claims"`,
		`http_response_status_code="409"`); n != 1 {
		t.Errorf("request duration histogram counted %v POST /claims answered 409, want 1", n)
	}
}

// promValue is the value of the sample of metric in a Prometheus text
// exposition whose labels include every one of labels; 0 if none.
func promValue(t *testing.T, exposition, metric string, labels ...string) float64 {
	t.Helper()
	for _, line := range strings.Split(exposition, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || name != metric {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(rest, l)
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		return v
	}
	return 0
}

// headerCarrier reads what propagation.HeaderCarrier reads.
func TestHeaderCarrierAsOTel(t *testing.T) {
	h := http.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Add("tracestate", "a=1")
	h.Add("tracestate", "b=2")
	h.Set("X-Other", "x")
	for _, key := range []string{"traceparent", "tracestate", "baggage", "x-other", "X-Other", "missing"} {
		if got, want := headerCarrier(h).Get(key), propagation.HeaderCarrier(h).Get(key); got != want {
			t.Errorf("Get(%q) = %q, want %q", key, got, want)
		}
	}
}

// The metric attribute sets are built once per method, route and status,
// up to maxMetricSets, and past it still given.
func TestMetricAttributeSets(t *testing.T) {
	m := newMeters()
	kept := func() int {
		if sets := m.sets.Load(); sets != nil {
			return len(*sets)
		}
		return 0
	}
	a, b := m.options("PUT", "/traits/:name", 201), m.options("PUT", "/traits/:name", 201)
	if a != b || kept() != 1 {
		t.Errorf("a method, route and status gave two sets (%d kept)", kept())
	}
	for i := range maxMetricSets + 10 {
		if m.options("M"+strconv.Itoa(i), "unmatched", 405) == nil {
			t.Fatal("no option")
		}
	}
	if n := kept(); n != maxMetricSets {
		t.Errorf("%d sets kept, want at most %d", n, maxMetricSets)
	}
}

// The header keys spelled canonically for net/http are its spelling of
// the names.
func TestCanonicalHeaderKeys(t *testing.T) {
	for key, name := range map[string]string{wire.HeaderAPIVersionKey: wire.HeaderAPIVersion, headerSystemScopeKey: headerSystemScope} {
		if c := http.CanonicalHeaderKey(name); c != key {
			t.Errorf("%s: canonical %s, spelled %s", name, c, key)
		}
	}
	for minor := wire.MinVersion.Minor; minor <= wire.MaxVersion.Minor+1; minor++ {
		v := wire.Version{Major: 1, Minor: minor}
		if got, want := wire.VersionHeader(v), "placement "+fmt.Sprintf("%d.%d", v.Major, v.Minor); got != want {
			t.Errorf("wire.VersionHeader(%v) = %q, want %q", v, got, want)
		}
		if got, want := v.String(), fmt.Sprintf("%d.%d", v.Major, v.Minor); got != want {
			t.Errorf("String(%v) = %q, want %q", v, got, want)
		}
	}
}
