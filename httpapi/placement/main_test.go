package placement_test

import (
	"log/slog"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/scheduler"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// build builds a server as berthd does: the components over store wired
// as cmd/berthd/compose wires them (apitest.Wire), sched the
// --scheduler-policy fallback (nil for none), cfg.Authz kept if set; and
// httpapi.New serves them with the HTTP settings of cfg.
func build(cfg httpapi.Config, store *ledger.Store, sched *scheduler.Policy, log *slog.Logger) (*httpapi.Server, error) {
	c, err := apitest.Wire(store, sched, cfg.Authz, claims.Config{MaxCandidates: cfg.MaxCandidates}, log)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Authz, cfg.Limits, cfg.Cloud, cfg.Catalog, cfg.Claimer = store, c.Authz, c.Limits, c.Cloud, c.Catalog, c.Claimer
	return httpapi.New(cfg, log)
}

// newBareServer builds a server without a store, enough for the parts of the
// API that never reach the ledger.
func newBareServer(t *testing.T) *httpapi.Server {
	t.Helper()
	s, err := build(httpapi.Config{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
