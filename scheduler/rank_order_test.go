package scheduler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRankFirstAsRankOrder requires rankFirst's k positions to be
// rankOrder's first k, in its order, for scores with many ties (equal
// scores, equal indexes, NaN) and every k from 0 past n; and keptFirst's
// too, for the increasing indexes of RankDirect's candidates.
func TestRankFirstAsRankOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 2))
	for round := range 500 {
		n := rng.IntN(40)
		scores, indexes := make([]float64, n), make([]int, n)
		for i := range n {
			scores[i] = float64(rng.IntN(4)) / 3
			if rng.IntN(20) == 0 {
				scores[i] = math.NaN()
			}
			indexes[i] = rng.IntN(max(1, n/2))
		}
		score, index := func(i int) float64 { return scores[i] }, func(i int) int { return indexes[i] }
		full := rankOrder(n, score, index)
		passed := make([]int32, n) // RankDirect's indexes: increasing
		for i := range passed {
			passed[i] = int32(2*i + rng.IntN(2))
		}
		fullPassed := rankOrder(n, score, func(i int) int { return int(passed[i]) })
		for k := 0; k <= n+1; k++ {
			first := rankFirst(n, k, score, index)
			if want := full[:min(k, n)]; !slices.Equal(first, want) {
				t.Fatalf("round %d, n %d, k %d: rankFirst %v, rankOrder's first %v (scores %v, indexes %v)",
					round, n, k, first, want, scores, indexes)
			}
			if got, want := keptFirst(nil, scores, passed, k), fullPassed[:min(k, n)]; !slices.Equal(got, want) {
				t.Fatalf("round %d, n %d, k %d: keptFirst %v, rankOrder's first %v (scores %v, passed %v)",
					round, n, k, got, want, scores, passed)
			}
		}
	}
}

// BenchmarkRankOrderFirst orders a claim's sample of 100 candidates
// (scores with ties, as spread and pack give on alike providers): all of
// them (rankOrder, "all") or the 14 a direct ranking of the default
// claim selects (rankFirst, "first").
func BenchmarkRankOrderFirst(b *testing.B) {
	rng := rand.New(rand.NewPCG(39, 1))
	scores, indexes := make([]float64, 100), make([]int, 100)
	for i := range scores {
		scores[i], indexes[i] = float64(rng.IntN(30))/29, i
	}
	score, index := func(i int) float64 { return scores[i] }, func(i int) int { return indexes[i] }
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = rankOrder(len(scores), score, index)
		}
	})
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = rankFirst(len(scores), 14, score, index)
		}
	})
}
