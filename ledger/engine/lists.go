package engine

// lists holds a list of provider indexes for each of n keys (provider
// indexes too) in two arrays without pointers: the lists one after the
// other, and where each starts. A [][]int32 of the same lists costs a
// slice header per key and an object per list, which the garbage
// collector visits on every cycle: in a cloud of 100,000 providers, a
// tree's members alone were 100,000 one-element lists. The lists are
// shared by the snapshots that share their index and must not be
// changed once built.
type lists struct {
	start []int32 // list k is at[start[k]:start[k+1]]; nil when every list is empty
	at    []int32
}

// listEntry puts val in key's list.
type listEntry struct{ key, val int32 }

// newLists returns the lists of n keys that entries fill, each list in
// the order of entries.
func newLists(n int, entries []listEntry) lists {
	if len(entries) == 0 {
		return lists{}
	}
	l := lists{start: make([]int32, n+1), at: make([]int32, len(entries))}
	for _, e := range entries {
		l.start[e.key+1]++
	}
	for k := range n {
		l.start[k+1] += l.start[k]
	}
	next := make([]int32, n)
	copy(next, l.start[:n])
	for _, e := range entries {
		l.at[next[e.key]] = e.val
		next[e.key]++
	}
	return l
}

// of returns key's list (empty for none). It may be reordered in place
// only while the lists are being built.
func (l *lists) of(key int32) []int32 {
	if l.start == nil {
		return nil
	}
	from, to := l.start[key], l.start[key+1]
	return l.at[from:to:to]
}
