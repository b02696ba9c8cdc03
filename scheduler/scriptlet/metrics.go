package scriptlet

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// Observe registers counters of scriptlet runs, read from m's
// running totals at each collection, so that a Starlark unit called once
// per candidate costs no metric work on the claim path. The returned
// function unregisters them.
func Observe(m *Metrics) (unregister func() error, err error) {
	meter := otel.Meter(instrument.ScopeScheduler)
	runs, err := meter.Int64ObservableCounter("berth.scriptlet.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Scriptlet calls (instance_placement once per claim; Starlark filters and weighers once per candidate)"))
	if err != nil {
		return nil, err
	}
	failed, err := meter.Int64ObservableCounter("berth.scriptlet.failures", metric.WithUnit("{run}"),
		metric.WithDescription("Scriptlet calls that refused the request (refused), failed (error) or hit a limit (limit_steps, limit_deadline, limit_memory); ignored counts the failures claims went on without, once per claim and scriptlet unit"))
	if err != nil {
		return nil, err
	}
	steps, err := meter.Int64ObservableCounter("berth.scriptlet.steps", metric.WithUnit("{step}"),
		metric.WithDescription("Starlark steps executed by scriptlets"))
	if err != nil {
		return nil, err
	}
	busy, err := meter.Float64ObservableCounter("berth.scriptlet.time", metric.WithUnit("s"),
		metric.WithDescription("Wall time spent running scriptlets"))
	if err != nil {
		return nil, err
	}
	outcome := func(v string) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("outcome", v))
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(runs, int64(m.Runs.Load()))
		o.ObserveInt64(failed, int64(m.Refused.Load()), outcome("refused"))
		o.ObserveInt64(failed, int64(m.Errors.Load()), outcome("error"))
		o.ObserveInt64(failed, int64(m.StepLimit.Load()), outcome("limit_steps"))
		o.ObserveInt64(failed, int64(m.DeadlineLimit.Load()), outcome("limit_deadline"))
		o.ObserveInt64(failed, int64(m.MemoryLimit.Load()), outcome("limit_memory"))
		o.ObserveInt64(failed, int64(m.Ignored.Load()), outcome("ignored"))
		o.ObserveInt64(steps, int64(m.Steps.Load()))
		o.ObserveFloat64(busy, float64(m.Nanoseconds.Load())/1e9)
		return nil
	}, runs, failed, steps, busy)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// Metrics counts scriptlet runs; one value may be shared by
// every policy (Limits.Metrics). The counters are safe to read
// at any time; OnRun, when set, is called after every run (it must be
// safe for concurrent use and quick); OnFailure, when set, after a run
// that failed or exceeded a limit, at most once a second per scriptlet,
// with how many such runs it was not called for since.
type Metrics struct {
	Runs          atomic.Uint64
	Refused       atomic.Uint64 // returned a value or called fail()
	Errors        atomic.Uint64 // runtime errors
	StepLimit     atomic.Uint64
	DeadlineLimit atomic.Uint64
	MemoryLimit   atomic.Uint64
	// Ignored counts the scriptlet failures claims went on without
	// (Limits.OnError "ignore"): once per Rank and entry point.
	Ignored     atomic.Uint64
	Steps       atomic.Uint64
	Nanoseconds atomic.Uint64
	OnRun       func(RunStats)
	OnFailure   func(s RunStats, suppressed uint64)

	mu   sync.Mutex
	last map[string]failureLog
}

// failureLog is when OnFailure last ran for a scriptlet and how many
// failures it skipped since.
type failureLog struct {
	at         time.Time
	suppressed uint64
}

// RunStats describes one run. Outcome is "ok", "refused",
// "error", "limit_steps", "limit_deadline" or "limit_memory"; Error the
// failure, for logs.
type RunStats struct {
	Scriptlet string
	Entry     string
	Outcome   string
	Steps     uint64
	Duration  time.Duration
	Error     string
}

func (m *Metrics) observe(s RunStats) {
	if m == nil {
		return
	}
	m.Runs.Add(1)
	m.Steps.Add(s.Steps)
	m.Nanoseconds.Add(uint64(s.Duration))
	switch s.Outcome {
	case "refused":
		m.Refused.Add(1)
	case "error":
		m.Errors.Add(1)
	case "limit_steps":
		m.StepLimit.Add(1)
	case "limit_deadline":
		m.DeadlineLimit.Add(1)
	case "limit_memory":
		m.MemoryLimit.Add(1)
	}
	if m.OnRun != nil {
		m.OnRun(s)
	}
	if s.Outcome != "ok" && s.Outcome != "refused" && m.OnFailure != nil {
		if ok, suppressed := m.allowLog(s.Scriptlet, time.Now()); ok {
			m.OnFailure(s, suppressed)
		}
	}
}

// failureLogEvery is how often OnFailure runs for one scriptlet.
const failureLogEvery = time.Second

// allowLog reports whether a failure of scriptlet may be logged now and
// how many were not since the last that was.
func (m *Metrics) allowLog(scriptlet string, now time.Time) (bool, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]failureLog{}
	}
	l, seen := m.last[scriptlet]
	if seen && now.Sub(l.at) < failureLogEvery {
		l.suppressed++
		m.last[scriptlet] = l
		return false, 0
	}
	if len(m.last) > 1000 { // names come and go: forget them all now and then
		clear(m.last)
	}
	m.last[scriptlet] = failureLog{at: now}
	return true, l.suppressed
}
