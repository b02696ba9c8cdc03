package snapshot

import (
	"testing"

	"github.com/berthd/berth/ledger/engine/enginetest"
)

// TestFullReloadAbove checks when a reload of dirty providers reads every
// provider instead: above 2,000 dirty in a small cloud, above an eighth
// of the providers in a large one, so that a burst of releases in a cloud
// of 100,000 reloads the providers it changed, not all of them.
func TestFullReloadAbove(t *testing.T) {
	for _, tc := range []struct {
		providers int
		want      int
	}{
		{0, 2000}, // nothing loaded yet: a full load anyway
		{1000, 2000},
		{16000, 2000},
		{100000, 12500},
	} {
		cur := enginetest.FlatCloud(tc.providers)
		if tc.providers == 0 {
			cur = nil
		}
		if got := fullReloadAbove(cur); got != tc.want {
			t.Errorf("%d providers: full reload above %d dirty, want %d", tc.providers, got, tc.want)
		}
	}
}
