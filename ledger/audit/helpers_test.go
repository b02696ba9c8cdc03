package audit_test

import (
	"testing"

	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// fixture is ledgertest's Fixture, with this package's helpers as methods.
type fixture struct{ *ledgertest.Fixture }

func newFixture(t *testing.T) *fixture { return &fixture{ledgertest.NewFixture(t)} }

func newFixtureOn(t *testing.T, dbURL string) *fixture {
	return &fixture{ledgertest.NewFixtureOn(t, dbURL)}
}
