package cloud_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/berthd/berth/claims/cloud"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
)

// BenchmarkViewEnrich measures what a claim pays to enrich 1,000
// providers with state, placement keys and consumer counts: one query per
// kind.
func BenchmarkViewEnrich(b *testing.B) {
	const n = 1000
	url := ledgertest.NewDB(b)
	ledgertest.Exec(b, url, fmt.Sprintf(`
		WITH ids AS (SELECT nextval('resource_providers_id_seq') AS id, i FROM generate_series(1, %d) i)
		INSERT INTO resource_providers (id, uuid, name, root_provider_id)
		SELECT id, gen_random_uuid(), 'cn' || i, id FROM ids`, n))
	ledgertest.Exec(b, url, `INSERT INTO provider_state SELECT id, 1, 1, 1, 1024, 0.5, now() FROM resource_providers`)
	ledgertest.Exec(b, url, `INSERT INTO provider_placement_keys SELECT id, 'rack', 0.5, true FROM resource_providers`)
	ledgertest.Exec(b, url, `ANALYZE`)
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: url})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	sums, err := store.Cloud.ProviderSummaries(ctx, scheduling.ProviderSummariesParams{})
	if err != nil || len(sums) != n {
		b.Fatalf("%d providers, %v", len(sums), err)
	}
	d := cloud.New(store)
	// A round trip, for scale on a shared machine.
	b.Run("ping", func(b *testing.B) {
		for range b.N {
			if err := store.Ping(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name  string
		needs scheduler.Needs
	}{
		{"state", scheduler.Needs{State: true}},
		{"keys", scheduler.Needs{Keys: true}},
		{"consumers", scheduler.Needs{Consumers: true}},
		{"all", scheduler.Needs{State: true, Keys: true, Consumers: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				provs := make(map[string]*scheduler.ProviderView, n)
				for _, s := range sums {
					provs[s.UUID] = &scheduler.ProviderView{Provider: engine.Provider{UUID: s.UUID}}
				}
				if err := d.Enrich(ctx, bc.needs, provs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
