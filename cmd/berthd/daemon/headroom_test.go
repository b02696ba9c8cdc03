package daemon

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestHeapHeadroomPercent(t *testing.T) {
	const mib = 1 << 20
	h := HeapHeadroom{MaxPercent: 400, Headroom: 128 * mib}
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{10 * mib, 400},   // a small cloud: GOGC 400, 40 MiB of growth
		{32 * mib, 400},   // 128 MiB is exactly 400%
		{64 * mib, 200},   // 100,000 providers: the heap may reach 192 MiB, not 320
		{100 * mib, 128},  //
		{128 * mib, 100},  // from here on Go's default
		{640 * mib, 100},  // a million providers: growth as large as the live heap
		{5000 * mib, 100}, //
	} {
		if got := h.Percent(tt.live); got != tt.want {
			t.Errorf("live %d MiB: GOGC %d, want %d", tt.live/mib, got, tt.want)
		}
	}
}

// TestHeapHeadroomTunes: started, the tuner sets GOGC from the live heap
// at once and again after each collection, and stops when told to.
func TestHeapHeadroomTunes(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	// A headroom of 1 byte is GOGC 100 for any live heap; the most, 400,
	// only for an empty one: a GOGC of 100 shows the tuner ran.
	debug.SetGCPercent(250)
	stop := StartHeapHeadroom(HeapHeadroom{MaxPercent: 400, Headroom: 1})
	defer stop()
	if got := debug.SetGCPercent(250); got != 100 {
		t.Fatalf("GOGC %d after the start, want 100", got)
	}
	// After a collection the tuner sets it back.
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs on its own goroutine
		got := debug.SetGCPercent(250)
		if got == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after collections", got)
		}
	}
	stop()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	debug.SetGCPercent(250)
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetGCPercent(100); got != 250 {
		t.Errorf("GOGC %d after stop and a collection, want the 250 set by hand", got)
	}
}
