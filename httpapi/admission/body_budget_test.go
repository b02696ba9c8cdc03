package admission

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/labstack/echo/v4"
)

// TestBodyGateQueues: large bodies share a budget of bodyBudgetBytes
// until their requests end; one that finds it spent waits, and after the
// queue timeout is refused with 503 berth.overloaded. Small bodies never
// wait (wire.Bodies.Read does not ask the budget below
// wire.LargeBodyBytes).
func TestBodyGateQueues(t *testing.T) {
	g := NewBodyBudget(100 * time.Millisecond)
	ctx := func() echo.Context {
		return echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", nil), httptest.NewRecorder())
	}
	first, second := ctx(), ctx()
	if err := g.Hold(first, bodyBudgetBytes*2); err != nil { // more than the budget holds all of it
		t.Fatal(err)
	}
	err := g.Hold(second, wire.LargeBodyBytes)
	if e, ok := err.(*wire.Error); !ok || e.Status != http.StatusServiceUnavailable || e.Code != fault.CodeOverloaded || e.RetryAfter == 0 {
		t.Fatalf("a body while the budget is spent: %v", err)
	}
	done := make(chan error, 1)
	third := ctx()
	go func() { done <- g.Hold(third, wire.LargeBodyBytes) }()
	time.Sleep(20 * time.Millisecond)
	g.Release(first)
	if err := <-done; err != nil {
		t.Fatalf("a body once the budget is given back: %v", err)
	}
	g.Release(third)
	g.Release(second) // held nothing: no effect
	if !g.budget.TryAcquire(bodyBudgetBytes) {
		t.Errorf("the budget is not whole again")
	}
}
