package instrument

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Instrumentation scopes: the package a span or instrument belongs to.
const (
	ScopeHTTP      = "github.com/berthd/berth/httpapi"
	ScopeClaims    = "github.com/berthd/berth/claims"
	ScopeScheduler = "github.com/berthd/berth/scheduler"
	ScopeLedger    = "github.com/berthd/berth/ledger"
)

// Span attribute keys Berth sets beyond the OpenTelemetry conventions.
const (
	AttrRequestID   = attribute.Key("placement.request_id")
	AttrConsumer    = attribute.Key("berth.consumer_uuid")
	AttrCandidates  = attribute.Key("berth.candidates")
	AttrRemaining   = attribute.Key("berth.candidates.remaining")
	AttrAttempt     = attribute.Key("berth.claim.attempt")
	AttrAttempts    = attribute.Key("berth.claim.attempts")
	AttrOutcome     = attribute.Key("berth.claim.outcome")
	AttrRoot        = attribute.Key("berth.root_provider_uuid")
	AttrPolicy      = attribute.Key("berth.policy")
	AttrUnit        = attribute.Key("berth.policy_unit")
	AttrScriptletFn = attribute.Key("berth.scriptlet.function")
	AttrSteps       = attribute.Key("berth.scriptlet.steps")
)

// Start starts a span called name, a child of the span in ctx, in the
// given scope. End it with End.
func Start(ctx context.Context, scope, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return otel.Tracer(scope).Start(ctx, name, trace.WithAttributes(attrs...))
}

// Stage records a finished piece of work that began at start as a child
// span of ctx's, ending now. Recording after the fact leaves no span open
// when the work returns early; an error then belongs on the parent.
func Stage(ctx context.Context, scope, name string, start time.Time, attrs ...attribute.KeyValue) {
	_, span := otel.Tracer(scope).Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End()
}

// End ends span; a non-nil err marks it failed and is recorded on it.
// Expected refusals (nothing fits, a conflict) are not errors of the
// span: pass nil and set an outcome attribute instead.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Claim outcomes, the values of the outcome attribute of ClaimDone.
const (
	OutcomeClaimed          = "claimed"
	OutcomeNoValidHost      = "no_valid_host"
	OutcomeScriptletRefused = "scriptlet_refused"
	OutcomeConflict         = "consumer_conflict" // consumer generation mismatch
	OutcomeError            = "error"
)

// ClaimDone counts one claim (POST /claims, a reschedule or a move) by
// outcome, and the conflict retries it made: writes that found the
// capacity gone and moved on to the next candidate.
func ClaimDone(ctx context.Context, outcome string, dryRun bool, conflictRetries int) {
	m := otel.Meter(ScopeClaims)
	if c, err := m.Int64Counter("berth.claims", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims by outcome (claimed, no_valid_host, scriptlet_refused, consumer_conflict, error)")); err == nil {
		c.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome), attribute.Bool("dry_run", dryRun)))
	}
	if conflictRetries > 0 {
		if c, err := m.Int64Counter("berth.claim.conflict_retries", metric.WithUnit("{retry}"),
			metric.WithDescription("Claim writes that found capacity gone and moved on to the next candidate")); err == nil {
			c.Add(ctx, int64(conflictRetries))
		}
	}
}

// candidateBuckets are the histogram boundaries for candidate counts.
var candidateBuckets = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

// Candidates records how many allocation candidates one operation
// ("claim", "allocation_candidates", "capacity") generated.
func Candidates(ctx context.Context, operation string, n int) {
	h, err := otel.Meter(ScopeClaims).Int64Histogram("berth.candidates", metric.WithUnit("{candidate}"),
		metric.WithDescription("Allocation candidates generated per request"),
		metric.WithExplicitBucketBoundaries(candidateBuckets...))
	if err == nil {
		h.Record(ctx, int64(n), metric.WithAttributes(attribute.String("operation", operation)))
	}
}

// stepBuckets are the histogram boundaries for scriptlet steps.
var stepBuckets = []float64{100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000}

// Scriptlet records one run of a scriptlet entry point (filter, weigh,
// instance_placement, ...) with its outcome ("ok", "refused", "error",
// "limit_steps", "limit_deadline"): Starlark steps executed and wall
// time.
func Scriptlet(ctx context.Context, entry, outcome string, steps uint64, d time.Duration) {
	m := otel.Meter(ScopeScheduler)
	attrs := metric.WithAttributes(attribute.String("entry", entry), attribute.String("outcome", outcome))
	if h, err := m.Int64Histogram("berth.scriptlet.steps", metric.WithUnit("{step}"),
		metric.WithDescription("Starlark steps per scriptlet run"),
		metric.WithExplicitBucketBoundaries(stepBuckets...)); err == nil {
		h.Record(ctx, int64(steps), attrs)
	}
	if h, err := m.Float64Histogram("berth.scriptlet.duration", metric.WithUnit("s"),
		metric.WithDescription("Wall time per scriptlet run")); err == nil {
		h.Record(ctx, d.Seconds(), attrs)
	}
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request's ID (req-<uuid>), which
// log lines written with ctx include.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request ID in ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
