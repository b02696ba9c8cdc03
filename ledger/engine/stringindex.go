package engine

import "hash/maphash"

// stringIndex finds a provider by one of its record's strings (its uuid,
// its name) through a map of the strings' hashes, which holds no
// pointers: a map by the strings themselves would hold one per provider,
// and the garbage collector follows each of them on every cycle. A hash
// found is checked against the record's string, so a lookup is exact;
// strings whose hashes clash (almost never, with 64 bits) are kept by
// the string in a second map. The index holds no records: its methods
// are given key, which returns the indexed string of provider i (the
// same in every snapshot that shares the index, since uuid and name are
// part of a provider's shape).
type stringIndex struct {
	seed maphash.Seed
	// byHash is the provider of each hash, or clashed.
	byHash map[uint64]int32
	clash  map[string]int32
}

// clashed marks a hash that more than one string has (see clash).
const clashed = -1

func newStringIndex(n int) stringIndex {
	return stringIndex{seed: maphash.MakeSeed(), byHash: make(map[uint64]int32, n)}
}

// add indexes provider i by s; a later provider with the same string
// replaces an earlier one.
func (x *stringIndex) add(s string, i int32, key func(int32) string) {
	h := maphash.String(x.seed, s)
	j, ok := x.byHash[h]
	switch {
	case !ok || j != clashed && key(j) == s:
		x.byHash[h] = i
	case j == clashed:
		x.clash[s] = i
	default:
		if x.clash == nil {
			x.clash = map[string]int32{}
		}
		x.clash[key(j)], x.clash[s] = j, i
		x.byHash[h] = clashed
	}
}

// find returns the provider indexed by s.
func (x *stringIndex) find(s string, key func(int32) string) (int32, bool) {
	i, ok := x.byHash[maphash.String(x.seed, s)]
	switch {
	case !ok:
		return 0, false
	case i == clashed:
		i, ok = x.clash[s]
		return i, ok
	default:
		return i, key(i) == s
	}
}
