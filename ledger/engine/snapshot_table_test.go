package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPatchSharesUntouched checks that a same-shape patch of a large
// snapshot leaves the old snapshot as it was, shows the new records in the
// new one, and shares every chunk it did not touch.
func TestPatchSharesUntouched(t *testing.T) {
	const n = 3*provChunk + 17
	s := benchComputes(n)
	touched := []int32{0, provChunk + 5, n - 1}
	changed := map[int64]*ProviderRecord{}
	for _, i := range touched {
		p := *s.provs.at(i)
		p.Generation += 7
		changed[p.ID] = &p
	}
	next := s.WithProviders(changed, nil, s.Names())
	if next.idx != s.idx {
		t.Fatal("a same-shape patch rebuilt the index")
	}
	for i := int32(0); i < n; i++ {
		old, now := s.provs.at(i), next.provs.at(i)
		if slices.Contains(touched, i) {
			if now != changed[old.ID] || old.Generation+7 != now.Generation {
				t.Fatalf("provider %d: patch not applied", i)
			}
		} else if old != now {
			t.Fatalf("provider %d changed", i)
		}
	}
	shared := 0
	for c := range s.provs.chunks {
		if &s.provs.chunks[c][0] == &next.provs.chunks[c][0] {
			shared++
		}
	}
	if want := len(s.provs.chunks) - 3; shared != want {
		t.Fatalf("%d chunks shared, want %d", shared, want)
	}
	// Deleting an unknown id is no shape change.
	if again := next.WithProviders(nil, map[int64]bool{-5: true}, next.Names()); again.idx != next.idx || again.Len() != n {
		t.Fatal("deleting an unknown provider rebuilt the snapshot")
	}
	// Deleting a known one is.
	if gone := next.WithProviders(nil, map[int64]bool{s.provs.at(3).ID: true}, next.Names()); gone.Len() != n-1 {
		t.Fatalf("%d providers after a delete, want %d", gone.Len(), n-1)
	}
}

// TestSparseShuffle checks that the draw (in batches) is a permutation of the list,
// leaves the list unchanged, and reaches every position first.
func TestSparseShuffle(t *testing.T) {
	list := []int32{10, 11, 12, 13, 14, 15, 16}
	orig := slices.Clone(list)
	firsts := map[int32]bool{}
	for round := 0; round < 500; round++ {
		d := sparseShuffle{list: list}
		var got []int32
		for k := 0; k < len(list); k += 3 {
			got = d.nextN(k, min(3, len(list)-k), got)
		}
		firsts[got[0]] = true
		slices.Sort(got)
		if !slices.Equal(got, orig) {
			t.Fatalf("draw %v is not a permutation of %v", got, orig)
		}
		if len(d.moved) != 0 {
			t.Fatalf("%d positions left moved after a full draw", len(d.moved))
		}
	}
	if !slices.Equal(list, orig) {
		t.Fatalf("list changed to %v", list)
	}
	if len(firsts) != len(list) {
		t.Fatalf("only %d of %d elements were ever drawn first", len(firsts), len(list))
	}
}

// TestSparseShuffleDense requires the dense positions (a search
// scratch's) to draw what the map draws for the same random positions,
// and to be all zero again after clearDense.
func TestSparseShuffleDense(t *testing.T) {
	list := make([]int32, 50)
	for i := range list {
		list[i] = int32(100 + i)
	}
	dense := make([]int32, len(list))
	for round := 0; round < 200; round++ {
		byMap := sparseShuffle{list: list}
		byDense := sparseShuffle{list: list, dense: dense}
		n := 1 + round%len(list)
		for k := 0; k < n; k++ {
			j := k + rand.IntN(len(list)-k)
			if a, b := byMap.step(k, j), byDense.step(k, j); a != b {
				t.Fatalf("round %d, draw %d: %d from the map, %d dense", round, k, a, b)
			}
		}
		for i := n; i < len(list); i++ {
			if a, b := byMap.at(i), byDense.at(i); a != b {
				t.Fatalf("round %d, position %d: %d in the map, %d dense", round, i, a, b)
			}
		}
		byDense.clearDense()
		if slices.ContainsFunc(dense, func(v int32) bool { return v != 0 }) || len(byDense.set) != 0 {
			t.Fatalf("round %d: dense positions left after clearDense", round)
		}
	}
	// A sampled search hands its scratch back with the positions clear.
	s := benchComputes(300)
	p := CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("VCPU:2")}}}
	e, err := s.newSearch(context.Background(), &p)
	if err != nil {
		t.Fatal(err)
	}
	e.scratch = &searchScratch{}
	if found, _ := e.roundRobin(e.candidateAnchors(), 40, true); found.len() != 40 {
		t.Fatalf("%d candidates, want 40", found.len())
	}
	if sc := e.scratch; len(sc.dense) < 300 || slices.ContainsFunc(sc.dense, func(v int32) bool { return v != 0 }) {
		t.Fatalf("the scratch's %d dense positions are not all clear", len(sc.dense))
	}
}

// TestSampleLeavesIndexAlone checks that sampled and randomized searches
// do not reorder the snapshot's shared lists (roots, class index), which
// they use without copying.
func TestSampleLeavesIndexAlone(t *testing.T) {
	s := benchComputes(500)
	roots := slices.Clone(s.idx.roots)
	vcpu, _ := s.names.ClassID("VCPU")
	byClass := slices.Clone(s.idx.byClass[vcpu])
	ctx := context.Background()
	for _, p := range []CandidatesParams{
		{NestedAware: true, Max: 10, Sample: true, Groups: []RequestGroup{{Resources: res("VCPU:2")}}},
		{NestedAware: true, Max: 10, Randomize: true, Groups: []RequestGroup{{Resources: res("VCPU:2")}}},
		{NestedAware: true, Max: 10, Sample: true, Groups: []RequestGroup{{Resources: res("VCPU:2"), RequiredTraits: [][]string{{"CUSTOM_BENCH"}}}}},
	} {
		for range 20 {
			c, err := s.Candidates(ctx, &p)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Requests) != 10 {
				t.Fatalf("%d candidates, want 10", len(c.Requests))
			}
		}
	}
	if !slices.Equal(roots, s.idx.roots) || !slices.Equal(byClass, s.idx.byClass[vcpu]) {
		t.Fatal("a search reordered the snapshot's index")
	}
	// candidateAnchors relies on the index lists being strictly ascending.
	for _, ix := range []map[int32][]int32{s.idx.byClass, s.idx.byTrait, s.idx.byAgg} {
		for id, l := range ix {
			if !strictlyAscending(l) {
				t.Fatalf("index list %d is not strictly ascending", id)
			}
		}
	}
}
