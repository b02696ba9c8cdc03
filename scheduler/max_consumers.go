package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
)

// MaxConsumersName names the max_consumers filter.
const MaxConsumersName = "max_consumers"

var maxConsumersUnit = Unit{
	Info: UnitInfo{Name: MaxConsumersName, Kind: KindFilter,
		Description: "Removes candidates whose root provider already holds max consumers.",
		Parameters: []ParamInfo{{Name: "max", Type: "int", Required: true,
			Description: "most consumers a root provider may hold, this one included"}}},
	Cost:      costState,
	Needs:     Needs{Consumers: true},
	NewFilter: NewMaxConsumers,
}

// MaxConsumers removes candidates whose root provider has Max or more
// consumers (ProviderView.Consumers), so placing one more would exceed Max.
type MaxConsumers struct {
	Max *int `json:"max"`
}

var _ Filter = (*MaxConsumers)(nil)

// NewMaxConsumers builds the filter from {"max": n}, n >= 1.
func NewMaxConsumers(params json.RawMessage) (Filter, error) {
	f := &MaxConsumers{}
	if err := decodeParams(MaxConsumersName, params, f); err != nil {
		return nil, err
	}
	if f.Max == nil || *f.Max < 1 {
		return nil, fmt.Errorf("%s: max must be an integer of at least 1", MaxConsumersName)
	}
	return f, nil
}

// Name implements Filter.
func (*MaxConsumers) Name() string { return MaxConsumersName }

// Filter implements Filter.
func (f *MaxConsumers) Filter(_ context.Context, _ *Request, c *Candidate) *Status {
	if p := c.RootProvider(); p != nil && p.Consumers >= *f.Max {
		return Reject(fmt.Sprintf("holds %d consumers or more", *f.Max))
	}
	return nil
}
