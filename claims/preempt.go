package claims

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// Preemption (docs/preemption.md): when no candidate fits, a claim may
// displace consumers whose stored claim is preemptible and of strictly
// lower priority. It runs only on that path, after the claim found
// nothing: a claim that fits costs not one statement more. The claim
// reads the preemptible consumers below its priority (one statement,
// resources.Allocations.PreemptibleBelow), then, on its snapshot and in
// memory, finds per root provider the fewest victims whose removal makes
// the request fit there (planRoot), ranks the roots' plans (fewest
// victims, then lowest priorities, then most recently created), and
// writes the best plan whose root the policy accepts: the victims'
// allocations removed and the claim's written in one transaction, which
// re-checks the victims under their locks (resources' lockVictims). A
// victim changed meanwhile makes the write a conflict, and the claim
// tries its next plan.

// Bounds of Params.Priority.
const (
	MinPriority = -1_000_000_000
	MaxPriority = 1_000_000_000
)

// StepPreemption names the step a claim that found nothing adds to its
// steps when it looked for consumers to preempt (when there are
// preemptible consumers of lower priority than its own, but itself): Remaining counts the
// roots where preempting makes the claim fit, Removed the others, and
// Reasons why.
const StepPreemption = "preemption"

// Reasons of the preemption step.
const (
	ReasonNoPreemptible    = "no preemptible consumer of lower priority"
	ReasonPreemptTooLittle = "does not fit even with every preemptible consumer of lower priority preempted"
	ReasonPreemptExcluded  = "excluded or not the target"
	ReasonPreemptBudget    = "not looked at: search budget spent"
)

// Victim is a consumer a claim preempted (or, for a dry run, would).
type Victim struct {
	ConsumerUUID string
	// Root is the root provider it is displaced from.
	Root              string
	Priority          int64
	ProjectID, UserID string
	// Allocations are what it held.
	Allocations []engine.Allocation
}

// preemptSearchBudget bounds the fit checks (engine searches on a
// snapshot with victims' usage released) of one claim's preemption
// search, over every root; maxVictimSets bounds the sets of one size
// tried on one root before the search takes victims in order instead.
const (
	preemptSearchBudget = 4096
	maxVictimSets       = 256
)

// preemptCounts are this process's preemption totals (ObservePreemptions).
type preemptCounts struct {
	// searches counts the claims that read the preemptible consumers
	// (found no candidate); claims those that preempted; victims the
	// consumers they displaced.
	searches, claims, victims atomic.Int64
}

// preempter is a claim's search for consumers to preempt and its writes
// (a type of its own, so that the Claimer keeps a small surface).
type preempter struct {
	c *Claimer
}

// plan is one root's way to make a claim fit: the victims to displace.
type plan struct {
	root    string
	victims []*resources.Preemptible
}

// run is what a claim that found nothing (np) does: with
// preemptible consumers of lower priority whose removal makes it fit, it
// writes (or, for a dry run, answers) the best plan that the policy
// accepts; otherwise it returns np, its steps with the preemption step
// added. When every plan it tried lost to concurrent writes (its victims
// changed, or others took the room), it reads the ledger again, tries
// the room that may be free now, then plans again, within the claim's
// attempts. A scriptlet's refusal is the claim's answer as it is. With
// shadows active, the first plans and the root preempted on are kept in
// s (the selection that found nothing) for them.
func (pe preempter) run(ctx context.Context, p *Params, r *resolved, s *selection, tr *claimTrace, np *NotPlacedError) (*Result, error) {
	c := pe.c
	if np.Reason == Refused || p.Priority <= MinPriority {
		return nil, np
	}
	var q *quotas.Quota
	if !p.DryRun {
		var err error
		if q, err = c.quotaOf(ctx, p.ProjectID); err != nil {
			return nil, err
		}
	}
	maxAttempts := c.cfg.MaxAttempts
	if p.MaxAttempts > 0 {
		maxAttempts = min(p.MaxAttempts, MaxMaxAttempts)
	}
	w := writer{c: c, tr: tr, max: maxAttempts, quota: q}
	c.preempted.searches.Add(1)
	for round := 0; ; round++ {
		found, err := c.store.Allocations.PreemptibleBelow(ctx, p.Priority)
		if err != nil {
			return nil, err
		}
		found = slices.DeleteFunc(found, func(v resources.Preemptible) bool { return sameUUID(v.ConsumerUUID, p.ConsumerUUID) })
		if len(found) == 0 && round == 0 {
			// Nothing to preempt: the answer is as it was before
			// preemption existed, without a preemption step.
			return nil, np
		}
		plans, step := pe.plans(ctx, p, r, np.Roots, found)
		if round == 0 {
			np.Steps = append(np.Steps, step) // the answer counts what the claim found first
			s.preemption = c.shadowPreemption(p, r, s, plans)
		}
		before := w.attempts
		for _, pl := range plans {
			if w.attempts >= w.max {
				break
			}
			res, err := pe.write(ctx, p, r, &w, pl)
			if res != nil || err != nil {
				if res != nil {
					// Not the recorded answer's steps: answered anew.
					res.Steps, res.answer = np.Steps, nil
					if s.preemption != nil {
						s.preemption.Root, s.preemption.RootName = pl.root, res.RootName
					}
				}
				return res, err
			}
		}
		if p.DryRun || w.attempts == before || w.attempts >= w.max {
			break
		}
		// Every write lost: read again; the room may be free now.
		if r.snap, err = c.snapshot(ctx, p); err != nil {
			return nil, err
		}
		w.failedRoots = nil
		s, err := c.selectCandidates(ctx, p, r, 0)
		if err != nil {
			return nil, err
		}
		if s.rankErr == nil && len(s.ranking.Ranked) > 0 {
			if res, err := w.run(ctx, p, s); res != nil || err != nil {
				return res, err
			}
			w.failedRoots = nil
		}
	}
	np.Attempts = w.attempts
	return nil, np
}

// write ranks the claim on pl's root with pl's victims' usage
// released and, unless the policy removes every candidate there, answers
// a dry run or writes; nil, nil to try the next plan.
func (pe preempter) write(ctx context.Context, p *Params, r *resolved, w *writer, pl plan) (*Result, error) {
	c := pe.c
	rel := &resolved{snap: r.snap.WithReleased(pl.allocations()), exclude: r.exclude, target: pl.root,
		policy: r.policy, byDefault: r.byDefault}
	s, err := c.selectCandidates(ctx, p, rel, 0)
	if err != nil {
		return nil, err
	}
	if s.rankErr != nil || len(s.ranking.Ranked) == 0 {
		return nil, nil
	}
	victims := pl.answer()
	if p.DryRun {
		res := c.result(p, s, 0, 0, nil)
		res.Preempted = victims
		if res.Quota, err = c.quotaReport(ctx, p, res.Allocations); err != nil {
			return nil, err
		}
		return res, nil
	}
	w.preempt = &resources.Preemption{Priority: p.Priority, Root: pl.root, Victims: make([]resources.Preemptible, len(pl.victims))}
	for i, v := range pl.victims {
		w.preempt.Victims[i] = *v
	}
	w.victims = victims
	res, err := w.run(ctx, p, s)
	w.preempt, w.victims = nil, nil
	if res != nil {
		c.preempted.claims.Add(1)
		c.preempted.victims.Add(int64(len(victims)))
		c.log.InfoContext(ctx, "claim preempted", "consumer", p.ConsumerUUID, "root", pl.root, "victims", len(victims))
	}
	return res, err
}

// plans finds, for each root that holds preemptible consumers
// below p's priority (and that p may use), the victims that make p fit
// there, and returns the plans best first with the step that counts
// them (roots is how many roots the request saw).
func (pe preempter) plans(ctx context.Context, p *Params, r *resolved, roots int, found []resources.Preemptible) ([]plan, Step) {
	byRoot := map[string][]*resources.Preemptible{}
	for i := range found {
		v := &found[i]
		for _, root := range v.Roots {
			byRoot[root] = append(byRoot[root], v)
		}
	}
	step := Step{Unit: StepPreemption, Kind: "preemption", Reasons: map[string]int{}}
	if n := roots - len(byRoot); n > 0 {
		step.Reasons[ReasonNoPreemptible] = n
	}
	budget := preemptSearchBudget
	var plans []plan
	for _, root := range slices.Sorted(maps.Keys(byRoot)) {
		switch {
		case slices.Contains(r.exclude, root) || r.target != "" && r.target != root:
			step.Reasons[ReasonPreemptExcluded]++
			continue
		case budget <= 0:
			step.Reasons[ReasonPreemptBudget]++
			continue
		}
		victims, ok := pe.planRoot(ctx, p, r.snap, root, byRoot[root], &budget)
		if !ok {
			step.Reasons[ReasonPreemptTooLittle]++
			continue
		}
		plans = append(plans, plan{root: root, victims: victims})
	}
	slices.SortStableFunc(plans, func(a, b plan) int { return compareVictims(a.victims, b.victims) })
	step.Remaining = len(plans)
	step.Removed = max(0, roots-len(plans))
	return plans, step
}

// planRoot chooses the victims on root that make p fit there: none if
// even all of them do not; else the fewest, and among as few the best by
// compareVictims (lowest priorities, then most recently created),
// looking at up to maxVictimSets sets of each size; past that, or past
// the claim's budget of fit checks, the victims in order (lowest
// priority, newest first) until p fits, then without those it fits
// without (stop at what is needed).
func (pe preempter) planRoot(ctx context.Context, p *Params, snap *engine.Snapshot, root string, victims []*resources.Preemptible, budget *int) ([]*resources.Preemptible, bool) {
	victims = slices.Clone(victims)
	slices.SortFunc(victims, func(a, b *resources.Preemptible) int {
		return compareVictims([]*resources.Preemptible{a}, []*resources.Preemptible{b})
	})
	fits := func(set []*resources.Preemptible) bool {
		*budget--
		return fitsWithout(ctx, p, snap, root, set)
	}
	if !fits(victims) {
		return nil, false
	}
	for k := 1; k < len(victims) && *budget > 0; k++ {
		var best []*resources.Preemptible
		tried, exhausted := 0, true
		combinations(len(victims), k, func(idx []int) bool {
			if tried >= maxVictimSets || *budget <= 0 {
				exhausted = false
				return false
			}
			tried++
			set := make([]*resources.Preemptible, k)
			for i, j := range idx {
				set[i] = victims[j]
			}
			if (best == nil || compareVictims(set, best) < 0) && fits(set) {
				best = set
			}
			return true
		})
		if best != nil {
			return best, true
		}
		if !exhausted {
			break
		}
	}
	// In order until it fits, then drop the ones not needed.
	var set []*resources.Preemptible
	for _, v := range victims {
		set = append(set, v)
		if len(set) == len(victims) || fits(set) {
			break
		}
	}
	for i := len(set) - 1; i >= 0 && len(set) > 1; i-- {
		without := slices.Delete(slices.Clone(set), i, i+1)
		if fits(without) {
			set = without
		}
	}
	return set, true
}

// fitsWithout reports whether p has a candidate on root once set's
// allocations are released from snap.
func fitsWithout(ctx context.Context, p *Params, snap *engine.Snapshot, root string, set []*resources.Preemptible) bool {
	var allocs []engine.Allocation
	for _, v := range set {
		allocs = append(allocs, v.Allocations...)
	}
	cp := p.Candidates
	cp.Limit, cp.Max, cp.Randomize, cp.Sample = 1, 1, false, false
	cp.AvoidEvacuated, cp.VersionsOnly = true, true
	cp.Groups = slices.Clone(cp.Groups)
	for i := range cp.Groups {
		if cp.Groups[i].InTree == "" {
			cp.Groups[i].InTree = root
		}
	}
	lc, err := snap.WithReleased(allocs).Candidates(ctx, &cp)
	return err == nil && len(lc.Requests) > 0
}

// compareVictims orders two sets of victims, the better (to preempt)
// first: fewer; then lower priorities (the highest of each compared
// first, then the next); then more recently created (the oldest of each
// compared first); then by uuid, for a deterministic answer.
func compareVictims(a, b []*resources.Preemptible) int {
	if n := cmp.Compare(len(a), len(b)); n != 0 {
		return n
	}
	pa, pb := priorities(a), priorities(b)
	if n := slices.Compare(pa, pb); n != 0 {
		return n
	}
	ca, cb := created(a), created(b)
	for i := range ca {
		if n := cb[i].Compare(ca[i]); n != 0 {
			return n
		}
	}
	for i := range a {
		if n := cmp.Compare(a[i].ConsumerUUID, b[i].ConsumerUUID); n != 0 {
			return n
		}
	}
	return 0
}

// priorities are set's priorities, highest first.
func priorities(set []*resources.Preemptible) []int64 {
	out := make([]int64, len(set))
	for i, v := range set {
		out[i] = v.Priority
	}
	slices.SortFunc(out, func(a, b int64) int { return cmp.Compare(b, a) })
	return out
}

// created are set's creation times, oldest first.
func created(set []*resources.Preemptible) []time.Time {
	out := make([]time.Time, len(set))
	for i, v := range set {
		out[i] = v.CreatedAt
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// combinations calls f with every k-subset of 0..n-1 (indexes ascending,
// in lexicographic order) until f returns false.
func combinations(n, k int, f func([]int) bool) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		if !f(idx) {
			return
		}
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// allocations are what pl's victims hold.
func (pl plan) allocations() []engine.Allocation {
	var out []engine.Allocation
	for _, v := range pl.victims {
		out = append(out, v.Allocations...)
	}
	return out
}

// answer is pl's victims as a Result names them.
func (pl plan) answer() []Victim {
	out := make([]Victim, len(pl.victims))
	for i, v := range pl.victims {
		out[i] = Victim{ConsumerUUID: v.ConsumerUUID, Root: pl.root, Priority: v.Priority,
			ProjectID: v.ProjectID, UserID: v.UserID, Allocations: v.Allocations}
	}
	return out
}

// sameUUID reports whether two uuid spellings name one consumer.
func sameUUID(a, b string) bool {
	return canonicalOr(a) == canonicalOr(b)
}

// storedRequest is the request stored with p's claim: p.Request, with
// p's priority and preemptible in it when they are not the defaults (the
// ledger reads them there: resources.PreemptibleBelow), whoever built p.
// A request that is not a JSON object is stored as it is.
func (p *Params) storedRequest() []byte {
	if p.Priority == 0 && !p.Preemptible {
		return p.Request
	}
	doc := map[string]json.RawMessage{}
	if len(p.Request) > 0 && json.Unmarshal(p.Request, &doc) != nil {
		return p.Request
	}
	if doc == nil {
		doc = map[string]json.RawMessage{}
	}
	doc["priority"], _ = json.Marshal(p.Priority)
	doc["preemptible"], _ = json.Marshal(p.Preemptible)
	out, err := json.Marshal(doc)
	if err != nil {
		return p.Request
	}
	return out
}

// preemptedStored is consumerUUID's displacement, as recs recorded it,
// as Stored answers it; nil if it was never displaced.
func preemptedStored(ctx context.Context, recs *claimrecords.Records, consumerUUID string) (*Stored, error) {
	pr, err := recs.PreemptionOf(ctx, consumerUUID)
	if pr == nil || err != nil {
		return nil, err
	}
	return &Stored{Preempted: pr, Holding: Holding{ConsumerUUID: canonicalOr(consumerUUID), Allocations: []engine.Allocation{}}}, nil
}

// ObservePreemptions registers this process's preemption counters, read
// at each collection (so they are exported, at 0, from the start):
// berth.claim.preemptions, the claims that displaced consumers, and
// berth.claim.preemption.victims, the consumers they displaced, and
// berth.claim.preemption.searches, the claims that found no candidate
// and read the preemptible consumers (the only cost preemption adds to
// a claim, and only to one that found nothing). The
// returned function unregisters them.
func ObservePreemptions(c *Claimer) (unregister func() error, err error) {
	m := otel.Meter(instrument.ScopeClaims)
	claims, err := m.Int64ObservableCounter("berth.claim.preemptions", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims of this berthd that preempted consumers to fit (docs/preemption.md)"))
	if err != nil {
		return nil, err
	}
	victims, err := m.Int64ObservableCounter("berth.claim.preemption.victims", metric.WithUnit("{consumer}"),
		metric.WithDescription("Consumers preempted by claims of this berthd: their allocations removed"))
	if err != nil {
		return nil, err
	}
	searches, err := m.Int64ObservableCounter("berth.claim.preemption.searches", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims of this berthd that found no candidate and looked for consumers to preempt"))
	if err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(claims, c.preempted.claims.Load())
		o.ObserveInt64(victims, c.preempted.victims.Load())
		o.ObserveInt64(searches, c.preempted.searches.Load())
		return nil
	}, claims, victims, searches)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
