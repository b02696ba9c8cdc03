package ledger

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine/enginetest"
)

// BenchmarkApplyOwnWrites is a claim batch's patch of the cached snapshot
// (applyOwnWrites): 16 claims on 16 providers of an n-provider snapshot.
// Its allocations must not grow with n.
func BenchmarkApplyOwnWrites(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("N=%d/claims=16", n), func(b *testing.B) {
			c := newSnapshotCache(context.Background(), txBeginner{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			c.cur, c.listening = enginetest.FlatCloud(n), true
			b.ReportAllocs()
			now := time.Now()
			k := 0
			for b.Loop() {
				ids := make([]int64, 16)
				ws := make([]*ownWrite, 16)
				for j := range ws {
					id := int64((k*16+j*61)%n + 1)
					p, _ := c.cur.ProviderByID(id)
					ids[j] = id
					ws[j] = &ownWrite{
						providers: []int64{id}, generations: []int64{p.Generation + 1}, updatedAt: []time.Time{now},
						allocProviders: []int64{id, id, id}, allocClasses: []int64{0, 1, 2}, amounts: []int64{0, 0, 0},
					}
				}
				k++
				c.applyOwnWrites(ids, ws)
				if len(c.dirty) != 0 {
					b.Fatalf("%d providers left dirty", len(c.dirty))
				}
			}
		})
	}
}
