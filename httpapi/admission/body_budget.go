package admission

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
)

// The body budget.
//
// A large JSON body (wire.LargeBodyBytes or more) is held several times
// over while its request runs (wire/body.go), and with GOGC 400 the
// garbage it leaves grows the heap further before a collection, which
// keeps the memory from the system for minutes. So:
//
//   - A large body holds its size of a budget of bodyBudgetBytes from
//     before it is read until its request ends; one that finds the budget
//     spent waits for it up to the queue timeout, then is refused with
//     503 berth.overloaded. Smaller bodies never wait, so ordinary
//     requests keep their latency.
//   - When a request that held a share of the budget ends, the garbage
//     of its body is collected and the memory returned to the system
//     (debug.FreeOSMemory), at most once per memoryReturnInterval, in the
//     background. A collection also resets the heap's goal, which GOGC
//     400 would otherwise let grow to five times the live heap measured
//     while such a request ran.
//
// docs/security.md lists these bounds with the decoding bounds.

const (
	// bodyBudgetBytes is how many bytes of large bodies requests may hold
	// at once. A body larger than the budget holds all of it.
	bodyBudgetBytes = 8 << 20
	// memoryReturnInterval is the least time between two returns of
	// memory to the system: each costs a full collection.
	memoryReturnInterval = time.Second
)

// ctxBodyHold is the context key of a request's share of the budget: the
// func that gives it back.
const ctxBodyHold = "berth.body_hold"

// BodyBudget is the body budget of one server (a wire.Budget).
type BodyBudget struct {
	budget  *semaphore.Weighted
	timeout time.Duration

	mu        sync.Mutex
	pending   bool // a request that held a share ended since the last return
	returning bool // a return runs now
}

var _ wire.Budget = (*BodyBudget)(nil)

// NewBodyBudget is a budget whose bodies wait up to queueTimeout for
// their share (0: DefaultQueueTimeout).
func NewBodyBudget(queueTimeout time.Duration) *BodyBudget {
	if queueTimeout <= 0 {
		queueTimeout = DefaultQueueTimeout
	}
	return &BodyBudget{budget: semaphore.NewWeighted(bodyBudgetBytes), timeout: queueTimeout}
}

// Hold takes n bytes of the budget (at most all of it) for the request of
// c, waiting up to the queue timeout, until Release(c) at its end.
func (g *BodyBudget) Hold(c echo.Context, n int64) error {
	if c.Get(ctxBodyHold) != nil {
		return nil // a handler that reads its body twice holds once
	}
	n = min(n, bodyBudgetBytes)
	ctx, cancel := context.WithTimeout(c.Request().Context(), g.timeout)
	defer cancel()
	if err := g.budget.Acquire(ctx, n); err != nil {
		return &wire.Error{Status: http.StatusServiceUnavailable, Code: fault.CodeOverloaded, RetryAfter: retryAfterOverloaded,
			Msg: "Too many large request bodies are being read; this one waited " + g.timeout.String() +
				" for its turn. Retry later."}
	}
	c.Set(ctxBodyHold, func() { g.budget.Release(n) })
	return nil
}

// Release gives back the share the request of c holds, if any, once it
// has been answered, and starts a return of memory.
func (g *BodyBudget) Release(c echo.Context) {
	give, ok := c.Get(ctxBodyHold).(func())
	if g == nil || !ok {
		return
	}
	give()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = true
	if !g.returning {
		g.returning = true
		go g.returnMemory()
	}
}

// returnMemory collects the garbage the large bodies left and returns
// the free memory to the system, and again while more requests that held
// a share ended during a return, at most once per memoryReturnInterval.
// It runs in its own goroutine, one at a time.
func (g *BodyBudget) returnMemory() {
	for {
		g.mu.Lock()
		if !g.pending {
			g.returning = false
			g.mu.Unlock()
			return
		}
		g.pending = false
		g.mu.Unlock()
		start := time.Now()
		debug.FreeOSMemory()
		time.Sleep(memoryReturnInterval - time.Since(start))
	}
}
