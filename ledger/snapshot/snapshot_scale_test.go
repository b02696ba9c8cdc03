package snapshot

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine/enginetest"
	"github.com/berthd/berth/ledger/internal/core"
)

// BenchmarkApplyOwnWrites is a claim batch's patch of the cached snapshot
// (applyOwnWrites): 16 claims on 16 providers of an n-provider snapshot.
// Its allocations must not grow with n.
func BenchmarkApplyOwnWrites(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("N=%d/claims=16", n), func(b *testing.B) {
			c := newCache(context.Background(), core.TxBeginner{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			c.cur, c.listening = enginetest.FlatCloud(n), true
			b.ReportAllocs()
			now := time.Now()
			k := 0
			for b.Loop() {
				ids := make([]int64, 16)
				ws := make([]*core.OwnWrite, 16)
				for j := range ws {
					id := int64((k*16+j*61)%n + 1)
					p, _ := c.cur.ProviderByID(id)
					ids[j] = id
					ws[j] = &core.OwnWrite{
						Providers: []int64{id}, Generations: []int64{p.Generation + 1}, UpdatedAt: []time.Time{now},
						AllocProviders: []int64{id, id, id}, AllocClasses: []int64{0, 1, 2}, Amounts: []int64{0, 0, 0},
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
