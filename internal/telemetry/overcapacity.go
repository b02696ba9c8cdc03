package telemetry

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/berthd/berth/internal/telemetry/instrument"
)

// ObserveOverCapacity registers the gauge berth.inventory.over_capacity:
// how many provider classes have more allocated than their capacity
// (an inventory lowered below its usage, which Placement accepts), read
// with count at each collection. The returned function unregisters it.
func ObserveOverCapacity(count func(context.Context) (int64, error)) (unregister func() error, err error) {
	m := otel.Meter(instrument.ScopeLedger)
	over, err := m.Int64ObservableGauge("berth.inventory.over_capacity", metric.WithUnit("{class}"),
		metric.WithDescription("Provider resource classes whose usage is above their capacity (inventory lowered below usage); nothing more of them fits until usage falls. GET /capacity lists them."))
	if err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		n, err := count(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(over, n)
		return nil
	}, over)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
