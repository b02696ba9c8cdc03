package berthapi_test

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest/apiserver"
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
	return buildClaims(cfg, claims.Config{MaxCandidates: cfg.MaxCandidates}, store, sched, log)
}

// buildClaims is build with the claimer configured by cc.
func buildClaims(cfg httpapi.Config, cc claims.Config, store *ledger.Store, sched *scheduler.Policy, log *slog.Logger) (*httpapi.Server, error) {
	s, c, err := apiserver.Build(cfg, cc, store, sched, log)
	if err == nil {
		catalogs.Store(s, c.Catalog)
	}
	return s, err
}

// catalogs holds the catalogue each server build made serves.
var catalogs sync.Map

// catalogOf is the catalogue s serves (s made by build).
func catalogOf(s *httpapi.Server) *catalog.Catalog {
	c, _ := catalogs.Load(s)
	return c.(*catalog.Catalog)
}
