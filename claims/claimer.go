package claims

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/claims/shadow"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Defaults and bounds of Config and Params.
const (
	DefaultMaxAttempts = 10
	MaxMaxAttempts     = 50
	DefaultAlternates  = 2
	// DefaultClaimCandidates is Config.ClaimCandidates when unset.
	DefaultClaimCandidates = 100
	// DefaultLeaseMax is Config.LeaseMax when unset.
	DefaultLeaseMax = 24 * time.Hour
)

// Config configures a Claimer.
type Config struct {
	// MaxAttempts is how many candidates a claim tries to write before it
	// gives up; a request may ask for fewer or, up to MaxMaxAttempts,
	// more. Default DefaultMaxAttempts.
	MaxAttempts int
	// MaxCandidates caps the candidates the engine generates per claim;
	// 0 means engine.DefaultMaxCandidates.
	MaxCandidates int
	// ClaimCandidates is the sample a claim ranks first: at most this many
	// candidates, drawn at random across root providers. Only when nothing
	// in the sample passes the filters, or every candidate of the sample
	// was tried and lost to concurrent claims, does the claim rank the
	// full set. Dry runs and claims with a target rank the full set. 0
	// means DefaultClaimCandidates; negative disables sampling.
	ClaimCandidates int
	// SubsetSize spreads concurrent claims: each write attempt picks at
	// random among the best SubsetSize untried candidates (on roots that
	// have not failed); 1 picks at random among the candidates whose score
	// ties the best one's. 0 takes them in rank order (ties in the
	// engine's order), deterministic; berthd defaults to 1. A candidate
	// the scriptlet chose (set_target) is written first whatever the
	// subset size.
	SubsetSize int
	// LeaseMax is the longest lease a claim may ask for (whole seconds);
	// 0 means DefaultLeaseMax.
	LeaseMax time.Duration
}

// PolicySource resolves a scheduling policy by name; the empty name is
// the default policy. isDefault says the policy resolved is the default
// one of that moment (the empty name, or the default's own name): only
// claims so ranked are shadowed, whatever reloads of the catalogue come
// between the resolution and the shadows. An unknown name is a
// *fault.Error of kind ErrNotFound (or ErrInvalid).
type PolicySource interface {
	Policy(ctx context.Context, name string) (pol *scheduler.Policy, isDefault bool, err error)
}

// Cloud is what a claim asks of the cloud beyond its candidates: the
// costly provider fields a policy needs (Enrich: state, placement keys,
// consumer counts, for the providers of one claim's candidates; it writes
// only those fields, and only those needs asks for, since the views
// may otherwise be shared with other claims), and what scriptlets and
// units query (scheduler.CloudData). claims/cloud reads it from the
// ledger.
type Cloud interface {
	Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.ProviderView) error
	scheduler.CloudData
}

// Deps are the components a Claimer works with.
type Deps struct {
	// Store is the ledger claims read and write (a Claimer without one
	// serves only benchmarks of its ranking).
	Store *ledger.Store
	// Policies resolves Params.Policy by name (claims/catalog). Nil:
	// every claim ranks with Policy.
	Policies PolicySource
	// Policy ranks the claims when Policies is nil; nil means
	// DefaultPolicy.
	Policy *scheduler.Policy
	// Cloud answers what policies and scriptlets ask of the cloud. Nil:
	// policies that need provider state, keys or counts see none, and
	// scriptlets that query the cloud get no data.
	Cloud Cloud
	// Limits are the projects' limits (quota.Source): every claim,
	// reschedule, move and revert is checked against them in its write's
	// transaction. Nil: none.
	Limits quota.Source
	// Logger receives the Claimer's logs; nil means slog.Default().
	Logger *slog.Logger
	// Shadows, when set, is handed every claim the default policy ranked
	// once it is decided (claims/shadow; the catalogue's runner).
	Shadows *shadow.Runner
}

// Claimer claims resources for consumers. It is the only writer of claim
// transactions, and it writes through resources.Allocations.ClaimWrite (one
// transaction per attempt, no lock held between the ranking and the
// write, none across an HTTP round trip). It is safe for concurrent use.
type Claimer struct {
	store    *ledger.Store
	policy   *scheduler.Policy
	policies PolicySource
	cloud    Cloud
	limits   quota.Source
	shadows  *shadow.Runner
	cfg      Config
	log      *slog.Logger
	// refusals are the recent claims that placed nothing (refusals.go).
	refusals refusalRing
	// preempted counts the claims that preempted and their victims
	// (preempt.go).
	preempted preemptCounts
	// reaped is when the lease reaper's last pass here ended without
	// error (unix nanoseconds; 0: none yet).
	reaped atomic.Int64
}

// cloudData is what scriptlets and units query, nil without a Cloud.
func (c *Claimer) cloudData() scheduler.CloudData {
	if c.cloud == nil {
		return nil
	}
	return c.cloud
}

// DefaultPolicy is the policy of a Claimer built without one: the
// capacity check (the engine's candidates only include what fits) and
// spreading by free capacity.
func DefaultPolicy() (*scheduler.Policy, error) {
	return scheduler.NewPolicy(scheduler.DefaultPolicyConfig(), nil, nil)
}

// New returns a Claimer over the components of d, configured by cfg.
func New(d Deps, cfg Config) (*Claimer, error) {
	policy := d.Policy
	if policy == nil {
		var err error
		if policy, err = DefaultPolicy(); err != nil {
			return nil, err
		}
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.ClaimCandidates == 0 {
		cfg.ClaimCandidates = DefaultClaimCandidates
	}
	if cfg.LeaseMax == 0 {
		cfg.LeaseMax = DefaultLeaseMax
	}
	if cfg.LeaseMax < time.Second {
		return nil, fmt.Errorf("claims: lease maximum %v: want 1s or more", cfg.LeaseMax)
	}
	if cfg.MaxAttempts < 1 || cfg.MaxAttempts > MaxMaxAttempts {
		return nil, fmt.Errorf("claims: max attempts %d: want 1 to %d", cfg.MaxAttempts, MaxMaxAttempts)
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Claimer{store: d.Store, policy: policy, policies: d.Policies, cloud: d.Cloud, limits: d.Limits, shadows: d.Shadows, cfg: cfg, log: log}, nil
}
