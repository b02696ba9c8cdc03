package telemetry

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
)

func TestSetupStdout(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	shutdown, err := setup(ctx, ExporterStdout, &out)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	_, span := otel.Tracer("test").Start(ctx, "test-span")
	span.End()
	counter, err := otel.Meter("test").Int64Counter("test.requests")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(ctx, 3)
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for _, want := range []string{`"Name":"test-span"`, `"Name":"test.requests"`, `"berthd"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
}

func TestSetupRejectsUnknownExporter(t *testing.T) {
	if _, err := setup(context.Background(), "carrier-pigeon", nil); err == nil {
		t.Fatal("no error for an unknown exporter")
	}
}

func TestSetupNone(t *testing.T) {
	shutdown, err := setup(context.Background(), ExporterNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
