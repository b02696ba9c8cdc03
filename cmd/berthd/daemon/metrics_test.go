package daemon

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/telemetry"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// The instruments ledger and scheduler register reach /metrics, and leave
// it when unregistered.
func TestObservePoolAndScriptlets(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{Prometheus: true, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	unPool, err := ledger.ObservePool(func() ledger.PoolStats {
		return ledger.PoolStats{MaxConns: 8, TotalConns: 3, AcquiredConns: 2, IdleConns: 1,
			AcquireCount: 10, EmptyAcquireCount: 4, CanceledAcquireCount: 1, AcquireDuration: 1500 * time.Millisecond}
	})
	if err != nil {
		t.Fatal(err)
	}
	var sm scriptlet.Metrics
	sm.Runs.Add(5)
	sm.Refused.Add(2)
	sm.Steps.Add(1234)
	sm.Nanoseconds.Add(uint64(250 * time.Millisecond))
	unScript, err := scriptlet.Observe(&sm)
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		rec := httptest.NewRecorder()
		tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	body := scrape()
	for _, want := range []string{
		`berth_db_pool_connections{state="acquired"} 2`, `berth_db_pool_connections{state="max"} 8`,
		`berth_db_pool_acquires_total{result="immediate"} 6`, `berth_db_pool_acquires_total{result="waited"} 4`,
		`berth_db_pool_acquire_wait_seconds_total 1.5`,
		`berth_scriptlet_runs_total 5`, `berth_scriptlet_failures_total{outcome="refused"} 2`,
		`berth_scriptlet_steps_total 1234`, `berth_scriptlet_time_seconds_total 0.25`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	sm.Runs.Add(1)
	if !strings.Contains(scrape(), "berth_scriptlet_runs_total 6") {
		t.Error("scriptlet runs did not move")
	}
	if err := errors.Join(unPool(), unScript()); err != nil {
		t.Fatal(err)
	}
	if body := scrape(); strings.Contains(body, "berth_db_pool") || strings.Contains(body, "berth_scriptlet") {
		t.Error("unregistered gauges still reported")
	}
}
