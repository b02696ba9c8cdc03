// Package apiserver builds the API server the external tests of the API
// packages (httpapi/placement, httpapi/berthapi, httpapi/wire,
// httpapi/admission) talk to: the components over a store wired as
// cmd/berthd/compose wires them (apitest.Wire), served by httpapi.New.
// It is test code, as apitest is.
package apiserver

import (
	"log/slog"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Build builds a server as berthd does: the components over store (nil:
// none, for the parts of the API that never reach the ledger) wired with
// sched as the --scheduler-policy fallback (nil for none), cfg.Authz kept
// if set, the claimer configured by cc; httpapi.New serves them with the
// HTTP settings of cfg. It returns the components too, for a test that
// reaches one (the catalogue) directly.
func Build(cfg httpapi.Config, cc claims.Config, store *ledger.Store, sched *scheduler.Policy, log *slog.Logger) (*httpapi.Server, apitest.Components, error) {
	c, err := apitest.Wire(store, sched, cfg.Authz, cc, log)
	if err != nil {
		return nil, c, err
	}
	cfg.Store, cfg.Authz, cfg.Limits, cfg.Cloud, cfg.Catalog, cfg.Claimer = store, c.Authz, c.Limits, c.Cloud, c.Catalog, c.Claimer
	s, err := httpapi.New(cfg, log)
	return s, c, err
}

// Bare builds a server without a store and with the default settings.
func Bare(t testing.TB) *httpapi.Server {
	t.Helper()
	s, _, err := Build(httpapi.Config{}, claims.Config{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
