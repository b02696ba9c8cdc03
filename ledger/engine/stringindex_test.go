package engine

import (
	"hash/maphash"
	"testing"
)

// A stringIndex finds every string it was given, and only those, also
// when hashes clash (forced here: a clash of 64-bit hashes is not found
// by chance).
func TestStringIndex(t *testing.T) {
	keys := []string{"cn0", "cn1", "cn2", "cn3", "cn1"} // cn1 again: the later one wins
	key := func(i int32) string { return keys[i] }
	x := newStringIndex(len(keys))
	x.add("cn0", 0, key)
	x.add("cn1", 1, key)
	// cn2 and then cn3 land on cn0's hash, as if theirs were the same.
	x.byHash[maphash.String(x.seed, "cn2")] = 0
	x.add("cn2", 2, key)
	x.byHash[maphash.String(x.seed, "cn3")] = clashed
	x.add("cn3", 3, key)
	x.add("cn1", 4, key)
	for _, tc := range []struct {
		s    string
		want int32
		ok   bool
	}{{"cn0", 0, true}, {"cn1", 4, true}, {"cn2", 2, true}, {"cn3", 3, true}, {"cn4", 0, false}, {"", 0, false}} {
		if i, ok := x.find(tc.s, key); ok != tc.ok || ok && i != tc.want {
			t.Errorf("find(%q) = %d, %v; want %d, %v", tc.s, i, ok, tc.want, tc.ok)
		}
	}
	if len(x.clash) != 3 {
		t.Errorf("clash map %v, want cn0's hash's two strings and cn3", x.clash)
	}
	// A string whose hash is another string's is not found by it.
	x.byHash[maphash.String(x.seed, "cn9")] = 1
	if i, ok := x.find("cn9", key); ok {
		t.Errorf("find(cn9) = %d: a hash's provider was taken without its string", i)
	}
}
