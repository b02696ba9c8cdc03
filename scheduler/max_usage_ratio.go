package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/berthd/berth/ledger/engine"
)

// MaxUsageRatioName names the max_usage_ratio filter.
const MaxUsageRatioName = "max_usage_ratio"

var maxUsageRatioUnit = Unit{
	Info: UnitInfo{Name: MaxUsageRatioName, Kind: KindFilter,
		Description: "Removes candidates that would leave a provider with more than max of a class's capacity used.",
		Parameters: []ParamInfo{
			{Name: "max", Type: "number", Required: true, Description: "largest used/capacity after the claim, in (0, 1]"},
			{Name: "classes", Type: "[]string", Default: []string{}, Description: "classes checked; empty: every class allocated"},
		}},
	Cost:      costUsage,
	NewFilter: NewMaxUsageRatio,
}

// MaxUsageRatio rejects a candidate that would leave one of its providers
// with more than Max of a class's capacity used, counting what the
// candidate itself takes. It keeps headroom on providers below the
// allocation ratio Placement enforces.
type MaxUsageRatio struct {
	// Max is the largest used/capacity allowed after the claim, in (0, 1].
	Max float64 `json:"max"`
	// Classes limits the check to these resource classes; empty means
	// every class the candidate allocates.
	Classes []string `json:"classes"`
}

var _ Filter = (*MaxUsageRatio)(nil)

// NewMaxUsageRatio builds the filter from {"max": 0.8, "classes": [...]}.
func NewMaxUsageRatio(params json.RawMessage) (Filter, error) {
	f := &MaxUsageRatio{}
	if err := decodeParams(MaxUsageRatioName, params, f); err != nil {
		return nil, err
	}
	if !(f.Max > 0 && f.Max <= 1) {
		return nil, fmt.Errorf("%s: max must be in (0, 1], got %v", MaxUsageRatioName, f.Max)
	}
	return f, nil
}

// Name implements Filter.
func (f *MaxUsageRatio) Name() string { return MaxUsageRatioName }

// Filter implements Filter.
func (f *MaxUsageRatio) Filter(_ context.Context, _ *Request, c *Candidate) *Status {
	var st *Status
	c.usage(func(provider, class string, inv *engine.InventoryUsage, amount int64) {
		if st != nil || (len(f.Classes) > 0 && !slices.Contains(f.Classes, class)) {
			return
		}
		if inv.Capacity <= 0 || float64(inv.Used+amount) > f.Max*float64(inv.Capacity) {
			st = Reject(fmt.Sprintf("%s above %g of capacity", class, f.Max))
		}
	})
	return st
}
