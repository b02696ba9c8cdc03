package instrument_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// BenchmarkClaimSpans is the span work of one claim when the process
// installed no tracer provider (berthd's default): the claim's span, a
// candidates stage, a write stage and the span's end. Its allocs/op are
// what a claim pays for tracing that is off.
func BenchmarkClaimSpans(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cctx, span := instrument.Start(ctx, instrument.ScopeClaims, "claims.claim",
			instrument.AttrConsumer.String("c0ffee00-0000-4000-8000-000000000000"))
		start := time.Now()
		instrument.Stage(cctx, instrument.ScopeClaims, "claims.candidates", start, instrument.AttrCandidates.Int(100))
		instrument.Stage(cctx, instrument.ScopeClaims, "claims.write", start,
			instrument.AttrAttempt.Int(1), instrument.AttrRoot.String("r"), instrument.AttrOutcome.String("claimed"))
		span.SetAttributes(instrument.AttrOutcome.String("claimed"), instrument.AttrAttempts.Int(1))
		instrument.End(span, nil)
	}
}

// BenchmarkClaimDone is the berth.claims counter's work for one claim,
// on an SDK meter provider as berthd installs for /metrics.
func BenchmarkClaimDone(b *testing.B) {
	ctx := context.Background()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	b.ReportAllocs()
	for b.Loop() {
		instrument.ClaimDone(ctx, instrument.OutcomeClaimed, false, 0)
	}
}

// BenchmarkClaimMetrics is the metrics of one claim beside the request's:
// the berth.candidates histogram and the berth.claims counter, on an SDK
// meter provider as berthd installs for /metrics.
func BenchmarkClaimMetrics(b *testing.B) {
	ctx := context.Background()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	b.ReportAllocs()
	for b.Loop() {
		instrument.Candidates(ctx, "claim", 100)
		instrument.ClaimDone(ctx, instrument.OutcomeClaimed, false, 0)
	}
}
