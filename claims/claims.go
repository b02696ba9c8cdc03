package claims

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
	// engine's order), deterministic; berthd defaults to 1.
	SubsetSize int
}

// PolicySource resolves a scheduling policy by name; the empty name is
// the default policy. An unknown name is a *fault.Error of kind
// ErrNotFound (or ErrInvalid).
type PolicySource interface {
	Policy(ctx context.Context, name string) (*scheduler.Policy, error)
}

// Enricher fills the costly provider fields (state, placement keys,
// consumer counts) a policy needs, for the providers of one claim's
// candidates. It writes only those fields, and only those needs asks
// for: the Providers may otherwise be shared with other claims.
type Enricher interface {
	Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.Provider) error
}

// Claimer claims resources for consumers. It is the only writer of claim
// transactions, and it writes through ledger.Store.ClaimWrite (one
// transaction per attempt, no lock held between the ranking and the
// write, none across an HTTP round trip). It is safe for concurrent use.
type Claimer struct {
	store    *ledger.Store
	policy   *scheduler.Policy
	policies PolicySource
	enricher Enricher
	data     scheduler.ClusterData
	cfg      Config
	log      *slog.Logger
}

// SetClusterData installs what scriptlets query about the cluster (set
// on every scheduler.Request). Call it before the first claim.
func (c *Claimer) SetClusterData(d scheduler.ClusterData) { c.data = d }

// SetPolicySource makes the Claimer resolve Params.Policy through src
// instead of using its one policy. Call it before the first claim.
func (c *Claimer) SetPolicySource(src PolicySource) { c.policies = src }

// SetEnricher installs the source of costly provider fields. Call it
// before the first claim.
func (c *Claimer) SetEnricher(e Enricher) { c.enricher = e }

// DefaultPolicy is the policy of a Claimer built without one: the
// capacity check (the engine's candidates only include what fits) and
// spreading by free capacity.
func DefaultPolicy() (*scheduler.Policy, error) {
	return scheduler.NewPolicy(scheduler.DefaultPolicyConfig(), nil, nil, scheduler.ScriptletLimits{})
}

// New returns a Claimer over store ranking with policy (nil:
// DefaultPolicy) until SetPolicySource installs a source of named
// policies.
func New(store *ledger.Store, policy *scheduler.Policy, cfg Config, log *slog.Logger) (*Claimer, error) {
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
	if cfg.MaxAttempts < 1 || cfg.MaxAttempts > MaxMaxAttempts {
		return nil, fmt.Errorf("claims: max attempts %d: want 1 to %d", cfg.MaxAttempts, MaxMaxAttempts)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Claimer{store: store, policy: policy, cfg: cfg, log: log}, nil
}

// Claim places p: it ranks the candidates and writes the best one's
// allocations, moving on to the next ranked candidate on another root when
// the write finds the capacity gone or a provider deleted, at most
// MaxAttempts times. It returns a *NotPlacedError when nothing was
// placed for an expected reason; a consumer generation conflict is
// returned as the ledger's ErrConflict (placement.concurrent_update) at
// once, since another candidate cannot cure it. Nothing is written unless
// the claim succeeds, and nothing at all for a dry run.
//
// It reads the ledger's snapshot once (resolveParams) and asks the engine
// every question of it: the excluded and target providers, the candidates
// (of the sample and, if nothing in the sample passes, of the full set)
// and why roots have none. The ledger is then asked only to write, and,
// for a sample whose every candidate lost to concurrent claims, for a
// fresh snapshot that has the writes that won.
func (c *Claimer) Claim(ctx context.Context, p Params) (_ *Result, err error) {
	ctx, tr := startClaim(ctx, p.ConsumerUUID, p.DryRun)
	defer func() { tr.end(err) }()
	sample := c.cfg.ClaimCandidates
	if p.DryRun || p.Target != "" {
		sample = 0
	}
	r, err := c.resolveParams(ctx, &p)
	if err != nil {
		return nil, err
	}
	s, err := c.selectCandidates(ctx, &p, r, sample)
	if err != nil {
		return nil, err
	}
	if s.sampled && (s.rankErr != nil || len(s.ranking.Ranked) == 0) {
		// Nothing in the sample: the full set decides, and its steps
		// are the ones the answer counts.
		if s, err = c.selectCandidates(ctx, &p, r, 0); err != nil {
			return nil, err
		}
	}
	if np := c.notPlaced(ctx, &p, r, s); np != nil {
		return nil, np
	}
	if p.DryRun {
		c.explainCapacity(ctx, &p, r, s.steps)
		return c.result(&p, s, 0, 0, nil), nil
	}

	maxAttempts := c.cfg.MaxAttempts
	if p.MaxAttempts > 0 {
		maxAttempts = min(p.MaxAttempts, MaxMaxAttempts)
	}
	w := writer{c: c, p: &p, tr: tr, max: maxAttempts}
	if res, err := w.run(ctx, s); res != nil || err != nil {
		return res, err
	}
	if s.sampled {
		// Every candidate of the sample lost to concurrent claims, or the
		// attempts ran out: the full set, for its true steps and, with
		// attempts left, for more candidates (not on the roots that
		// failed), from a snapshot that has the writes that won.
		if r.snap, err = c.snapshot(ctx, &p); err != nil {
			return nil, err
		}
		if s, err = c.selectCandidates(ctx, &p, r, 0); err != nil {
			return nil, err
		}
		if np := c.notPlaced(ctx, &p, r, s); np != nil {
			return nil, np
		}
		if res, err := w.run(ctx, s); res != nil || err != nil {
			return res, err
		}
	}
	return nil, &NotPlacedError{Reason: ConflictsExhausted, Roots: s.roots, Steps: s.steps, Attempts: w.attempts}
}

// Explain ranks the candidates for p as Claim would, without writing.
func (c *Claimer) Explain(ctx context.Context, p Params) (*Explanation, error) {
	r, err := c.resolveParams(ctx, &p)
	if err != nil {
		return nil, err
	}
	s, err := c.selectCandidates(ctx, &p, r, 0)
	if err != nil {
		return nil, err
	}
	var refused *scheduler.RefusedError
	if errors.As(s.rankErr, &refused) {
		return &Explanation{Ranking: s.ranking, Refusal: refused.Reason}, nil
	}
	if s.rankErr != nil {
		return nil, s.rankErr
	}
	return &Explanation{Ranking: s.ranking}, nil
}
