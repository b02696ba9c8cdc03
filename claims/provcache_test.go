package claims

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/engine/enginetest"
	"github.com/berthd/berth/scheduler"
)

// versionsOf lists the versions of every provider of snap.
func versionsOf(t *testing.T, snap *engine.Snapshot) []engine.ProviderVersion {
	t.Helper()
	c, err := snap.Candidates(context.Background(), &engine.CandidatesParams{NestedAware: true, Max: snap.Len(),
		VersionsOnly: true, Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}})
	if err != nil || len(c.Versions) != snap.Len() {
		t.Fatalf("%d versions, %v", len(c.Versions), err)
	}
	return c.Versions
}

func built(vs []engine.ProviderVersion) []*scheduler.Provider {
	out := make([]*scheduler.Provider, len(vs))
	for i, v := range vs {
		out[i] = &scheduler.Provider{UUID: v.UUID()}
	}
	return out
}

// cached counts the filled slots of pc.
func cached(pc *providerCache) int {
	n := 0
	for _, e := range pc.slots {
		if e.prov != nil {
			n++
		}
	}
	return n
}

// A full provider cache keeps what it holds when a provider it holds
// changes, and a new provider takes the slot of one other: it never
// starts over, and never holds more than its bound.
func TestProviderCacheBound(t *testing.T) {
	vs := versionsOf(t, enginetest.FlatCloud(12))
	pc := &providerCache{max: 8}
	pc.store(vs[:8], built(vs[:8]))
	if n := cached(pc); n != 8 {
		t.Fatalf("%d cached, want 8", n)
	}
	// A newer version of a cached provider (here: the same one, rebuilt)
	// replaces it in place.
	again := built(vs[3:4])
	pc.store(vs[3:4], again)
	provs := map[string]*scheduler.Provider{}
	if missing := pc.lookup(vs[:8], provs, ""); len(missing) != 0 || len(provs) != 8 || provs[vs[3].UUID()] != again[0] {
		t.Fatalf("after replacing one: missing %v, found %d, replaced %v", missing, len(provs), provs[vs[3].UUID()] == again[0])
	}
	// Two new providers take two slots (indexes 8 and 9 share those of
	// 0 and 1).
	pc.store(vs[8:10], built(vs[8:10]))
	provs = map[string]*scheduler.Provider{}
	if missing := pc.lookup(vs[:10], provs, ""); cached(pc) != 8 || !slices.Equal(missing, []int{0, 1}) || len(provs) != 8 {
		t.Fatalf("after two new: %d cached, missing %v, found %d", cached(pc), missing, len(provs))
	}
	// More new providers than the bound: the cache holds the bound.
	pc.store(vs, built(vs))
	if n := cached(pc); n != 8 || len(pc.slots) != 8 {
		t.Fatalf("after twelve: %d cached in %d slots, want 8", n, len(pc.slots))
	}
	// The zero version is never found.
	if missing := pc.lookup([]engine.ProviderVersion{{}}, map[string]*scheduler.Provider{}, ""); len(missing) != 1 {
		t.Fatalf("zero version: missing %v", missing)
	}
}

// BenchmarkProviderCacheLookup is a claim's lookup of its sample's
// hundred providers in a warm cache of n, the sample drawn at random,
// and the ranking's first read of each (its VCPU inventory): in a large
// cloud each provider is a few cache misses. "touch" names the class to
// lookup, "plain" does not.
func BenchmarkProviderCacheLookup(b *testing.B) {
	var sum int64
	for _, bc := range []struct {
		n     int
		class string
	}{{1000, ""}, {1000, "VCPU"}, {100000, ""}, {100000, "VCPU"}} {
		n, class := bc.n, bc.class
		name := fmt.Sprintf("N=%d/plain", n)
		if class != "" {
			name = fmt.Sprintf("N=%d/touch", n)
		}
		b.Run(name, func(b *testing.B) {
			snap := enginetest.FlatCloud(n)
			c, err := snap.Candidates(context.Background(), &engine.CandidatesParams{NestedAware: true, Max: n,
				VersionsOnly: true, Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}})
			if err != nil {
				b.Fatal(err)
			}
			pc := &providerCache{}
			convert(c, pc)
			sample := make([]engine.ProviderVersion, 100)
			b.ReportAllocs()
			for b.Loop() {
				for i := range sample {
					sample[i] = c.Versions[rand.IntN(n)]
				}
				provs := make(map[string]*scheduler.Provider, len(sample))
				if missing := pc.lookup(sample, provs, class); len(missing) != 0 {
					b.Fatal(missing)
				}
				// What the ranking reads first of each.
				for _, p := range provs {
					sum += p.Resources.Of("VCPU").Capacity
				}
			}
		})
	}
}
