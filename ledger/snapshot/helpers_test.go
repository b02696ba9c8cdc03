package snapshot_test

import (
	"testing"

	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

const (
	uuidA = "aaaaaaaa-0000-4000-8000-000000000001"
	uuidB = "bbbbbbbb-0000-4000-8000-000000000002"
	uuidC = "cccccccc-0000-4000-8000-000000000003"
	uuidD = "dddddddd-0000-4000-8000-000000000004"
)

// fixture is ledgertest's Fixture, with this package's helpers as methods.
type fixture struct{ *ledgertest.Fixture }

func newFixture(t *testing.T) *fixture { return &fixture{ledgertest.NewFixture(t)} }

func newFixtureOn(t *testing.T, dbURL string) *fixture {
	return &fixture{ledgertest.NewFixtureOn(t, dbURL)}
}
