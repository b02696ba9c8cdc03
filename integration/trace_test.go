package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exportedSpan is the part of a span as the OpenTelemetry stdout exporter
// writes it (one JSON object per line) that this test reads.
type exportedSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
}

func (s exportedSpan) attr(key string) (any, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value, true
		}
	}
	return nil, false
}

// TestClaimTraceExported runs the berthd binary with its traces sent to
// the stdout exporter (OTEL_TRACES_EXPORTER=console), makes one claim,
// stops berthd so that the exporter flushes, and reads the claim's trace
// back from what berthd wrote: the request's server span, and under it the
// claim, the candidate generation, the ranking with a span per filter and
// weigher, and the write attempt with its number.
func TestClaimTraceExported(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	b := startBerthd(t)
	const rp = "a0000000-0000-4000-8000-000000000001"
	b.must(t, http.StatusOK, "POST", "/resource_providers", "1.20", map[string]any{"name": "cn1", "uuid": rp}, nil)
	b.must(t, http.StatusOK, "PUT", "/resource_providers/"+rp+"/inventories", "1.20", map[string]any{
		"resource_provider_generation": 0,
		"inventories":                  map[string]any{"VCPU": map[string]any{"total": 8}},
	}, nil)
	b.must(t, http.StatusOK, "POST", "/claims", "latest", map[string]any{
		"consumer_uuid": "c0000000-0000-4000-8000-000000000001", "project_id": "p", "user_id": "u",
		"resources": map[string]any{"VCPU": 2},
	}, nil)

	_ = b.proc.Signal(syscall.SIGTERM) // a graceful stop flushes the exporter
	select {
	case <-b.exited:
	case <-time.After(stopTimeout):
		t.Fatal("berthd did not stop")
	}

	var spans []exportedSpan
	for _, line := range strings.Split(b.stderr.String(), "\n") {
		if !strings.HasPrefix(line, `{"Name":`) {
			continue
		}
		var s exportedSpan
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("span line %q: %v", line, err)
		}
		spans = append(spans, s)
	}
	var claim *exportedSpan
	for i := range spans {
		if spans[i].Name == "claims.claim" {
			claim = &spans[i]
		}
	}
	if claim == nil {
		t.Fatalf("no claims.claim span among %d exported spans:\n%s", len(spans), b.stderr)
	}
	byID := map[string]exportedSpan{}
	children := map[string][]exportedSpan{}
	for _, s := range spans {
		if s.SpanContext.TraceID != claim.SpanContext.TraceID {
			continue
		}
		byID[s.SpanContext.SpanID] = s
		children[s.Parent.SpanID] = append(children[s.Parent.SpanID], s)
	}
	server, ok := byID[claim.Parent.SpanID]
	if !ok || !strings.Contains(server.Name, "/claims") {
		t.Errorf("claims.claim's parent is %q, want the request's server span", server.Name)
	}
	if v, _ := claim.attr("berth.claim.outcome"); v != "claimed" {
		t.Errorf("claims.claim outcome %v, want claimed", v)
	}
	if v, _ := claim.attr("berth.claim.attempts"); v != float64(1) {
		t.Errorf("claims.claim attempts %v, want 1", v)
	}
	// Every span of the claim, by name, under the claim span.
	under := map[string]exportedSpan{}
	var walk func(id string)
	walk = func(id string) {
		for _, c := range children[id] {
			under[c.Name] = c
			walk(c.SpanContext.SpanID)
		}
	}
	walk(claim.SpanContext.SpanID)
	for _, name := range []string{"claims.candidates", "scheduler.rank", "scheduler.filter capacity", "scheduler.weigher spread", "claims.write"} {
		if _, ok := under[name]; !ok {
			names := make([]string, 0, len(under))
			for n := range under {
				names = append(names, n)
			}
			t.Errorf("no %s span under claims.claim; found %q", name, names)
		}
	}
	if w, ok := under["claims.write"]; ok {
		if v, _ := w.attr("berth.claim.attempt"); v != float64(1) {
			t.Errorf("claims.write attempt %v, want 1", v)
		}
		if v, _ := w.attr("berth.root_provider_uuid"); v != rp {
			t.Errorf("claims.write root %v, want %s", v, rp)
		}
	}
}
