package scheduler

import (
	"context"
	"encoding/json"
)

// PinName names the pin filter.
const PinName = "pin"

var pinUnit = Unit{
	Info: UnitInfo{Name: PinName, Kind: KindFilter,
		Description: "Keeps only candidates rooted at one provider: the parameter's, else the claim's target. " +
			"Runs on its own whenever a claim names a target.",
		Parameters: []ParamInfo{{Name: "provider", Type: "string", Default: "",
			Description: "root provider uuid or name (the claim's target applies as well)"}}},
	Cost:      costRequest,
	NewFilter: NewPin,
}

// Pin keeps the candidates whose root is Provider (uuid or name) and the
// request's Target, each when set. With neither, it keeps all.
type Pin struct {
	Provider string `json:"provider"`
}

var _ Filter = (*Pin)(nil)

// NewPin builds the filter from {"provider": "uuid or name"}.
func NewPin(params json.RawMessage) (Filter, error) {
	f := &Pin{}
	if err := decodeParams(PinName, params, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Name implements Filter.
func (*Pin) Name() string { return PinName }

// Filter implements Filter.
func (f *Pin) Filter(_ context.Context, req *Request, c *Candidate) *Status {
	for _, target := range [...]string{f.Provider, req.Target} {
		if target != "" && !c.RootIs(target) {
			return Reject("not the target " + target)
		}
	}
	return nil
}
