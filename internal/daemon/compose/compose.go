// Package compose builds the components berthd serves over one ledger
// store: the claimer (claims.Claimer), the compiled scheduling policies,
// scriptlets and config (claims.Sources), the cluster data scheduler units
// and scriptlets query (claims.LedgerData) and the policy enforcer
// (authz.Enforcer). It is berthd's composition root: internal/daemon calls
// Build with what its configuration says and hands the components to
// httpapi.New; tests that need an API server call Build too. It starts
// nothing: the caller runs Sources (Components.Sources.Run) when it wants
// other replicas' changes.
package compose

import (
	"fmt"
	"log/slog"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Config says how to build the components.
type Config struct {
	// Store is the ledger every component reads and writes.
	Store *ledger.Store
	// Logger receives the components' logs; nil means slog.Default(). It
	// is wrapped so that lines logged with a request's context carry its
	// request id.
	Logger *slog.Logger
	// SchedulerPolicy (berthd's --scheduler-policy file) ranks claims
	// when no stored scheduling policy is the default; nil means the
	// built-in policy (claims.DefaultPolicy).
	SchedulerPolicy *scheduler.Policy
	// Claims configures the claimer: attempts, candidate cap, sample and
	// subset sizes.
	Claims claims.Config
	// Authz decides who may do what; nil means the authz.SetAdmin rules
	// without overrides (every operation needs the admin role).
	Authz *authz.Enforcer
}

// Components are what the API serves.
type Components struct {
	Store   *ledger.Store
	Claimer *claims.Claimer
	Sources *claims.Sources
	Cluster *claims.LedgerData
	Authz   *authz.Enforcer
	// Logger is Config.Logger as wrapped for the components.
	Logger *slog.Logger
}

// Build builds the components of cfg. The claimer resolves a claim's
// policy by name through Sources, asks Cluster for the provider state,
// placement keys and consumer counts a policy needs, and gives scriptlets
// Cluster as their view of the cluster.
func Build(cfg Config) (*Components, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = slog.New(instrument.LogHandler(log.Handler()))
	c := &Components{Store: cfg.Store, Authz: cfg.Authz, Logger: log}
	if c.Authz == nil {
		var err error
		if c.Authz, err = authz.New(authz.SetAdmin, nil); err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
	}
	c.Sources = claims.NewSources(cfg.Store, nil, log, 0)
	if cfg.SchedulerPolicy != nil {
		c.Sources.SetFallback(cfg.SchedulerPolicy)
	}
	c.Cluster = claims.NewLedgerData(cfg.Store)
	var err error
	if c.Claimer, err = claims.New(cfg.Store, cfg.SchedulerPolicy, cfg.Claims, log); err != nil {
		return nil, err
	}
	c.Claimer.SetPolicySource(c.Sources)
	c.Claimer.SetEnricher(c.Cluster)
	c.Claimer.SetClusterData(c.Cluster)
	return c, nil
}
