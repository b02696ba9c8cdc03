package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/berthd/berth/ledger/engine"
)

// CapacityName names the capacity filter.
const CapacityName = "capacity"

var capacityUnit = Unit{
	Info: UnitInfo{Name: CapacityName, Kind: KindFilter, Parameters: []ParamInfo{},
		Description: "Always on. Re-checks that every provider a candidate allocates from has the capacity " +
			"left, and that each amount respects the inventory's min_unit, max_unit and step_size."},
	Cost:      costCapacity,
	NewFilter: NewCapacity,
}

// Capacity rejects a candidate whose allocation no longer fits a
// provider's inventory: used + amount above capacity, or an amount
// outside min_unit..max_unit or not a multiple of step_size. The ledger
// generates fitting candidates; this re-check catches a stale snapshot
// and candidates built by hand. The claim's write checks again.
type Capacity struct{}

var _ Filter = (*Capacity)(nil)

// NewCapacity builds the filter; it takes no parameters.
func NewCapacity(params json.RawMessage) (Filter, error) {
	var none struct{}
	if err := decodeParams(CapacityName, params, &none); err != nil {
		return nil, err
	}
	return &Capacity{}, nil
}

// Name implements Filter.
func (*Capacity) Name() string { return CapacityName }

// Filter implements Filter. Reasons read "lacked MEMORY_MB 16384" (the
// amount asked of the provider), "VCPU 3 not a multiple of step_size 2",
// "DISK_GB 5 below min_unit 10", "DISK_GB 500 above max_unit 100".
func (*Capacity) Filter(_ context.Context, _ *Request, c *Candidate) *Status {
	var absent engine.InventoryUsage // of a class the provider lacks: nothing fits
	for _, a := range c.Allocations {
		p := c.Providers[a.ProviderUUID]
		// Classes in name order, so the reason a candidate is counted
		// under does not depend on map order.
		var buf [8]engine.ResourceAmount
		for _, ca := range sortedAmounts(buf[:0], a.Resources) {
			class, amount := ca.Class, ca.Amount
			inv := &absent
			if p != nil {
				if found := p.Resources.Find(class); found != nil {
					inv = found
				}
			}
			switch {
			case inv.Used+amount > inv.Capacity:
				return Reject(fmt.Sprintf("lacked %s %d", class, amount))
			case inv.MinUnit > 0 && amount < inv.MinUnit:
				return Reject(fmt.Sprintf("%s %d below min_unit %d", class, amount, inv.MinUnit))
			case inv.MaxUnit > 0 && amount > inv.MaxUnit:
				return Reject(fmt.Sprintf("%s %d above max_unit %d", class, amount, inv.MaxUnit))
			case inv.StepSize > 1 && amount%inv.StepSize != 0:
				return Reject(fmt.Sprintf("%s %d not a multiple of step_size %d", class, amount, inv.StepSize))
			}
		}
	}
	return nil
}
