package scheduler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// This file is Rank's tracing: one span for the ranking, and one child
// span per stage (each filter, each weigher, the placement scriptlet),
// recorded when the stage is over so that no span is left open on an
// early return. They are no-ops unless the process installed a tracer
// provider.

// startRank starts the span of one Rank over n candidates.
func startRank(ctx context.Context, n int) (context.Context, trace.Span) {
	return instrument.Start(ctx, instrument.ScopeScheduler, "scheduler.rank", instrument.AttrCandidates.Int(n))
}

// endRank ends the span of a Rank with its outcome.
func endRank(span trace.Span, r *Ranking, err error) {
	// (A span that records nothing takes no attributes: none built.)
	if r != nil && span.IsRecording() {
		span.SetAttributes(instrument.AttrRemaining.Int(len(r.Ranked)))
		if r.Scriptlet != "" {
			span.SetAttributes(attribute.String("berth.scriptlet", r.Scriptlet))
		}
	}
	instrument.End(span, err)
}

// stageSpan records a finished stage of a Rank (a filter, a weigher, the
// placement scriptlet), begun at start, as a child span of ctx's.
func stageSpan(ctx context.Context, kind, unit string, start time.Time, attrs ...attribute.KeyValue) {
	if !instrument.Tracing() {
		return // (no name nor attributes to build)
	}
	instrument.Stage(ctx, instrument.ScopeScheduler, "scheduler."+kind+" "+unit, start,
		append(attrs, instrument.AttrUnit.String(unit))...)
}
