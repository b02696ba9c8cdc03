package keystone

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// Observe registers, on the global meter provider, the counter
// berth.keystone.validations (tokens validated, by result: sent, the
// round trips to Keystone; invalid; unavailable, no usable answer) and
// berth.keystone.cache_hits, read from c.Stats at each collection (0
// when c is nil: a berthd that does not ask Keystone exports them at 0,
// so that its dashboards and alert rules have a series). The returned
// function unregisters them.
func Observe(c *Client) (unregister func() error, err error) {
	m := otel.Meter(instrument.ScopeHTTP)
	validations, err := m.Int64ObservableCounter("berth.keystone.validations", metric.WithUnit("{validation}"),
		metric.WithDescription("Token validations by result: sent (asked of Keystone), invalid (Keystone said not valid), unavailable (no usable answer: the request got 503)"))
	if err != nil {
		return nil, err
	}
	hits, err := m.Int64ObservableCounter("berth.keystone.cache_hits", metric.WithUnit("{lookup}"),
		metric.WithDescription("Token lookups answered by the validation cache"))
	if err != nil {
		return nil, err
	}
	result := func(v string) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("result", v))
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		var st Stats
		if c != nil {
			st = c.Stats()
		}
		o.ObserveInt64(validations, st.Validations, result("sent"))
		o.ObserveInt64(validations, st.Invalid, result("invalid"))
		o.ObserveInt64(validations, st.Unavailable, result("unavailable"))
		o.ObserveInt64(hits, st.CacheHits)
		return nil
	}, validations, hits)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
