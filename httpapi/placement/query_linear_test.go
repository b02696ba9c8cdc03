package placement_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// BenchmarkRequiredUnknownTraits serves GET /allocation_candidates with n
// unknown required= traits (the answer: 400, no such trait) through the
// whole server and database: the times for 1,000, 2,000 and 3,000 values
// should grow linearly, not quadratically.
func BenchmarkRequiredUnknownTraits(b *testing.B) {
	store := ledgertest.NewStore(b)
	ledgertest.Provider(b, store, "cn1", resources.DefaultInventory("VCPU", 8))
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 2000, 3000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := "/allocation_candidates?" + placement.LongQueries(n)["required repeated"]
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("X-Auth-Token", "admin")
				req.Header.Set("OpenStack-API-Version", "placement latest")
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				if rec.Code != http.StatusBadRequest {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
