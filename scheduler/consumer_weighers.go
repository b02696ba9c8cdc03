package scheduler

import (
	"context"
	"encoding/json"
)

// EvenName and PowerSavingName name the weighers on consumer counts.
const (
	EvenName        = "even"
	PowerSavingName = "power_saving"
)

var evenUnit = Unit{
	Info: UnitInfo{Name: EvenName, Kind: KindWeigher, Parameters: []ParamInfo{},
		Description: "Even distribution: prefers root providers holding fewer consumers."},
	Needs:      Needs{Consumers: true},
	NewWeigher: func(p json.RawMessage) (Weigher, error) { return newConsumerWeigher(EvenName, p) },
}

var powerSavingUnit = Unit{
	Info: UnitInfo{Name: PowerSavingName, Kind: KindWeigher, Parameters: []ParamInfo{},
		Description: "Power saving: prefers busy root providers (holding consumers, and the fuller the better), " +
			"so that empty ones stay empty and can be powered off."},
	Needs:      Needs{Consumers: true},
	NewWeigher: func(p json.RawMessage) (Weigher, error) { return newConsumerWeigher(PowerSavingName, p) },
}

// ConsumerWeigher is even (raw: minus the root's consumer count) or
// power_saving (raw: 0 for a root holding no consumer, else 1 plus the
// root's utilisation before the claim, the largest used/capacity over its
// classes, in [0, 1]).
type ConsumerWeigher struct{ name string }

var _ Weigher = (*ConsumerWeigher)(nil)

func newConsumerWeigher(name string, params json.RawMessage) (Weigher, error) {
	var none struct{}
	if err := decodeParams(name, params, &none); err != nil {
		return nil, err
	}
	return &ConsumerWeigher{name: name}, nil
}

// Name implements Weigher.
func (w *ConsumerWeigher) Name() string { return w.name }

// Weigh implements Weigher.
func (w *ConsumerWeigher) Weigh(_ context.Context, _ *Request, c *Candidate) (float64, *Status) {
	p := c.RootProvider()
	if p == nil {
		return 0, nil
	}
	if w.name == EvenName {
		return -float64(p.Consumers), nil
	}
	if p.Consumers == 0 {
		return 0, nil
	}
	return 1 + Utilisation(p), nil
}

// Utilisation is p's largest used/capacity over its classes (the
// dominant resource), 0 for a provider without inventory.
func Utilisation(p *ProviderView) float64 { return utilAfter(p, Instance{}, 0) }
