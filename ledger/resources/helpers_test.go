package resources_test

import (
	"testing"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// newTestStore opens a Store over a fresh database; exec runs raw SQL on
// that database, for setting up rows owned by other parts of the ledger.
func newTestStore(t *testing.T) (store *ledger.Store, exec func(sql string, args ...any)) {
	t.Helper()
	f := newFixture(t)
	return f.Store, f.Exec
}

// claimBatches reports how many transactions s's claim writers sent and
// how many claims they held.
func claimBatches(s *ledger.Store) (batches, claims int64) {
	batches, claims, _ = s.Allocations.WriterStats()
	return batches, claims
}

// queuedClaims reports how many claims wait for s's claim writers.
func queuedClaims(s *ledger.Store) int {
	_, _, queued := s.Allocations.WriterStats()
	return queued
}

// snapshotStale reports how many providers s's snapshot has marked dirty
// (-1: everything).
func snapshotStale(s *ledger.Store) int {
	_, _, _, stale := s.Snapshots.Work()
	return stale
}

// fixture is ledgertest's Fixture, with this package's helpers as methods.
type fixture struct{ *ledgertest.Fixture }

func newFixture(t *testing.T) *fixture { return &fixture{ledgertest.NewFixture(t)} }

func newFixtureOn(t *testing.T, dbURL string) *fixture {
	return &fixture{ledgertest.NewFixtureOn(t, dbURL)}
}
