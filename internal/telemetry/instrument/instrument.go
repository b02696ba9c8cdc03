package instrument

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
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

// untraced is the global tracer provider as OpenTelemetry starts it:
// until a process installs one (otel.SetTracerProvider), every span it
// gives records nothing.
var untraced = otel.GetTracerProvider()

// Tracing reports whether the process installed a tracer provider:
// until it has, every span records nothing, and a caller may skip it.
func Tracing() bool { return otel.GetTracerProvider() != untraced }

// Start starts a span called name, a child of the span in ctx, in the
// given scope. End it with End. While no tracer provider is installed it
// returns ctx and a span that records nothing, without building the
// span's options.
func Start(ctx context.Context, scope, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Tracing() {
		return ctx, tracenoop.Span{}
	}
	// A copy: attrs then stays on the caller's stack when tracing is off.
	return otel.Tracer(scope).Start(ctx, name, trace.WithAttributes(slices.Clone(attrs)...))
}

// Stage records a finished piece of work that began at start as a child
// span of ctx's, ending now. Recording after the fact leaves no span open
// when the work returns early; an error then belongs on the parent. While
// no tracer provider is installed it does nothing.
func Stage(ctx context.Context, scope, name string, start time.Time, attrs ...attribute.KeyValue) {
	if !Tracing() {
		return
	}
	_, span := otel.Tracer(scope).Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(slices.Clone(attrs)...))
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
	OutcomeClaimConflict    = "claim_conflict" // every write attempt lost to concurrent claims
	OutcomeScriptletRefused = "scriptlet_refused"
	OutcomeConflict         = "consumer_conflict" // consumer generation mismatch
	OutcomeError            = "error"
)

// ClaimDone counts one claim (POST /claims, a reschedule or a move) by
// outcome, and the conflict retries it made: writes that found the
// capacity gone and moved on to the next candidate.
func ClaimDone(ctx context.Context, outcome string, dryRun bool, conflictRetries int) {
	m := current()
	m.claims.Add(ctx, 1, claimAttrs(outcome, dryRun)...)
	if conflictRetries > 0 {
		m.retries.Add(ctx, int64(conflictRetries))
	}
}

// Actions of LeaseExpired.
const (
	LeaseReleased = "released" // a provisional claim's allocations
	LeaseReverted = "reverted" // a move
)

// ZeroClaimCounters adds 0 to every series of the claim counters of the
// global meter provider (berth.claims by outcome and dry run,
// berth.claim.conflict_retries, berth.claim.leases.expired by action),
// so that a process exports them from its start, before their first
// event: dashboards and rate() then have a series to work on. berthd
// calls it once its meter provider is installed.
func ZeroClaimCounters(ctx context.Context) {
	m := current()
	for _, outcome := range []string{OutcomeClaimed, OutcomeNoValidHost, OutcomeClaimConflict, OutcomeScriptletRefused, OutcomeConflict, OutcomeError} {
		for _, dryRun := range []bool{false, true} {
			m.claims.Add(ctx, 0, metric.WithAttributes(attribute.String("outcome", outcome), attribute.Bool("dry_run", dryRun)))
		}
	}
	m.retries.Add(ctx, 0)
	for _, action := range []string{LeaseReleased, LeaseReverted} {
		m.leases.Add(ctx, 0, metric.WithAttributes(attribute.String("action", action)))
	}
}

// LeaseExpired counts one claim lease that ran out and was ended by the
// reaper, by action: "released" (a provisional claim's allocations) or
// "reverted" (a move).
func LeaseExpired(ctx context.Context, action string) {
	current().leases.Add(ctx, 1, metric.WithAttributes(attribute.String("action", action)))
}

// Candidates records how many allocation candidates one operation
// ("claim", "allocation_candidates") generated.
func Candidates(ctx context.Context, operation string, n int) {
	current().candidates.Record(ctx, int64(n), candidateAttrs(operation)...)
}

// CandidatesCacheLookup counts one lookup of GET
// /allocation_candidates' answer cache: a hit (an answer kept, or one a
// concurrent identical request computed) or a miss (computed).
func CandidatesCacheLookup(ctx context.Context, hit bool) {
	m := current()
	if hit {
		m.cacheLookups.Add(ctx, 1, m.cacheHit...)
	} else {
		m.cacheLookups.Add(ctx, 1, m.cacheMiss...)
	}
}

// CandidatesCacheBytes adds delta (negative: taken out) to the bytes of
// answers GET /allocation_candidates' answer cache holds.
func CandidatesCacheBytes(ctx context.Context, delta int64) {
	current().cacheBytes.Add(ctx, delta)
}

// claimOutcomes are the outcomes of ClaimDone, in the order of
// claimAttrSets.
var claimOutcomes = [...]string{OutcomeClaimed, OutcomeNoValidHost, OutcomeClaimConflict, OutcomeScriptletRefused, OutcomeConflict, OutcomeError}

// claimAttrSets holds the berth.claims counter's attributes of each
// outcome (by its index in claimOutcomes) and dry run (0 false, 1 true),
// built once as the option list Add takes: recording then builds
// nothing.
var claimAttrSets = func() (sets [len(claimOutcomes)][2][]metric.AddOption) {
	for i, outcome := range claimOutcomes {
		for j, dryRun := range []bool{false, true} {
			sets[i][j] = newClaimAttrs(outcome, dryRun)
		}
	}
	return sets
}()

// claimAttrs is the berth.claims counter's attributes for outcome and
// dryRun: the set built once for one of claimOutcomes, and built anew
// for any other.
func claimAttrs(outcome string, dryRun bool) []metric.AddOption {
	j := 0
	if dryRun {
		j = 1
	}
	for i, o := range claimOutcomes {
		if o == outcome {
			return claimAttrSets[i][j]
		}
	}
	return newClaimAttrs(outcome, dryRun)
}

func newClaimAttrs(outcome string, dryRun bool) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcome), attribute.Bool("dry_run", dryRun)))}
}

// Candidates' operations whose attribute sets are built once.
var (
	candidatesClaim       = newCandidateAttrs("claim")
	candidatesAllocations = newCandidateAttrs("allocation_candidates")
)

// candidateAttrs is the berth.candidates histogram's attributes for
// operation: built once for "claim" and "allocation_candidates", anew
// for any other.
func candidateAttrs(operation string) []metric.RecordOption {
	switch operation {
	case "claim":
		return candidatesClaim
	case "allocation_candidates":
		return candidatesAllocations
	}
	return newCandidateAttrs(operation)
}

func newCandidateAttrs(operation string) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("operation", operation)))}
}

// candidateBuckets are the histogram boundaries for candidate counts.
var candidateBuckets = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

// meters are the instruments of this package, made from one meter
// provider.
type meters struct {
	provider   metric.MeterProvider
	claims     metric.Int64Counter
	retries    metric.Int64Counter
	leases     metric.Int64Counter
	candidates metric.Int64Histogram
	// cacheLookups and cacheBytes are the answer cache's; cacheHit and
	// cacheMiss the options of a lookup's result, built once.
	cacheLookups        metric.Int64Counter
	cacheBytes          metric.Int64UpDownCounter
	cacheHit, cacheMiss []metric.AddOption
}

// cached holds the instruments of the global meter provider last seen: a
// cache, rebuilt whenever the process (or a test) installs another
// provider, so that recording costs no instrument lookup.
var cached atomic.Pointer[meters]

// current returns the instruments of the global meter provider.
func current() *meters {
	mp := otel.GetMeterProvider()
	if m := cached.Load(); m != nil && m.provider == mp {
		return m
	}
	m := newMeters(mp)
	cached.Store(m)
	return m
}

// newMeters creates the instruments. Creation errors leave no-op
// instruments: metrics must never fail a claim.
func newMeters(mp metric.MeterProvider) *meters {
	claims := mp.Meter(ScopeClaims)
	m := &meters{provider: mp}
	var err error
	if m.claims, err = claims.Int64Counter("berth.claims", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims by outcome (claimed, no_valid_host, scriptlet_refused, consumer_conflict, error)")); err != nil {
		m.claims = noop.Int64Counter{}
	}
	if m.retries, err = claims.Int64Counter("berth.claim.conflict_retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Claim writes that found capacity gone and moved on to the next candidate")); err != nil {
		m.retries = noop.Int64Counter{}
	}
	if m.leases, err = claims.Int64Counter("berth.claim.leases.expired", metric.WithUnit("{lease}"),
		metric.WithDescription("Claim leases that ran out, by action: released (a provisional claim's allocations) or reverted (a move)")); err != nil {
		m.leases = noop.Int64Counter{}
	}
	if m.candidates, err = claims.Int64Histogram("berth.candidates", metric.WithUnit("{candidate}"),
		metric.WithDescription("Allocation candidates generated per request"),
		metric.WithExplicitBucketBoundaries(candidateBuckets...)); err != nil {
		m.candidates = noop.Int64Histogram{}
	}
	http := mp.Meter(ScopeHTTP)
	if m.cacheLookups, err = http.Int64Counter("berth.candidates.cache.lookups", metric.WithUnit("{lookup}"),
		metric.WithDescription("Lookups of GET /allocation_candidates' answer cache, by result (hit, miss)")); err != nil {
		m.cacheLookups = noop.Int64Counter{}
	}
	if m.cacheBytes, err = http.Int64UpDownCounter("berth.candidates.cache.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes of answers GET /allocation_candidates' answer cache holds")); err != nil {
		m.cacheBytes = noop.Int64UpDownCounter{}
	}
	m.cacheHit = []metric.AddOption{metric.WithAttributes(attribute.String("result", "hit"))}
	m.cacheMiss = []metric.AddOption{metric.WithAttributes(attribute.String("result", "miss"))}
	return m
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request's ID (req-<uuid>), which
// log lines written with ctx include.
func WithRequestID(ctx context.Context, id string) context.Context {
	return &requestIDContext{Context: ctx, id: id}
}

// requestIDContext is a context carrying a request's ID: one allocation,
// where context.WithValue would box the ID in a second.
type requestIDContext struct {
	context.Context
	id string
}

// Value answers requestIDKey with the context itself (a pointer, not
// boxed), and every other key as its parent does.
func (c *requestIDContext) Value(key any) any {
	if _, ok := key.(requestIDKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// RequestID is the request ID in ctx, or "".
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(requestIDKey{}).(*requestIDContext); ok {
		return c.id
	}
	return ""
}
