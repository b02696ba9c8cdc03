package admission

import (
	"context"
	"runtime"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// withMeters installs an SDK meter provider for the test and returns the
// reader that collects its metrics.
func withMeters(tb testing.TB) *sdkmetric.ManualReader {
	prev := otel.GetMeterProvider()
	r := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)))
	tb.Cleanup(func() { otel.SetMeterProvider(prev) })
	return r
}

// sumOf is the value of the monotonic sum named name, and whether it was
// exported.
func sumOf(t *testing.T, r *sdkmetric.ManualReader, name string) (int64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			s, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !s.IsMonotonic || len(s.DataPoints) != 1 {
				t.Fatalf("%s: %#v, want one point of a monotonic int64 sum", name, m.Data)
			}
			return s.DataPoints[0].Value, true
		}
	}
	return 0, false
}

// TestSlotsCountAdmitted: berth.admission.admitted is exported at 0
// before the first request and counts every request given a slot, those
// that waited for it included; queued counts those that waited.
func TestSlotsCountAdmitted(t *testing.T) {
	r := withMeters(t)
	a := NewSlots(1, 0)
	for _, name := range []string{"berth.admission.admitted", "berth.admission.queued", "berth.admission.rejected"} {
		if v, ok := sumOf(t, r, name); !ok || v != 0 {
			t.Errorf("fresh pool: %s = %d (exported %v), want 0", name, v, ok)
		}
	}
	ctx := context.Background()
	for range 3 {
		if err := a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error)
	go func() { waited <- a.Acquire(ctx) }()
	for a.waiting.Load() == 0 {
		// The second request is not in line yet.
		select {
		case err := <-waited:
			t.Fatalf("second Acquire returned %v while the slot was held", err)
		default:
			runtime.Gosched()
		}
	}
	a.Release()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	a.Release()
	if v, _ := sumOf(t, r, "berth.admission.admitted"); v != 5 {
		t.Errorf("admitted = %d, want 5", v)
	}
	if v, _ := sumOf(t, r, "berth.admission.queued"); v != 1 {
		t.Errorf("queued = %d, want 1", v)
	}
}

// BenchmarkSlots is a bounded request's admission on an SDK meter
// provider: a free slot taken and given back.
func BenchmarkSlots(b *testing.B) {
	withMeters(b)
	a := NewSlots(0, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		a.Release()
	}
}
