package placement

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
)

// heapProbe is a writer that discards the answer and, every probeEvery
// writes, collects garbage and records the live heap: what the streaming
// answer holds while it is being written, garbage excluded.
type heapProbe struct {
	n, writes int
	maxLive   uint64
}

const probeEvery = 64

func (h *heapProbe) Write(b []byte) (int, error) {
	h.n += len(b)
	h.writes++
	if h.writes%probeEvery == 1 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		h.maxLive = max(h.maxLive, m.HeapAlloc)
	}
	return len(b), nil
}

// flatSnapshot is a snapshot of n root providers, no inventories.
func flatSnapshot(n int) *engine.Snapshot {
	provs := make([]*engine.ProviderRecord, n)
	for i := range provs {
		id := int64(i + 1)
		provs[i] = &engine.ProviderRecord{ID: id, RootID: id, Generation: 1,
			UUID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Name: fmt.Sprintf("compute-%d", i)}
	}
	return engine.New(provs, engine.NewNames())
}

// listHeapGrowth writes the list of every provider of s, as GET
// /resource_providers does, and returns how far the live heap rose above
// what it was before, at its highest among the probes.
func listHeapGrowth(t *testing.T, s *engine.Snapshot) (growth uint64, size int) {
	t.Helper()
	l, err := s.ProviderList(&engine.ProviderFilter{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	h := &heapProbe{}
	if err := writeProviderList(h, wire.MaxVersion, l.All()); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(s)
	return h.maxLive - min(h.maxLive, before.HeapAlloc), h.n
}

// TestProviderListMemoryFlat checks that listing every provider holds no
// memory per provider: the live heap while the answer of 100,000
// providers is written grows no more than while that of 2,000 is (a
// buffer and the encoder's state either way). Collecting the providers
// first, as the handler did before, held about 120 bytes per provider
// plus the list's slice: some 12 MiB more at 100,000.
func TestProviderListMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a snapshot of 100,000 providers")
	}
	small, smallSize := listHeapGrowth(t, flatSnapshot(2000))
	big, bigSize := listHeapGrowth(t, flatSnapshot(100000))
	t.Logf("live heap growth while writing: %d B for 2,000 providers (%d B answer), %d B for 100,000 (%d B answer)",
		small, smallSize, big, bigSize)
	if bigSize < 100000*100 {
		t.Fatalf("answer of %d bytes for 100,000 providers", bigSize)
	}
	// 1 MiB of slack over the small list's growth: far below the 12 MiB
	// that holding 100,000 providers would take, far above the noise of
	// the runtime's own allocations.
	if big > small+1<<20 {
		t.Fatalf("the live heap grew by %d B writing 100,000 providers, %d B writing 2,000: the list is held in memory", big, small)
	}
}
