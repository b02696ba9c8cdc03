package daemon

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Heap headroom.
//
// berthd runs with GOGC 400 (cmd/berthd) so that the collector runs
// rarely while the live heap is small. GOGC is a share of the live heap,
// though, and the live heap grows with the cloud: at 100,000 providers it
// is about 62 MiB, GOGC 400 let the heap grow to some 310 MiB between
// collections, and berthd peaked at 331 to 352 MiB of RSS while claiming
// (docs/performance.md). The headroom tuner caps that growth in bytes:
// after every collection it sets GOGC so that the heap may grow by at
// most Headroom above the live heap, never by less than the live heap
// itself (GOGC 100, Go's default) nor by more than GOGC MaxPercent allows.
// A small cloud keeps GOGC 400; a large one collects more often, each
// collection costing the same (it marks the same live heap), for a heap
// bounded by its live size plus Headroom.

// HeapHeadroom is the tuner's setting.
type HeapHeadroom struct {
	MaxPercent int    // GOGC while the live heap is small (berthd: 400)
	Headroom   uint64 // the most the heap may grow above the live heap between collections, in bytes
}

// Percent is the GOGC for a live heap of live bytes: Headroom as a share
// of live, between 100 and MaxPercent.
func (h HeapHeadroom) Percent(live uint64) int {
	if live == 0 {
		return h.MaxPercent
	}
	p := h.Headroom * 100 / live
	return int(max(100, min(p, uint64(h.MaxPercent))))
}

// headroomTuner applies a HeapHeadroom after each collection.
type headroomTuner struct {
	h       HeapHeadroom
	stopped atomic.Bool
	sample  []metrics.Sample // the live heap, GOGC
}

// gcSentinel is garbage the moment it is made: its finalizer runs after
// the next collection, tunes, and makes the next one. It is larger than
// the allocator's tiny objects, whose finalizers may never run.
type gcSentinel struct {
	t   *headroomTuner
	pad [16]byte
}

// StartHeapHeadroom sets GOGC from h now and after every collection, for
// the life of the process, until the returned stop is called. It is for a
// process that did not have GOGC set in its environment.
func StartHeapHeadroom(h HeapHeadroom) (stop func()) {
	t := &headroomTuner{h: h, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}}
	t.tune()
	t.arm()
	return func() { t.stopped.Store(true) }
}

func (t *headroomTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{t: t}, func(s *gcSentinel) {
		if s.t.stopped.Load() {
			return
		}
		s.t.tune()
		s.t.arm()
	})
}

// tune sets GOGC for the live heap the last collection found, when it
// is not that already.
func (t *headroomTuner) tune() {
	metrics.Read(t.sample)
	var live, gogc uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	if t.sample[1].Value.Kind() == metrics.KindUint64 {
		gogc = t.sample[1].Value.Uint64()
	}
	if p := t.h.Percent(live); uint64(p) != gogc {
		debug.SetGCPercent(p)
	}
}
