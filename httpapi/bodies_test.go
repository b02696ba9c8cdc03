package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/labstack/echo/v4"
)

// TestBodyReadBounds: a body past MaxBodyBytes is refused with
// Placement's 413 without being kept, whether its Content-Length says so
// or it comes chunked; a chunked body within the limit is read whole.
func TestBodyReadBounds(t *testing.T) {
	s, err := build(Config{MaxBodyBytes: 4 << 20}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := append(append([]byte(`{"name": "`), bytes.Repeat([]byte("x"), 40<<20)...), `"}`...)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rec := post(t, s, "/resource_providers", "application/json", big)
	runtime.ReadMemStats(&after)
	if d := detail(t, rec); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(d, "Request body larger than 4194304 bytes") {
		t.Errorf("40 MiB with its length: %d %q", rec.Code, d)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("refusing a 40 MiB body by its length allocated %d KiB", alloc>>10)
	}

	chunked := func(body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/resource_providers", io.MultiReader(bytes.NewReader(body)))
		req.ContentLength = -1 // no length: read as it comes
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement latest")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	if rec := chunked(big); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("40 MiB chunked: %d %s", rec.Code, rec.Body)
	}
	// Within the limit, past largeBodyBytes: read whole (and refused here
	// only by the schema, for its extra member).
	within := []byte(`{"nome": [` + strings.Repeat(`"`+strings.Repeat("x", 1000)+`",`, 3000) + `0]}`)
	if rec := chunked(within); rec.Code != http.StatusBadRequest || !strings.Contains(detail(t, rec), "JSON does not validate") {
		t.Errorf("3 MiB chunked: %d %.300s", rec.Code, rec.Body)
	}
}

// TestBodyGateQueues: large bodies share a budget of bodyBudgetBytes
// until their requests end; one that finds it spent waits, and after the
// queue timeout is refused with 503 berth.overloaded. Small bodies never
// wait (readBody does not ask the gate below largeBodyBytes).
func TestBodyGateQueues(t *testing.T) {
	g := newBodyGate(100 * time.Millisecond)
	ctx := func() echo.Context {
		return echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", nil), httptest.NewRecorder())
	}
	first, second := ctx(), ctx()
	if err := g.hold(first, bodyBudgetBytes*2); err != nil { // more than the budget holds all of it
		t.Fatal(err)
	}
	err := g.hold(second, largeBodyBytes)
	if e, ok := err.(*Error); !ok || e.Status != http.StatusServiceUnavailable || e.Code != fault.CodeOverloaded || e.RetryAfter == 0 {
		t.Fatalf("a body while the budget is spent: %v", err)
	}
	done := make(chan error, 1)
	third := ctx()
	go func() { done <- g.hold(third, largeBodyBytes) }()
	time.Sleep(20 * time.Millisecond)
	g.release(first)
	if err := <-done; err != nil {
		t.Fatalf("a body once the budget is given back: %v", err)
	}
	g.release(third)
	g.release(second) // held nothing: no effect
	if !g.budget.TryAcquire(bodyBudgetBytes) {
		t.Errorf("the budget is not whole again")
	}
}
