package load

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// Stats summarises a sample of durations.
type Stats struct {
	N      int           `json:"n"`
	Min    time.Duration `json:"min_ns"`
	Median time.Duration `json:"median_ns"`
	P95    time.Duration `json:"p95_ns"`
	P99    time.Duration `json:"p99_ns"`
	Max    time.Duration `json:"max_ns"`
	Mean   time.Duration `json:"mean_ns"`
}

// Summarize computes Stats of samples without modifying it. An empty sample
// gives the zero Stats.
func Summarize(samples []time.Duration) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum float64
	for _, d := range s {
		sum += float64(d)
	}
	return Stats{
		N:      len(s),
		Min:    s[0],
		Median: Percentile(s, 50),
		P95:    Percentile(s, 95),
		P99:    Percentile(s, 99),
		Max:    s[len(s)-1],
		Mean:   time.Duration(sum / float64(len(s))),
	}
}

// Percentile returns the p-th percentile (0 <= p <= 100) of sorted, an
// ascending sample, by linear interpolation between the closest ranks (the
// "R-7" definition used by numpy and spreadsheets): rank h = (n-1)*p/100,
// value = x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]). So the
// 50th percentile of an even-sized sample is the mean of the two middle
// values, the 0th is the minimum and the 100th the maximum. It returns 0 for
// an empty sample and panics if sorted is not ascending.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if !slices.IsSorted(sorted) {
		panic("load.Percentile: sample not sorted")
	}
	p = math.Max(0, math.Min(100, p))
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := h - float64(lo)
	return sorted[lo] + time.Duration(math.Round(frac*float64(sorted[lo+1]-sorted[lo])))
}

// MarshalJSON adds millisecond fields next to the nanosecond ones, for
// readers that do not want to divide.
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	return json.Marshal(struct {
		plain
		MinMS    float64 `json:"min_ms"`
		MedianMS float64 `json:"median_ms"`
		P95MS    float64 `json:"p95_ms"`
		P99MS    float64 `json:"p99_ms"`
		MaxMS    float64 `json:"max_ms"`
		MeanMS   float64 `json:"mean_ms"`
	}{plain(s), ms(s.Min), ms(s.Median), ms(s.P95), ms(s.P99), ms(s.Max), ms(s.Mean)})
}
