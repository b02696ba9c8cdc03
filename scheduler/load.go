package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/berthd/berth/ledger/engine"
)

// LoadName names the load weigher.
const LoadName = "load"

var loadMetrics = []string{"load_1", "load_5", "load_15", "cpu_utilization", "memory_free_mb"}

var loadUnit = Unit{
	Info: UnitInfo{Name: LoadName, Kind: KindWeigher,
		Description: "Prefers root providers whose agent reported the least load (or the most free memory). " +
			"Providers without a report score as the worst reported one.",
		Parameters: []ParamInfo{{Name: "metric", Type: "string", Default: "load_5",
			Description: "load_1, load_5, load_15, cpu_utilization (lower is better) or memory_free_mb (higher is better)"}}},
	Needs:      Needs{State: true},
	NewWeigher: NewLoad,
}

// Load scores a candidate by its root's reported State.
type Load struct {
	Metric string `json:"metric"`
}

var (
	_ Weigher      = (*Load)(nil)
	_ BatchWeigher = (*Load)(nil)
)

// NewLoad builds the weigher from {"metric": "load_5"}.
func NewLoad(params json.RawMessage) (Weigher, error) {
	w := &Load{Metric: "load_5"}
	if err := decodeParams(LoadName, params, w); err != nil {
		return nil, err
	}
	if !slices.Contains(loadMetrics, w.Metric) {
		return nil, fmt.Errorf("%s: metric must be one of %v", LoadName, loadMetrics)
	}
	return w, nil
}

// Name implements Weigher.
func (*Load) Name() string { return LoadName }

// value is the metric of s as a score (higher is better), false without
// a state.
func (w *Load) value(s *engine.ProviderState) (float64, bool) {
	if s == nil {
		return 0, false
	}
	switch w.Metric {
	case "load_1":
		return -s.Load1, true
	case "load_15":
		return -s.Load15, true
	case "cpu_utilization":
		return -s.CPUUtilization, true
	case "memory_free_mb":
		return float64(s.MemoryFreeMB), true
	}
	return -s.Load5, true
}

func rootState(c *Candidate) *engine.ProviderState {
	if p := c.RootProvider(); p != nil {
		return p.State
	}
	return nil
}

// Weigh implements Weigher; a provider without state scores 0.
func (w *Load) Weigh(_ context.Context, _ *Request, c *Candidate) (float64, *Status) {
	v, _ := w.value(rootState(c))
	return v, nil
}

// WeighAll implements BatchWeigher: providers without state get the
// worst reported value.
func (w *Load) WeighAll(_ context.Context, _ *Request, cands []*Candidate, out []float64) *Status {
	worst, seen := 0.0, false
	missing := make([]bool, len(cands))
	for i, c := range cands {
		v, ok := w.value(rootState(c))
		if !ok {
			missing[i] = true
			continue
		}
		out[i] = v
		if !seen || v < worst {
			worst, seen = v, true
		}
	}
	for i := range cands {
		if missing[i] {
			out[i] = worst
		}
	}
	return nil
}
