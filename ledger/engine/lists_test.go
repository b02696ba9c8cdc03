package engine

import (
	"slices"
	"testing"
)

// newLists keeps each key's values in the order given, and a key without
// any has an empty list.
func TestLists(t *testing.T) {
	l := newLists(5, []listEntry{{3, 7}, {0, 1}, {3, 2}, {4, 9}, {0, 0}, {3, 5}})
	want := [][]int32{{1, 0}, nil, nil, {7, 2, 5}, {9}}
	for k, w := range want {
		if got := l.of(int32(k)); !slices.Equal(got, w) {
			t.Errorf("list %d: %v, want %v", k, got, w)
		}
	}
	// A list cannot grow into the next one.
	if got := append(l.of(0), 42); l.of(3)[0] != 7 || len(got) != 3 {
		t.Errorf("appending to list 0 changed list 3: %v", l.of(3))
	}
	var none lists
	if got := newLists(3, nil); len(got.of(2)) != 0 || len(none.of(0)) != 0 {
		t.Errorf("empty lists: %v %v", got.of(2), none.of(0))
	}
}
