package placement_test

import (
	"log/slog"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest/apiserver"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/scheduler"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// build is apiserver.Build with the claimer's MaxCandidates from cfg.
func build(cfg httpapi.Config, store *ledger.Store, sched *scheduler.Policy, log *slog.Logger) (*httpapi.Server, error) {
	s, _, err := apiserver.Build(cfg, claims.Config{MaxCandidates: cfg.MaxCandidates}, store, sched, log)
	return s, err
}
