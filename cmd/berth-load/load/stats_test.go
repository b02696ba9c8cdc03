package load

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func ms64(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1) // 1..100 ms
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p0", ms64(7), 0, 7 * time.Millisecond},
		{"single p50", ms64(7), 50, 7 * time.Millisecond},
		{"single p99", ms64(7), 99, 7 * time.Millisecond},
		{"odd median is the middle", ms64(1, 2, 10), 50, 2 * time.Millisecond},
		{"even median averages the middle two", ms64(1, 2, 4, 10), 50, 3 * time.Millisecond},
		{"p0 is min", ms64(1, 2, 4, 10), 0, 1 * time.Millisecond},
		{"p100 is max", ms64(1, 2, 4, 10), 100, 10 * time.Millisecond},
		{"above 100 clamps", ms64(1, 2, 4, 10), 150, 10 * time.Millisecond},
		{"below 0 clamps", ms64(1, 2, 4, 10), -5, 1 * time.Millisecond},
		// h = 99*0.95 = 94.05 -> x[94] + 0.05*(x[95]-x[94]) = 95 + 0.05 ms.
		{"p95 of 1..100", ms64(hundred...), 95, 95*time.Millisecond + 50*time.Microsecond},
		{"p99 of 1..100", ms64(hundred...), 99, 99*time.Millisecond + 10*time.Microsecond},
		{"p50 of 1..100", ms64(hundred...), 50, 50*time.Millisecond + 500*time.Microsecond},
		// Two samples: p99 interpolates almost to the max.
		{"p99 of two", ms64(100, 200), 99, 199 * time.Millisecond},
		{"ties", ms64(5, 5, 5, 5), 95, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileUnsortedPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic on an unsorted sample")
		}
	}()
	Percentile(ms64(3, 1, 2), 50)
}

func TestSummarize(t *testing.T) {
	in := ms64(30, 10, 20, 40)
	orig := slices.Clone(in)
	s := Summarize(in)
	if !slices.Equal(in, orig) {
		t.Errorf("Summarize reordered its input: %v", in)
	}
	want := Stats{
		N: 4, Min: 10 * time.Millisecond, Max: 40 * time.Millisecond,
		Median: 25 * time.Millisecond, Mean: 25 * time.Millisecond,
		P95: 38500 * time.Microsecond, P99: 39700 * time.Microsecond,
	}
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if z := Summarize(nil); z != (Stats{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", z)
	}
}

func TestStatsJSONHasMilliseconds(t *testing.T) {
	b, err := Summarize(ms64(1.5)).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"median_ms":1.5`, `"median_ns":1500000`, `"n":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
}
