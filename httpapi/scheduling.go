package httpapi

import (
	"context"
	"log/slog"

	"github.com/berthd/berth/claims"
)

// wireScheduling connects the claims engine to the stored scheduling data:
// policies by name (the --scheduler-policy file, when given, stands in
// for a missing stored default), the ledger's provider state, placement
// keys and consumer counts, and the cluster view scriptlets query.
func (s *Server) wireScheduling() {
	s.sources = s.cfg.Sources
	if s.sources == nil {
		s.sources = claims.NewSources(s.store, nil, s.log, 0)
	}
	if s.cfg.SchedulerPolicy != nil {
		s.sources.SetFallback(s.cfg.SchedulerPolicy)
	}
	s.data = claims.NewLedgerData(s.store)
	s.claims.SetPolicySource(s.sources)
	s.claims.SetEnricher(s.data)
	s.claims.SetClusterData(s.data)
}

// reloadSources makes this replica see a write it just committed (other
// replicas learn of it through the ledger's notification). A failure is
// logged, not returned: the write is done, and the periodic reload will
// catch up.
func (s *Server) reloadSources(ctx context.Context) {
	if err := s.sources.Reload(context.WithoutCancel(ctx)); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "reload of scheduling data failed after a write", slog.Any("error", err))
	}
}
