package admission

import (
	"context"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/telemetry/instrument"
)

// Admission control. The requests whose work and memory grow with the
// size of the cloud (candidates, claims, provider lists, capacity, usages)
// hold one of a fixed number of slots while they run; a request that
// finds every slot taken waits in line up to a deadline, then is refused
// with 503 berth.overloaded and a Retry-After. Everything else (GET /,
// a single provider, its inventories, the probes, writes bounded by the
// database pool) is never held back, so small requests keep their
// latency while the expensive ones queue, and memory stays bounded by
// the slots instead of by the number of clients.

// DefaultQueueTimeout is how long an expensive request, or a large body,
// waits for its turn when the server's queue timeout is 0.
const DefaultQueueTimeout = 10 * time.Second

// retryAfterOverloaded is the Retry-After (seconds) of a 503 for a full
// queue: a slot usually frees within a second.
const retryAfterOverloaded = 1

// DefaultMaxInflightExpensive is the number of slots when the server's
// bound is 0: four per CPU Go may use, at least 16.
// Candidates and rankings are CPU-bound, so more in flight only adds
// memory and latency; claims also wait on the database, and batches of
// concurrent claims share one commit (ledger's group commit), which wants
// a few more in flight than there are CPUs.
func DefaultMaxInflightExpensive() int { return max(16, 4*runtime.GOMAXPROCS(0)) }

// Slots is the slot pool of one server.
type Slots struct {
	slots   chan struct{} // a token per running expensive request
	timeout time.Duration
	waiting atomic.Int64
	// admitted counts the requests given a slot, which
	// berth.admission.admitted exports when collected: an increment per
	// request instead of a measurement through the meter provider.
	admitted atomic.Int64
	meters   admissionMeters
}

type admissionMeters struct {
	queued, rejected metric.Int64Counter
}

// NewSlots returns a pool of n slots (0: DefaultMaxInflightExpensive()),
// whose requests wait up to timeout for one (0: DefaultQueueTimeout), or
// nil when n is negative (no bound).
func NewSlots(n int, timeout time.Duration) *Slots {
	if n < 0 {
		return nil
	}
	if n == 0 {
		n = DefaultMaxInflightExpensive()
	}
	if timeout <= 0 {
		timeout = DefaultQueueTimeout
	}
	meter := otel.Meter(instrument.ScopeHTTP)
	a := &Slots{slots: make(chan struct{}, n), timeout: timeout}
	_, _ = meter.Int64ObservableCounter("berth.admission.admitted", metric.WithUnit("{request}"),
		metric.WithDescription("Expensive requests given a slot by admission control"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(a.admitted.Load())
			return nil
		}))
	a.meters.queued, _ = meter.Int64Counter("berth.admission.queued", metric.WithUnit("{request}"),
		metric.WithDescription("Expensive requests that found every slot taken and waited in line"))
	a.meters.rejected, _ = meter.Int64Counter("berth.admission.rejected", metric.WithUnit("{request}"),
		metric.WithDescription("Expensive requests refused with 503 berth.overloaded after waiting their queue timeout"))
	// At 0 from the start, so that they are exported before their first
	// event.
	for _, c := range []metric.Int64Counter{a.meters.queued, a.meters.rejected} {
		if c != nil {
			c.Add(context.Background(), 0)
		}
	}
	_, _ = meter.Int64ObservableGauge("berth.admission.inflight", metric.WithUnit("{request}"),
		metric.WithDescription("Expensive requests running now (holding a slot)"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(len(a.slots)))
			return nil
		}))
	_, _ = meter.Int64ObservableGauge("berth.admission.waiting", metric.WithUnit("{request}"),
		metric.WithDescription("Expensive requests waiting for a slot now"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(a.waiting.Load())
			return nil
		}))
	return a
}

// Acquire admits a request of a bounded route (the server's route
// table): it takes a slot, waiting up to the queue timeout (or until ctx
// ends), or refuses with 503 berth.overloaded. A request it admits gives
// the slot back with Release once answered. The server calls it after
// routing, authentication and authorisation, so that unknown paths and
// callers who may not run the request never take or wait for a slot. A
// nil pool admits everything.
func (a *Slots) Acquire(ctx context.Context) error {
	if a == nil {
		return nil
	}
	select {
	case a.slots <- struct{}{}:
		a.admitted.Add(1)
		return nil
	default:
	}
	a.meters.queued.Add(ctx, 1)
	a.waiting.Add(1)
	defer a.waiting.Add(-1)
	t := time.NewTimer(a.timeout)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		a.admitted.Add(1)
		return nil
	case <-t.C:
	case <-ctx.Done():
		// The client left or the request deadline passed: the answer
		// is the same, though the client may not read it.
	}
	a.meters.rejected.Add(ctx, 1)
	return &wire.Error{Status: http.StatusServiceUnavailable, Code: fault.CodeOverloaded, RetryAfter: retryAfterOverloaded,
		Msg: "Too many expensive requests (allocation candidates, claims, lists) are running; this one waited " +
			a.timeout.String() + " for its turn. Retry later."}
}

// Release gives back the slot Acquire took.
func (a *Slots) Release() {
	if a != nil {
		<-a.slots
	}
}

// Inflight is how many slots are taken.
func (a *Slots) Inflight() int { return len(a.slots) }
