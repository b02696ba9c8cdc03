package claims

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Defaults and bounds of Config.
const (
	DefaultMaxAttempts = 10
	MaxMaxAttempts     = 50
)

// Config configures a Claimer.
type Config struct {
	// MaxAttempts is how many candidates a claim tries to write before it
	// gives up; a request may ask for fewer. Default DefaultMaxAttempts.
	MaxAttempts int
	// MaxCandidates caps the candidates the ledger generates per claim;
	// 0 means ledger.DefaultMaxCandidates.
	MaxCandidates int
}

// PolicySource resolves a scheduling policy by name; the empty name is
// the default policy. An unknown name is a *ledger.Error of kind
// ErrNotFound (or ErrInvalid).
type PolicySource interface {
	Policy(ctx context.Context, name string) (*scheduler.Policy, error)
}

// StaticPolicy is a PolicySource of one policy, whatever the name asked.
type StaticPolicy struct{ P *scheduler.Policy }

// Policy implements PolicySource.
func (s StaticPolicy) Policy(context.Context, string) (*scheduler.Policy, error) { return s.P, nil }

// Enricher fills the costly provider fields (state, placement keys,
// consumer counts) a policy needs, for the providers of one claim's
// candidates.
type Enricher interface {
	Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.Provider) error
}

// Enrichers runs several Enrichers in turn.
type Enrichers []Enricher

// Enrich implements Enricher.
func (es Enrichers) Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.Provider) error {
	for _, e := range es {
		if err := e.Enrich(ctx, needs, provs); err != nil {
			return err
		}
	}
	return nil
}

// Claimer claims resources for consumers. It is safe for concurrent use.
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

// New returns a Claimer over store ranking with policy (nil: the
// scheduler's default policy, capacity then spread by free capacity).
func New(store *ledger.Store, policy *scheduler.Policy, cfg Config, log *slog.Logger) (*Claimer, error) {
	if policy == nil {
		var err error
		if policy, err = scheduler.NewPolicy(scheduler.DefaultPolicyConfig(), nil, nil, scheduler.ScriptletLimits{}); err != nil {
			return nil, err
		}
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxAttempts < 1 || cfg.MaxAttempts > MaxMaxAttempts {
		return nil, fmt.Errorf("claims: max attempts %d: want 1 to %d", cfg.MaxAttempts, MaxMaxAttempts)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Claimer{store: store, policy: policy, cfg: cfg, log: log}, nil
}

// Params is one claim.
type Params struct {
	ConsumerUUID string
	// ProjectID and UserID own the consumer; ConsumerType, when set,
	// becomes its type.
	ProjectID    string
	UserID       string
	ConsumerType string
	// ConsumerGeneration is the generation of an existing consumer whose
	// allocations the claim replaces, or nil for a consumer that must not
	// exist yet (microversion 1.28 semantics).
	ConsumerGeneration *int64
	// Candidates is the request, as for GET /allocation_candidates. Limit
	// is ignored: every candidate (up to the configured cap) is ranked.
	Candidates ledger.CandidatesParams
	// Avoid lists provider uuids not to place on (nor in trees rooted at
	// them).
	Avoid []string
	// MaxAttempts bounds the writes tried; 0 or more than the configured
	// bound means the configured bound.
	MaxAttempts int
	// With are other consumers' allocations written in the same
	// transaction as the claim (Move: the migration consumer holding the
	// source), with their own generation checks.
	With []ledger.ConsumerAllocations

	// Name is the instance's name, handed to filters and scriptlets.
	Name string
	// Reason is why the consumer is placed: new, evacuation, relocation
	// or reschedule.
	Reason string
	// Properties is free-form, handed to filters and scriptlets.
	Properties map[string]any
	// Target pins the claim to one root provider (uuid).
	Target string
	// Policy names the scheduling policy; empty means the default.
	Policy string
	// Keys are the claim's placement keys.
	Keys []scheduler.KeyRequest
	// Alternates is how many further ranked candidates to return
	// unclaimed.
	Alternates int
	// PolicyOverride, when set, ranks with this policy instead of the
	// one Policy names (testing a scriptlet against live data).
	PolicyOverride *scheduler.Policy
}

// Result is a successful claim.
type Result struct {
	ConsumerUUID string
	// Allocations are what was written, provider by provider.
	Allocations []ledger.ProviderResources
	// Mappings are request group suffix -> providers.
	Mappings map[string][]string
	// Root is the root provider of the chosen candidate.
	Root  string
	Score float64
	// Attempts lists every write tried, the successful one last.
	Attempts []Attempt
	// Considered and Rejections describe the ranking.
	Considered int
	Rejections []scheduler.FilterCount
	// With are the other consumers written along (Params.With).
	With []ledger.ConsumerAllocations
}

// Attempt is one write tried.
type Attempt struct {
	Root      string
	Providers []string
	// Error is why the write was refused; empty for the one that won.
	Error string
}

// Reason says why a claim placed nothing.
type Reason string

// Reasons of a NotPlacedError.
const (
	NoCandidates       Reason = "no_candidates"
	AllFiltered        Reason = "all_filtered"
	Refused            Reason = "refused"
	ConflictsExhausted Reason = "conflicts_exhausted"
)

// NotPlacedError is a claim that placed nothing, and why. It is an
// expected outcome (409 over HTTP), not a failure. Nothing was written.
type NotPlacedError struct {
	Reason     Reason
	Considered int
	Rejections []scheduler.FilterCount
	Attempts   []Attempt
	// Refusal is the scriptlet's reason when Reason is Refused.
	Refusal string
}

func (e *NotPlacedError) Error() string {
	switch e.Reason {
	case NoCandidates:
		return "No allocation candidates match the request."
	case AllFiltered:
		return fmt.Sprintf("All %d allocation candidates were rejected by the scheduler policy: %s.",
			e.Considered, FormatRejections(e.Rejections))
	case Refused:
		return "The scheduler scriptlet refused the request: " + e.Refusal
	}
	var b strings.Builder
	fmt.Fprintf(&b, "No claim succeeded after %d attempts on %d allocation candidates", len(e.Attempts), e.Considered)
	if s := FormatRejections(e.Rejections); s != "" {
		fmt.Fprintf(&b, " (rejected by the policy: %s)", s)
	}
	b.WriteString(":")
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, " [%s: %s]", a.Root, a.Error)
	}
	return b.String()
}

// FormatRejections renders rejection counts as
// "max_usage_ratio rejected 3 (VCPU above 0.9 of capacity: 3)", omitting
// filters that rejected nothing.
func FormatRejections(counts []scheduler.FilterCount) string {
	var parts []string
	for _, fc := range counts {
		if fc.Removed == 0 {
			continue
		}
		reasons := make([]string, 0, len(fc.Reasons))
		for r := range fc.Reasons {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for i, r := range reasons {
			reasons[i] = fmt.Sprintf("%s: %d", r, fc.Reasons[r])
		}
		parts = append(parts, fmt.Sprintf("%s rejected %d (%s)", fc.Unit, fc.Removed, strings.Join(reasons, ", ")))
	}
	return strings.Join(parts, "; ")
}

// Explanation is a dry run: the ranking a claim would try, nothing written.
type Explanation struct {
	Ranking *scheduler.Ranking
	// Refusal is the scriptlet's refusal, if it refused.
	Refusal string
}

// Explain ranks the candidates for p as Claim would, without writing.
func (c *Claimer) Explain(ctx context.Context, p Params) (*Explanation, error) {
	r, err := c.rank(ctx, &p)
	var refused *scheduler.RefusedError
	if errors.As(err, &refused) {
		return &Explanation{Ranking: r, Refusal: refused.Reason}, nil
	}
	if err != nil {
		return nil, err
	}
	return &Explanation{Ranking: r}, nil
}

// rank gets the candidates and ranks them.
func (c *Claimer) rank(ctx context.Context, p *Params) (*scheduler.Ranking, error) {
	cp := p.Candidates
	cp.Limit = 0
	cp.Max = c.cfg.MaxCandidates
	start := time.Now()
	cands, err := c.store.AllocationCandidates(ctx, cp)
	if err != nil {
		return nil, err
	}
	candidatesSpan(ctx, start, len(cands.Requests))
	req := &scheduler.Request{
		ConsumerUUID: p.ConsumerUUID,
		ProjectID:    p.ProjectID,
		UserID:       p.UserID,
		ConsumerType: p.ConsumerType,
		Resources:    map[string]int64{},
		Avoid:        p.Avoid,
	}
	for _, g := range cp.Groups {
		for _, r := range g.Resources {
			req.Resources[r.Class] += r.Amount
		}
	}
	// Until the claims rewrite lands: the stored policies (PolicySource),
	// a test's override, the request's fields scriptlets read.
	policy := c.policy
	switch {
	case p.PolicyOverride != nil:
		policy = p.PolicyOverride
	case c.policies != nil:
		if policy, err = c.policies.Policy(ctx, p.Policy); err != nil {
			return nil, err
		}
	}
	req.Name, req.Reason, req.Properties, req.Keys, req.Target, req.Data = p.Name, p.Reason, p.Properties, p.Keys, p.Target, c.data
	sc := Convert(cands)
	if c.enricher != nil && len(sc) > 0 {
		if err := c.enricher.Enrich(ctx, policy.NeedsFor(req), sc[0].Providers); err != nil {
			return nil, err
		}
	}
	return policy.Rank(ctx, req, sc)
}

// Claim places p: it ranks the candidates and writes the best one's
// allocations, moving on to the next ranked candidate on another root when
// the write finds the capacity gone or a provider deleted. It returns a
// *NotPlacedError when nothing was placed for an expected reason; a
// consumer generation conflict is returned as the ledger's ErrConflict
// (placement.concurrent_update) at once, since another candidate cannot
// cure it. Nothing is written unless the claim succeeds.
func (c *Claimer) Claim(ctx context.Context, p Params) (_ *Result, err error) {
	ctx, tr := startClaim(ctx, p.ConsumerUUID, false)
	defer func() { tr.end(err) }()
	ranking, err := c.rank(ctx, &p)
	var refused *scheduler.RefusedError
	if errors.As(err, &refused) {
		return nil, &NotPlacedError{Reason: Refused, Considered: ranking.Considered,
			Rejections: ranking.Rejections, Refusal: refused.Reason}
	}
	if err != nil {
		return nil, err
	}
	np := &NotPlacedError{Considered: ranking.Considered, Rejections: ranking.Rejections}
	switch {
	case ranking.Considered == 0:
		np.Reason = NoCandidates
		return nil, np
	case len(ranking.Ranked) == 0 && ranking.Chosen:
		np.Reason, np.Refusal = Refused, "choose returned no candidates"
		return nil, np
	case len(ranking.Ranked) == 0:
		np.Reason = AllFiltered
		return nil, np
	}

	maxAttempts := c.cfg.MaxAttempts
	if p.MaxAttempts > 0 && p.MaxAttempts < maxAttempts {
		maxAttempts = p.MaxAttempts
	}
	var attempts []Attempt
	var failedRoots []string
	for _, s := range ranking.Ranked {
		if len(attempts) >= maxAttempts {
			break
		}
		cand := s.Cand
		// A root whose write just failed is hot or stale in the snapshot;
		// its other candidates are likely to fail too. (Only the anchor
		// root counts: a sharing provider is common to many candidates.)
		if slices.Contains(failedRoots, cand.Root()) {
			continue
		}
		allocs := toLedger(cand)
		a := Attempt{Root: cand.Root()}
		for _, pr := range allocs {
			a.Providers = append(a.Providers, pr.ProviderUUID)
		}
		write := append([]ledger.ConsumerAllocations{{
			ConsumerUUID:    p.ConsumerUUID,
			ProjectID:       p.ProjectID,
			UserID:          p.UserID,
			ConsumerType:    p.ConsumerType,
			CheckGeneration: true,
			Generation:      p.ConsumerGeneration,
			Allocations:     allocs,
		}}, p.With...)
		start := time.Now()
		err := c.store.AllocationsReplace(ctx, write)
		tr.write(start, cand.Root(), err)
		if err == nil {
			attempts = append(attempts, a)
			return &Result{
				ConsumerUUID: p.ConsumerUUID,
				Allocations:  allocs,
				Mappings:     cand.Mappings,
				Root:         cand.Root(),
				Score:        s.Score,
				Attempts:     attempts,
				Considered:   ranking.Considered,
				Rejections:   ranking.Rejections,
				With:         p.With,
			}, nil
		}
		if !retryable(err) {
			return nil, err
		}
		c.log.DebugContext(ctx, "claim attempt conflicted", "consumer", p.ConsumerUUID, "root", a.Root, "error", err)
		a.Error = err.Error()
		attempts = append(attempts, a)
		failedRoots = append(failedRoots, cand.Root())
	}
	np.Reason = ConflictsExhausted
	np.Attempts = attempts
	return nil, np
}

// retryable reports whether a refused write may succeed on another
// candidate: capacity gone (ErrConflict other than a consumer generation
// conflict) or a provider that no longer exists (ErrInvalid).
func retryable(err error) bool {
	var le *ledger.Error
	if !errors.As(err, &le) {
		return false
	}
	switch {
	case errors.Is(le, ledger.ErrConflict):
		return le.Code != ledger.CodeConcurrentUpdate
	case errors.Is(le, ledger.ErrInvalid):
		return true
	}
	return false
}

// toLedger is a candidate's allocations as a ledger write, classes in
// name order.
func toLedger(c *scheduler.Candidate) []ledger.ProviderResources {
	out := make([]ledger.ProviderResources, 0, len(c.Allocations))
	for _, a := range c.Allocations {
		pr := ledger.ProviderResources{ProviderUUID: a.ProviderUUID}
		for class, amount := range a.Resources {
			pr.Resources = append(pr.Resources, ledger.Resource{Class: class, Amount: amount})
		}
		slices.SortFunc(pr.Resources, func(x, y ledger.Resource) int { return strings.Compare(x.Class, y.Class) })
		out = append(out, pr)
	}
	return out
}

// sharesViaAggregate marks a provider that shares its inventory with the
// trees of its aggregates.
const sharesViaAggregate = "MISC_SHARES_VIA_AGGREGATE"

// Convert turns a ledger answer into the scheduler's view. Provider
// summaries are shared between the candidates. A candidate's Roots list
// the roots of its own tree(s) before those of sharing providers, so
// Root() is the tree the candidate is anchored on.
func Convert(c *ledger.Candidates) []*scheduler.Candidate {
	provs := make(map[string]*scheduler.Provider, len(c.Summaries))
	for _, s := range c.Summaries {
		p := &scheduler.Provider{UUID: s.UUID, Name: s.Name, ParentUUID: s.ParentUUID, RootUUID: s.RootUUID,
			Traits: s.Traits, Aggregates: s.Aggregates, Resources: make(map[string]scheduler.Inventory, len(s.Resources))}
		for _, r := range s.Resources {
			p.Resources[r.Class] = scheduler.Inventory{Capacity: r.Capacity, Used: r.Used,
				Total: r.Total, Reserved: r.Reserved, AllocationRatio: r.AllocationRatio,
				MinUnit: r.MinUnit, MaxUnit: r.MaxUnit, StepSize: r.StepSize}
		}
		provs[s.UUID] = p
	}
	out := make([]*scheduler.Candidate, len(c.Requests))
	for i, ar := range c.Requests {
		sc := &scheduler.Candidate{Index: i, Providers: provs, Mappings: map[string][]string{}}
		var shared []string
		for _, a := range ar.Allocations {
			alloc := scheduler.Allocation{ProviderUUID: a.ProviderUUID, Resources: make(map[string]int64, len(a.Resources))}
			for _, r := range a.Resources {
				alloc.Resources[r.Class] += r.Amount
			}
			sc.Allocations = append(sc.Allocations, alloc)
			root, sharing := a.ProviderUUID, false
			if p := provs[a.ProviderUUID]; p != nil {
				if p.RootUUID != "" {
					root = p.RootUUID
				}
				sharing = slices.Contains(p.Traits, sharesViaAggregate)
			}
			switch {
			case slices.Contains(sc.Roots, root) || slices.Contains(shared, root):
			case sharing:
				shared = append(shared, root)
			default:
				sc.Roots = append(sc.Roots, root)
			}
		}
		sc.Roots = append(sc.Roots, shared...)
		for _, m := range ar.Mappings {
			sc.Mappings[m.Suffix] = m.ProviderUUIDs
		}
		out[i] = sc
	}
	return out
}

// Reschedule moves an existing consumer's allocations to other providers:
// it claims p with the consumer's current root providers added to
// p.Avoid, replacing the old allocations in the same transaction as the
// new ones are written (so a reschedule that places nothing leaves the
// consumer where it was). p.ConsumerGeneration, when nil, is taken from
// the consumer as read now; empty ProjectID, UserID and ConsumerType keep
// the consumer's. A consumer without allocations is ErrNotFound.
func (c *Claimer) Reschedule(ctx context.Context, p Params) (*Result, error) {
	if _, err := c.prepareMove(ctx, &p); err != nil {
		return nil, err
	}
	return c.Claim(ctx, p)
}

// MigrationConsumerType is the consumer type Move gives the consumer that
// holds the source allocations.
const MigrationConsumerType = "MIGRATION"

// Move is a migration claim, as Nova does it with POST /allocations: in
// one transaction the migration consumer (a new consumer, of type
// MIGRATION, owned like the instance) takes over the instance's current
// allocations on the source, and the instance gets the destination's.
// The destination is chosen as for Reschedule (not on the instance's
// current roots). Nothing changes if no destination fits. The caller
// later deletes the migration consumer (confirm) or swaps back (revert)
// with the Placement API.
func (c *Claimer) Move(ctx context.Context, p Params, migrationUUID string) (*Result, error) {
	held, err := c.prepareMove(ctx, &p)
	if err != nil {
		return nil, err
	}
	p.With = append(p.With, ledger.ConsumerAllocations{
		ConsumerUUID:    migrationUUID,
		ProjectID:       p.ProjectID,
		UserID:          p.UserID,
		ConsumerType:    MigrationConsumerType,
		CheckGeneration: true, // must be new
		Allocations:     held,
	})
	return c.Claim(ctx, p)
}

// prepareMove reads the consumer of p, fills p's defaults from it, adds
// its current roots to p.Avoid and returns what it holds now.
func (c *Claimer) prepareMove(ctx context.Context, p *Params) ([]ledger.ProviderResources, error) {
	cur, err := c.store.AllocationsByConsumer(ctx, p.ConsumerUUID)
	if err != nil {
		return nil, err
	}
	if cur.Consumer == nil || len(cur.Allocations) == 0 {
		return nil, &ledger.Error{Kind: ledger.ErrNotFound, Msg: fmt.Sprintf("No allocations for consumer '%s'", p.ConsumerUUID)}
	}
	if p.ConsumerGeneration == nil {
		gen := cur.Consumer.Generation
		p.ConsumerGeneration = &gen
	}
	if p.ProjectID == "" {
		p.ProjectID = cur.Consumer.ProjectID
	}
	if p.UserID == "" {
		p.UserID = cur.Consumer.UserID
	}
	if p.ConsumerType == "" && cur.Consumer.Type != ledger.UnknownConsumerType {
		p.ConsumerType = cur.Consumer.Type
	}
	p.Avoid = slices.Clone(p.Avoid)
	var held []ledger.ProviderResources
	for _, a := range cur.Allocations {
		if n := len(held); n == 0 || held[n-1].ProviderUUID != a.ProviderUUID {
			held = append(held, ledger.ProviderResources{ProviderUUID: a.ProviderUUID})
			prov, err := c.store.ProviderGet(ctx, a.ProviderUUID)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(p.Avoid, prov.RootUUID) && !c.sharing(ctx, prov) {
				p.Avoid = append(p.Avoid, prov.RootUUID)
			}
		}
		h := &held[len(held)-1]
		h.Resources = append(h.Resources, ledger.Resource{Class: a.ResourceClass, Amount: a.Used})
	}
	return held, nil
}

// sharing reports whether prov shares its inventory via aggregates; a
// reschedule does not avoid those (the new tree may need the same pool).
func (c *Claimer) sharing(ctx context.Context, prov ledger.Provider) bool {
	_, traits, err := c.store.ProviderTraits(ctx, prov.UUID)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(traits, func(t ledger.Trait) bool { return t.Name == sharesViaAggregate })
}
