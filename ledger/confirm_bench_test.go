package ledger_test

import (
	"context"
	"testing"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// BenchmarkConfirmedRead is what a read outside the snapshot costs on a
// server with no synchronous standby, where its confirmation
// (ledger/internal/core/replication.go, "Reads that outlive a
// failover") reads one setting: a statement (ProviderGet: SQLConfirm in
// the same pipeline) and a transaction (ProviderUsagesGet: SQLConfirm
// before its COMMIT). Run with -bench ConfirmedRead ./ledger/
// (docs/performance.md).
func BenchmarkConfirmedRead(b *testing.B) {
	dbURL := ledgertest.NewDB(b)
	ctx := context.Background()
	s, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	p, err := s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: "node"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("statement", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Providers.ProviderGet(ctx, p.UUID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transaction", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Providers.ProviderUsagesGet(ctx, p.UUID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
