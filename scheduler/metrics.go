package scheduler

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// ObserveScriptlets registers counters of scriptlet runs, read from m's
// running totals at each collection, so that a Starlark unit called once
// per candidate costs no metric work on the claim path. The returned
// function unregisters them.
func ObserveScriptlets(m *ScriptletMetrics) (unregister func() error, err error) {
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
