package scriptlet

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/berthd/berth/scheduler"
)

// TestRankTrace installs a recording tracer provider and checks that a
// Rank leaves one span with a child per stage.
func TestRankTrace(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	src := "def instance_placement(request, candidate_members):\n    set_target(\"node3\")\n"
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "forbidden_traits", "params": {"traits": ["CUSTOM_SSD"]}}],
		"weighers": [{"name": "spread"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := scheduler.NewPolicy(pc, nil, NewRuntime(&scripts{def: compile(t, src)}, Limits{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Rank(ctx, &scheduler.Request{}, threeCands()); err != nil {
		t.Fatal(err)
	}
	parent.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans.Ended() {
		byName[s.Name()] = s
	}
	rank := byName["scheduler.rank"]
	if rank == nil {
		t.Fatalf("no scheduler.rank span among %v", names(spans.Ended()))
	}
	if rank.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("scheduler.rank is not a child of the caller's span")
	}
	if got := attr(rank, "berth.candidates"); got.AsInt64() != 3 {
		t.Errorf("scheduler.rank berth.candidates = %v", got.Emit())
	}
	if got := attr(rank, "berth.candidates.remaining"); got.AsInt64() != 2 {
		t.Errorf("scheduler.rank berth.candidates.remaining = %v", got.Emit())
	}
	for _, name := range []string{"scheduler.filter forbidden_traits", "scheduler.weigher spread", "scheduler.scriptlet (default)"} {
		s := byName[name]
		if s == nil {
			t.Errorf("no %s span among %v", name, names(spans.Ended()))
			continue
		}
		if s.Parent().SpanID() != rank.SpanContext().SpanID() {
			t.Errorf("%s is not a child of scheduler.rank", name)
		}
		if s.StartTime().After(s.EndTime()) {
			t.Errorf("%s ends before it starts", name)
		}
	}
	if s := byName["scheduler.filter forbidden_traits"]; s != nil && attr(s, "berth.candidates.remaining").AsInt64() != 2 {
		t.Errorf("forbidden_traits remaining = %v", attr(s, "berth.candidates.remaining").Emit())
	}
	if s := byName["scheduler.scriptlet (default)"]; s != nil && !attr(s, "berth.scriptlet.chose").AsBool() {
		t.Error("the scriptlet span does not say the scriptlet chose")
	}

}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}
