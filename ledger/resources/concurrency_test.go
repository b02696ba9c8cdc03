package resources_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// holding is what the test believes a consumer holds: provider -> class
// -> amount, and the consumer's generation (nil: no consumer).
type holding struct {
	gen    *int64
	allocs map[string]map[string]int64
}

// TestConcurrentAllocationsNeverOvercommit races many writers (PUT, POST
// with two consumers, DELETE) against a few small providers while another
// goroutine keeps changing one provider's reserved amount. Every writer
// owns its consumers and tracks what its accepted writes should have left.
// At the end, and all along, nothing is over capacity; usages are exactly
// the sum of the accepted writes (so refused writes left nothing);
// consumer and provider generations moved exactly as Placement's rules
// say; the project's usage counters (resources/quota_check.go) are exact.
func TestConcurrentAllocationsNeverOvercommit(t *testing.T) {
	f := newFixture(t)
	mem := ledgertest.Inv("MEMORY_MB", 8192)
	mem.StepSize = 256
	mem.MaxUnit = 2048
	providers := []string{
		f.Provider("a", ledgertest.Inv("VCPU", 40)),
		f.Provider("b", ledgertest.Inv("VCPU", 32), mem),
		f.Provider("c", ledgertest.Inv("DISK_GB", 250)),
	}
	classes := map[string][]string{
		providers[0]: {"VCPU"},
		providers[1]: {"VCPU", "MEMORY_MB"},
		providers[2]: {"DISK_GB"},
	}
	// Expected provider generations: 1 from the inventory set up, plus one
	// per accepted write that names the provider.
	var provGen [3]atomic.Int64
	for i := range provGen {
		provGen[i].Store(1)
	}
	provIndex := map[string]int{providers[0]: 0, providers[1]: 1, providers[2]: 2}

	const writers, rounds = 32, 15
	models := make([][2]*holding, writers)
	consumers := make([][2]string, writers)
	for w := range writers {
		consumers[w] = [2]string{uuid.NewString(), uuid.NewString()}
		models[w] = [2]*holding{{}, {}}
	}

	// randomAllocs picks 1 or 2 providers and amounts that often fit and
	// sometimes do not (or break step_size).
	randomAllocs := func(r *rand.Rand) map[string]map[string]int64 {
		out := map[string]map[string]int64{}
		for _, i := range r.Perm(3)[:1+r.IntN(2)] {
			rp := providers[i]
			out[rp] = map[string]int64{}
			for _, class := range classes[rp] {
				switch class {
				case "VCPU":
					out[rp][class] = 1 + r.Int64N(4)
				case "MEMORY_MB":
					out[rp][class] = 256 * (1 + r.Int64N(4))
					if r.IntN(10) == 0 {
						out[rp][class] += 100 // breaks step_size
					}
				case "DISK_GB":
					out[rp][class] = 5 + r.Int64N(20)
				}
			}
		}
		return out
	}
	toWrite := func(consumer string, h *holding, allocs map[string]map[string]int64) resources.ConsumerAllocations {
		w := resources.ConsumerAllocations{
			ConsumerUUID: consumer, ProjectID: "p", UserID: "u",
			CheckGeneration: true, Generation: h.gen,
		}
		for _, rp := range providers { // a fixed order
			if amounts, ok := allocs[rp]; ok {
				pr := engine.Allocation{ProviderUUID: rp}
				for _, class := range classes[rp] {
					pr.Resources = append(pr.Resources, engine.ResourceAmount{Class: class, Amount: amounts[class]})
				}
				w.Allocations = append(w.Allocations, pr)
			}
		}
		return w
	}
	// accept updates a model after an accepted write and adds the
	// providers whose generation it bumped to bumped.
	accept := func(h *holding, allocs map[string]map[string]int64, bumped map[string]bool) {
		changed := allocs
		if len(allocs) == 0 {
			changed = h.allocs // emptied: the old providers count as changed
		}
		for rp := range changed {
			bumped[rp] = true
		}
		if len(allocs) == 0 {
			*h = holding{}
			return
		}
		next := int64(1)
		if h.gen != nil {
			next = *h.gen + 1
		}
		*h = holding{gen: &next, allocs: allocs}
	}

	// bump counts one generation for each provider a write changed, once
	// per write as in Placement.
	bump := func(fn func(map[string]bool)) {
		b := map[string]bool{}
		fn(b)
		for rp := range b {
			provGen[provIndex[rp]].Add(1)
		}
	}

	var accepted, refused atomic.Int64
	refusal := func(err error) bool {
		var le *fault.Error
		if errors.As(err, &le) && errors.Is(err, fault.ErrConflict) && le.Code == "" {
			return true // over capacity, or min/max/step
		}
		t.Errorf("unexpected error: %v", err)
		return false
	}

	stop := make(chan struct{})
	var bg sync.WaitGroup
	// Keep changing provider a's reserved VCPU. As in Placement, a change
	// that leaves less than is allocated is accepted (then nothing more
	// fits there until usage falls), so provider a is left out of the
	// over-capacity invariant below; the writes to it are still checked
	// against the accepted ones at the end.
	var reservedA, invAccepted, invRefused atomic.Int64
	bg.Add(1)
	go func() {
		defer bg.Done()
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			i := ledgertest.Inv("VCPU", 40)
			i.Reserved = int64(r.IntN(30))
			_, err := f.Store.Providers.InventoryUpdate(f.Ctx, resources.InventoryParams{ProviderUUID: providers[0]}, i)
			var le *fault.Error
			switch {
			case err == nil:
				reservedA.Store(i.Reserved)
				provGen[0].Add(1)
				invAccepted.Add(1)
			case errors.As(err, &le) && le.Code == fault.CodeInventoryInUse:
				invRefused.Add(1)
			default:
				t.Errorf("inventory update: %v", err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	// Check the invariant all along, in single statements (one snapshot).
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var over int
			if err := f.DB.QueryRow(f.Ctx, `
				SELECT count(*) FROM inventories i
				WHERE i.resource_provider_id <> (SELECT id FROM resource_providers WHERE uuid = $1)
				  AND (SELECT COALESCE(sum(used), 0) FROM allocations a
				       WHERE a.resource_provider_id = i.resource_provider_id
				         AND a.resource_class_id = i.resource_class_id)
				      > (i.total - i.reserved) * i.allocation_ratio`, providers[0]).Scan(&over); err != nil {
				t.Errorf("invariant query: %v", err)
				return
			}
			if over > 0 {
				t.Errorf("%d inventories over capacity", over)
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			m, c := models[w], consumers[w]
			for range rounds {
				switch op := r.IntN(10); {
				case op < 6: // PUT one consumer
					allocs := randomAllocs(r)
					err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{toWrite(c[0], m[0], allocs)})
					if err == nil {
						bump(func(b map[string]bool) { accept(m[0], allocs, b) })
						accepted.Add(1)
					} else if refusal(err) {
						refused.Add(1)
					}
				case op < 9: // POST: move consumer 0's allocations to consumer 1
					moved := randomAllocs(r)
					ws := []resources.ConsumerAllocations{toWrite(c[0], m[0], nil), toWrite(c[1], m[1], moved)}
					err := f.Store.Allocations.AllocationsReplace(f.Ctx, ws)
					if err == nil {
						bump(func(b map[string]bool) {
							accept(m[0], nil, b)
							accept(m[1], moved, b)
						})
						accepted.Add(1)
					} else if refusal(err) {
						refused.Add(1)
					}
				default: // DELETE consumer 1
					err := f.Store.Allocations.AllocationsDelete(f.Ctx, c[1])
					switch {
					case err == nil:
						if m[1].gen == nil {
							t.Errorf("deleted consumer %s the model says has nothing", c[1])
						}
						*m[1] = holding{} // no generation bump on delete
						accepted.Add(1)
					case errors.Is(err, fault.ErrNotFound):
						if m[1].gen != nil {
							t.Errorf("consumer %s not found, model says it exists", c[1])
						}
					default:
						t.Errorf("delete: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	t.Logf("%d allocation writes accepted, %d refused; %d inventory updates accepted, %d refused",
		accepted.Load(), refused.Load(), invAccepted.Load(), invRefused.Load())
	if accepted.Load() == 0 || refused.Load() == 0 {
		t.Errorf("want both accepted and refused writes, got %d and %d", accepted.Load(), refused.Load())
	}

	// Usages are exactly the sum of what the accepted writes left.
	want := map[string]map[string]int64{}
	for _, rp := range providers {
		want[rp] = map[string]int64{}
		for _, class := range classes[rp] {
			want[rp][class] = 0
		}
	}
	for w := range writers {
		for _, h := range models[w] {
			for rp, amounts := range h.allocs {
				for class, n := range amounts {
					want[rp][class] += n
				}
			}
		}
	}
	for i, rp := range providers {
		u := f.Usages(rp)
		for class, n := range want[rp] {
			if u.Usages[class] != n {
				t.Errorf("provider %d %s: usage %d, want %d", i, class, u.Usages[class], n)
			}
		}
		if u.Generation != provGen[i].Load() {
			t.Errorf("provider %d: generation %d, want %d", i, u.Generation, provGen[i].Load())
		}
		pi, err := f.Store.Providers.InventoryList(f.Ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range pi.Inventories {
			// Provider a's capacity may have been lowered below its
			// usage (accepted, as in Placement).
			if i != 0 && float64(u.Usages[in.ResourceClass]) > in.Capacity() {
				t.Errorf("provider %d %s: usage %d over capacity %g", i, in.ResourceClass, u.Usages[in.ResourceClass], in.Capacity())
			}
		}
	}
	if pi, _ := f.Store.Providers.InventoryList(f.Ctx, providers[0]); pi.Inventories[0].Reserved != reservedA.Load() {
		t.Errorf("provider a reserved %d, want the last accepted %d", pi.Inventories[0].Reserved, reservedA.Load())
	}
	// Each consumer holds what its model says, at the generation it says.
	for w := range writers {
		for k, h := range models[w] {
			got, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, consumers[w][k])
			if err != nil {
				t.Fatal(err)
			}
			if h.gen == nil {
				if got.Consumer != nil || len(got.Allocations) > 0 {
					t.Errorf("consumer %s should not exist, got %+v", consumers[w][k], got)
				}
				continue
			}
			if got.Consumer == nil || got.Consumer.Generation != *h.gen {
				t.Errorf("consumer %s: got %+v, want generation %d", consumers[w][k], got.Consumer, *h.gen)
				continue
			}
			held := map[string]map[string]int64{}
			for _, a := range got.Allocations {
				if held[a.ProviderUUID] == nil {
					held[a.ProviderUUID] = map[string]int64{}
				}
				held[a.ProviderUUID][a.ResourceClass] = a.Used
			}
			for rp, amounts := range h.allocs {
				for class, n := range amounts {
					if held[rp][class] != n {
						t.Errorf("consumer %s holds %d %s on %s, want %d", consumers[w][k], held[rp][class], class, rp, n)
					}
				}
			}
			if len(got.Allocations) != countAllocs(h.allocs) {
				t.Errorf("consumer %s holds %d allocations, want %d", consumers[w][k], len(got.Allocations), countAllocs(h.allocs))
			}
		}
	}
	// The project's usage counters are what the allocations add up to.
	f.checkUsages()
}

func countAllocs(m map[string]map[string]int64) int {
	n := 0
	for _, a := range m {
		n += len(a)
	}
	return n
}
