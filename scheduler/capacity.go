package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
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
	var buf [8]take
	return capacityStatus(c.takes(buf[:0]))
}

// capacityStatus is the capacity filter's verdict on what a candidate
// takes (its takes, in the order Candidate.takes lists them): the first
// amount that does not fit rejects it. A class the provider lacks has
// no room at all. RankDirect judges the engine's records with it.
func capacityStatus(ts []take) *Status {
	for i := range ts {
		t := &ts[i]
		class, amount := t.class, t.amount
		switch {
		case t.used+amount > t.capacity:
			return Reject(fmt.Sprintf("lacked %s %d", class, amount))
		case t.minUnit > 0 && amount < t.minUnit:
			return Reject(fmt.Sprintf("%s %d below min_unit %d", class, amount, t.minUnit))
		case t.maxUnit > 0 && amount > t.maxUnit:
			return Reject(fmt.Sprintf("%s %d above max_unit %d", class, amount, t.maxUnit))
		case t.stepSize > 1 && amount%t.stepSize != 0:
			return Reject(fmt.Sprintf("%s %d not a multiple of step_size %d", class, amount, t.stepSize))
		}
	}
	return nil
}
