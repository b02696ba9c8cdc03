package compose

import (
	"fmt"
	"log/slog"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/claims/cloud"
	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/claims/shadow"
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
	// Limits are the projects' limits every claim is checked against
	// (docs/quotas.md); nil means the limits Berth keeps in Store
	// (quota.Stored).
	Limits quota.Source
	// ShadowBudget is the share of its time the shadows' worker may spend
	// judging claims (shadow.Options.Budget); 0 means shadow.DefaultBudget.
	ShadowBudget float64
}

// Components are what the API serves.
type Components struct {
	Store   *ledger.Store
	Claimer *claims.Claimer
	Catalog *catalog.Catalog
	Cloud   *cloud.View
	Authz   *authz.Enforcer
	Limits  quota.Source
	// Logger is Config.Logger as wrapped for the components.
	Logger *slog.Logger
}

// The catalogue resolves the claims' policies; the cloud view fills their
// providers' costly fields and answers scriptlets.
var (
	_ claims.PolicySource = (*catalog.Catalog)(nil)
	_ claims.Cloud        = (*cloud.View)(nil)
)

// Build builds the components of cfg.
func Build(cfg Config) (*Components, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = slog.New(instrument.LogHandler(log.Handler()))
	c := &Components{Store: cfg.Store, Authz: cfg.Authz, Limits: cfg.Limits, Logger: log}
	if c.Limits == nil {
		c.Limits = quota.Stored{Store: cfg.Store}
	}
	if c.Authz == nil {
		var err error
		if c.Authz, err = authz.New(authz.SetAdmin, nil); err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
	}
	c.Cloud = cloud.New(cfg.Store)
	shadows := shadow.New(shadow.Options{Store: cfg.Store, Cloud: c.Cloud, Logger: log, Budget: cfg.ShadowBudget})
	c.Catalog = catalog.New(catalog.Options{Store: cfg.Store, Logger: log, Fallback: cfg.SchedulerPolicy, Shadows: shadows})
	var err error
	c.Claimer, err = claims.New(claims.Deps{Store: cfg.Store, Policies: c.Catalog, Policy: cfg.SchedulerPolicy,
		Cloud: c.Cloud, Limits: c.Limits, Logger: log, Shadows: shadows}, cfg.Claims)
	if err != nil {
		return nil, err
	}
	return c, nil
}
