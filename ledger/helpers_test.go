package ledger_test

import (
	"testing"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

const (
	uuidA = "aaaaaaaa-0000-4000-8000-000000000001"
	uuidB = "bbbbbbbb-0000-4000-8000-000000000002"
	uuidC = "cccccccc-0000-4000-8000-000000000003"
	uuidD = "dddddddd-0000-4000-8000-000000000004"
)

// claimWith is a claim's write of consumer's allocations of res on rp,
// storing a claim with lease seconds (0: none) in mode.
func claimWith(consumer, rp string, gen *int64, lease int64, mode claimrecords.LeaseMode, request string) resources.ClaimWriteParams {
	a := ledgertest.Alloc(consumer, rp, ledgertest.Res("VCPU", 1))
	a.CheckGeneration, a.Generation = true, gen
	return resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{a},
		State: &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(request), RootUUID: rp, LeaseSeconds: lease, Mode: mode}}
}

// fixture is ledgertest's Fixture, with this package's helpers as methods.
type fixture struct{ *ledgertest.Fixture }

func newFixture(t *testing.T) *fixture { return &fixture{ledgertest.NewFixture(t)} }

func newFixtureOn(t *testing.T, dbURL string) *fixture {
	return &fixture{ledgertest.NewFixtureOn(t, dbURL)}
}
