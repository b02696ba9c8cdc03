package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// StateFreshnessName names the state_freshness filter.
const StateFreshnessName = "state_freshness"

var stateFreshnessUnit = Unit{
	Info: UnitInfo{Name: StateFreshnessName, Kind: KindFilter,
		Description: "Removes candidates whose root provider's agent has not reported its state " +
			"(PUT /resource_providers/{uuid}/state) within max_age.",
		Parameters: []ParamInfo{
			{Name: "max_age", Type: "duration", Default: "5m", Description: "oldest report accepted"},
			{Name: "allow_missing", Type: "bool", Default: false, Description: "keep providers that never reported"},
		}},
	Cost:      costState,
	Needs:     Needs{State: true},
	NewFilter: NewStateFreshness,
}

// StateFreshness removes candidates whose root's State.ReportedAt is more
// than MaxAge ago (or missing, unless AllowMissing).
type StateFreshness struct {
	MaxAge       Duration `json:"max_age"`
	AllowMissing bool     `json:"allow_missing"`
	now          func() time.Time
}

var _ Filter = (*StateFreshness)(nil)

// NewStateFreshness builds the filter from {"max_age": "5m", "allow_missing": false}.
func NewStateFreshness(params json.RawMessage) (Filter, error) {
	f := &StateFreshness{MaxAge: Duration(5 * time.Minute), now: time.Now}
	if err := decodeParams(StateFreshnessName, params, f); err != nil {
		return nil, err
	}
	if f.MaxAge <= 0 {
		return nil, fmt.Errorf("%s: max_age must be positive", StateFreshnessName)
	}
	return f, nil
}

// Name implements Filter.
func (*StateFreshness) Name() string { return StateFreshnessName }

// Filter implements Filter.
func (f *StateFreshness) Filter(_ context.Context, _ *Request, c *Candidate) *Status {
	p := c.RootProvider()
	if p == nil || p.State == nil {
		if f.AllowMissing {
			return nil
		}
		return Reject("no state reported")
	}
	if f.now().Sub(p.State.ReportedAt) > time.Duration(f.MaxAge) {
		return Reject("state older than " + time.Duration(f.MaxAge).String())
	}
	return nil
}

// Duration is a time.Duration written as a Go duration string ("200ms").
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"5m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
