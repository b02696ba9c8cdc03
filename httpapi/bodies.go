package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"
)

// What reading one request body may cost.
//
// A JSON body is read whole, scanned (jsonlimits.go), decoded into a
// document for the schema and into the handler's typed body, and a
// claim's is encoded again to be recorded: a body of 20 MiB of strings
// held about four times its size while its request ran, and with GOGC 400
// the garbage it left grew the heap further before a collection, which
// kept the memory from the system for minutes. Four such bodies at once
// grew berthd by 730 MiB. So:
//
//   - A body is read into a buffer of its Content-Length (one
//     allocation), not a growing one; a Content-Length past MaxBodyBytes
//     is refused (413) without keeping a byte of it (discardBody). A body
//     without a length (chunked) is read as it comes, up to MaxBodyBytes.
//   - A body of largeBodyBytes or more holds its size of a budget of
//     bodyBudgetBytes from before it is read until its request ends;
//     one that finds the budget spent waits for it up to the admission
//     queue timeout, then is refused with 503 berth.overloaded. Smaller
//     bodies never wait, so ordinary requests keep their latency.
//   - When a request that held a share of the budget ends, the garbage
//     of its body is collected and the memory returned to the system
//     (debug.FreeOSMemory), at most once per memoryReturnInterval, in the
//     background. A collection also resets the heap's goal, which GOGC
//     400 would otherwise let grow to five times the live heap measured
//     while such a request ran.
//
// docs/security.md lists these bounds with the decoding bounds.

const (
	// largeBodyBytes is the size from which a body holds a share of the
	// budget.
	largeBodyBytes = 1 << 20
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

// bodyGate is the body budget of one Server.
type bodyGate struct {
	budget  *semaphore.Weighted
	timeout time.Duration

	mu        sync.Mutex
	pending   bool // a request that held a share ended since the last return
	returning bool // a return runs now
}

func newBodyGate(queueTimeout time.Duration) *bodyGate {
	if queueTimeout <= 0 {
		queueTimeout = DefaultAdmissionQueueTimeout
	}
	return &bodyGate{budget: semaphore.NewWeighted(bodyBudgetBytes), timeout: queueTimeout}
}

// hold takes n bytes of the budget (at most all of it) for the request of
// c, waiting up to the queue timeout, until release(c) at its end.
func (g *bodyGate) hold(c echo.Context, n int64) error {
	if c.Get(ctxBodyHold) != nil {
		return nil // a handler that reads its body twice holds once
	}
	n = min(n, bodyBudgetBytes)
	ctx, cancel := context.WithTimeout(c.Request().Context(), g.timeout)
	defer cancel()
	if err := g.budget.Acquire(ctx, n); err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: fault.CodeOverloaded, RetryAfter: retryAfterOverloaded,
			Msg: "Too many large request bodies are being read; this one waited " + g.timeout.String() +
				" for its turn. Retry later."}
	}
	c.Set(ctxBodyHold, func() { g.budget.Release(n) })
	return nil
}

// release gives back the share the request of c holds, if any, once it
// has been answered, and starts a return of memory.
func (g *bodyGate) release(c echo.Context) {
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
func (g *bodyGate) returnMemory() {
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

// readBody reads the request body, which must be declared as JSON, and
// checks it before it is decoded (checkJSONBody). See above for what
// reading it costs.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	if err := requireJSONBody(c); err != nil {
		return nil, err
	}
	req := c.Request()
	limit := s.cfg.MaxBodyBytes
	if req.ContentLength > limit {
		discardBody(req.Body, req.ContentLength, limit)
		return nil, bodyTooLarge(limit)
	}
	r := http.MaxBytesReader(c.Response(), req.Body, limit)
	var body []byte
	var err error
	if req.ContentLength >= 0 {
		if req.ContentLength >= largeBodyBytes {
			if err := s.bodies.hold(c, req.ContentLength); err != nil {
				return nil, err
			}
		}
		body = make([]byte, req.ContentLength)
		_, err = io.ReadFull(r, body)
	} else {
		body, err = s.readUnsizedBody(c, r, limit)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		var he *Error
		switch {
		case errors.As(err, &mbe):
			return nil, bodyTooLarge(mbe.Limit)
		case errors.As(err, &he):
			return nil, he
		}
		return nil, badRequest("Could not read the request body.")
	}
	if err := checkJSONBody(c, body); err != nil {
		return nil, err
	}
	return body, nil
}

// readUnsizedBody reads a body sent without a Content-Length: its first
// largeBodyBytes freely, the rest holding the share of a body of limit
// bytes (its size is not known before it is read).
func (s *Server) readUnsizedBody(c echo.Context, r io.Reader, limit int64) ([]byte, error) {
	head, err := readAll(io.LimitReader(r, largeBodyBytes))
	if err != nil || len(head) < largeBodyBytes {
		return head, err
	}
	if err := s.bodies.hold(c, limit); err != nil {
		return nil, err
	}
	rest, err := readAll(r)
	return append(head, rest...), err
}

// maxDiscardFactor bounds the body of a refused request that is read
// and thrown away, in multiples of the body limit.
const maxDiscardFactor = 4

// discardBody reads and throws away a body of length bytes refused
// unread, through a small buffer, when it is at most maxDiscardFactor
// times limit: a client that sends its whole body before it reads the
// answer (most do) would otherwise find the connection reset under it
// and never see the 413. A longer body is left unread and the connection
// closes after the answer.
func discardBody(body io.Reader, length, limit int64) {
	if length <= maxDiscardFactor*limit {
		_, _ = io.Copy(io.Discard, io.LimitReader(body, length))
	}
}

// bodyTooLarge is the 413 of a body past limit bytes.
func bodyTooLarge(limit int64) *Error {
	return newError(http.StatusRequestEntityTooLarge, "", "Request body larger than %d bytes.", limit)
}
