package claims

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/scheduler"
)

// Writing: the ranked candidates are written in turn through the ledger
// (writer.run), each attempt one transaction, until one is written or the
// attempts run out; the answer is built from the one written.

// writer is a claim's write loop, whose attempts and failed roots carry
// over from the sample to the full set.
type writer struct {
	c           *Claimer
	tr          *claimTrace
	max         int
	attempts    int
	failedRoots []string
	// quota is what every write is checked against (nil: nothing).
	quota *quotas.Quota
	// preempt, when set, are the consumers every write displaces, and
	// victims how the answer names them (preempt.go).
	preempt *resources.Preemption
	victims []Victim
}

// run writes s's candidates in turn, each picked by pick, until one is
// written, a write fails for a reason another candidate cannot cure, the
// candidates run out or the attempts do; the last two return nil, nil.
// p, the claim's, is not kept past the call (a claim's Params stay on
// its stack).
func (w *writer) run(ctx context.Context, p *Params, s *selection) (*Result, error) {
	ranked := s.ranking.Ranked
	var triedArr [16]bool
	tried := triedArr[:0]
	if len(ranked) > len(triedArr) {
		tried = make([]bool, len(ranked))
	}
	tried = tried[:len(ranked)]
	for w.attempts < w.max {
		// A root whose write failed is hot or stale in the snapshot; its
		// other candidates are likely to fail too. (Only the anchor root
		// counts: a sharing provider is common to many candidates.)
		i := w.c.pick(ranked, tried, w.failedRoots, s.ranking.Chosen)
		if i < 0 {
			return nil, nil
		}
		tried[i] = true
		cand := ranked[i].Cand
		w.attempts++
		// The answer is known before the write, which records it for
		// retries (idempotent.go); the write takes its allocations.
		res := w.c.result(p, s, i, w.attempts, w.failedRoots)
		res.Preempted = w.victims
		cw := resources.ClaimWriteParams{Consumers: append([]resources.ConsumerAllocations{{
			ConsumerUUID:    p.ConsumerUUID,
			ProjectID:       p.ProjectID,
			UserID:          p.UserID,
			ConsumerType:    p.ConsumerType,
			CheckGeneration: true,
			Generation:      p.ConsumerGeneration,
			Allocations:     res.Allocations,
			Name:            p.Name,
			Properties:      p.Properties,
			CopyStickyKeys:  true,
		}}, p.with...), Move: p.move, State: p.stateWrite(cand.Root()),
			Quota: w.quota, Preempt: w.preempt}
		cw.Request = p.retryKey.record(p, res)
		start := time.Now()
		err := w.c.store.Allocations.ClaimWrite(ctx, cw)
		w.tr.write(start, cand.Root(), err)
		if err == nil {
			return res, nil
		}
		if !retryable(err) {
			return nil, err
		}
		w.c.log.DebugContext(ctx, "claim attempt conflicted", "consumer", p.ConsumerUUID, "root", cand.Root(), "error", err)
		w.failedRoots = append(w.failedRoots, cand.Root())
	}
	return nil, nil
}

// pick returns the index in ranked of the next candidate to write, or -1
// if none is left. When the scriptlet chose (scriptletChose: its
// set_target's candidate is ranked[0]), that candidate is written first:
// it is the claim's decision, not one of equals to spread over. Otherwise,
// and once it was tried or its root failed: at random among the best
// untried candidates on roots that have not failed, the first
// Config.SubsetSize of them or, with a subset size of 1, those whose score
// ties the best one's; with 0, the best one. Claims ranking the same
// snapshot at the same time so spread over equally good providers instead
// of queueing on one provider's row lock.
func (c *Claimer) pick(ranked []scheduler.Scored, tried []bool, failedRoots []string, scriptletChose bool) int {
	if scriptletChose && len(ranked) > 0 && !tried[0] && !slices.Contains(failedRoots, ranked[0].Cand.Root()) {
		return 0
	}
	first, n := -1, 0
	chosen := -1
	for i, sc := range ranked {
		if tried[i] || slices.Contains(failedRoots, sc.Cand.Root()) {
			continue
		}
		if first < 0 {
			first = i
			if c.cfg.SubsetSize <= 0 {
				return i
			}
		} else if c.cfg.SubsetSize > 1 && n >= c.cfg.SubsetSize {
			break
		} else if c.cfg.SubsetSize <= 1 && !scheduler.Tie(ranked[first].Score, sc.Score) {
			break
		}
		// Reservoir sampling: each of the n+1 seen so far is kept with
		// probability 1/(n+1).
		n++
		if rand.IntN(n) == 0 {
			chosen = i
		}
	}
	return chosen
}

// stateWrite is what a write of p on root stores of the claim
// (claimrecords.ClaimStateWrite), nil for a claim that is not stored (one that
// no entry point made).
func (p *Params) stateWrite(root string) *claimrecords.ClaimStateWrite {
	if p.op == "" {
		return nil
	}
	w := &claimrecords.ClaimStateWrite{Op: p.op, Request: p.storedRequest(), RootUUID: root, Mode: p.leaseMode}
	if p.LeaseSeconds != nil {
		w.LeaseSeconds = *p.LeaseSeconds
	}
	return w
}

// retryable reports whether a refused write may succeed on another
// candidate: capacity gone (ErrConflict other than a consumer generation
// conflict or a refused lease) or a provider that no longer exists
// (ErrUnknownProvider).
func retryable(err error) bool {
	le, ok := fault.As(err)
	switch {
	case !ok:
		return false
	case errors.Is(le, fault.ErrConflict):
		return le.Code != fault.CodeConcurrentUpdate && le.Code != fault.CodeLeaseOnPermanent
	}
	return errors.Is(le, fault.ErrUnknownProvider)
}

// result builds the answer for the candidate ranked at chosen; the
// alternates are the best candidates on other roots, not on failed ones.
func (c *Claimer) result(p *Params, s *selection, chosen, attempts int, failed []string) *Result {
	ranked := s.ranking.Ranked
	var altArr [8]int
	alts := alternates(ranked, chosen, failed, p.Alternates, altArr[:0])
	if s.direct && p.DryRun {
		// A dry run's ranking shows every kept candidate, with its views;
		// another answer reads only its candidates' root names (option).
		keptViews(s.kept, s.cands)
	}
	// The answer's candidates' allocations are cut from one pair of
	// arrays, sized for the chosen one and its alternates taking alike.
	n := 1 + max(0, min(p.Alternates, len(ranked)-1))
	slab := newAllocSlab(ranked[chosen].Cand, n)
	best := s.option(ranked[chosen], p.DryRun, &slab)
	gen := int64(1)
	if p.ConsumerGeneration != nil {
		gen = *p.ConsumerGeneration + 1
	}
	r := &Result{
		ConsumerUUID:       p.ConsumerUUID,
		ConsumerGeneration: gen,
		Allocations:        best.Allocations,
		Mappings:           best.Mappings,
		Root:               best.Root,
		RootName:           best.RootName,
		Score:              best.Score,
		Attempts:           attempts,
		DryRun:             p.DryRun,
		Steps:              s.steps,
		Alternates:         make([]Option, 0, max(0, min(p.Alternates, len(ranked)-1))),
		Reused:             p.Reused,
	}
	for _, i := range alts {
		r.Alternates = append(r.Alternates, s.option(ranked[i], p.DryRun, &slab))
	}
	if p.DryRun {
		r.Ranking = make([]Option, len(ranked))
		for i, sc := range ranked {
			r.Ranking[i] = s.option(sc, true, nil)
		}
		r.ScriptletLog = append([]scheduler.LogLine{}, s.ranking.Log...)
	}
	for i := range p.with {
		if p.with[i].ConsumerType == resources.MigrationConsumerType {
			m := p.with[i]
			r.Migration = &m
		}
	}
	return r
}

// alternates appends to buf the positions in ranked of a claim's
// alternates: the best candidates, at most n, each on a root other than
// the chosen one's, the failed ones' and each other's.
func alternates(ranked []scheduler.Scored, chosen int, failed []string, n int, buf []int) []int {
	var seenArr [8]string
	seen := append(append(seenArr[:0], ranked[chosen].Cand.Root()), failed...)
	for i, sc := range ranked {
		if len(buf) >= n {
			break
		}
		if slices.Contains(seen, sc.Cand.Root()) {
			continue
		}
		seen = append(seen, sc.Cand.Root())
		buf = append(buf, i)
	}
	return buf
}

// option is the answer's view of a ranked candidate of s, with its
// weights when weights is set (a dry run's: only its ranking shows them),
// its allocations cut from slab if it has room (nil: none).
func (s *selection) option(sc scheduler.Scored, weights bool, slab *allocSlab) Option {
	o := Option{Root: sc.Cand.Root(), Score: sc.Score,
		Allocations: slab.byName(sc.Cand), Mappings: mappings(s.lc.Request(sc.Cand.Index))}
	if weights {
		o.Weights = sc.Weights()
	}
	if prov := sc.Cand.Providers[o.Root]; prov != nil {
		o.RootName = prov.Name
	} else if s.direct {
		o.RootName = keptRootName(s.kept, sc.Cand, o.Root)
	}
	return o
}

// allocSlab holds the allocations of a few candidates, in one array of
// allocations and one of resources.
type allocSlab struct {
	allocs []engine.Allocation
	res    []engine.ResourceAmount
}

// newAllocSlab has room for n candidates taking as many allocations and
// resources as c.
func newAllocSlab(c *scheduler.Candidate, n int) allocSlab {
	nres := 0
	for _, a := range c.Allocations {
		nres += len(a.Resources)
	}
	return allocSlab{allocs: make([]engine.Allocation, 0, n*len(c.Allocations)),
		res: make([]engine.ResourceAmount, 0, n*nres)}
}

// byName is c.AllocationsByName(), cut from s when it has room.
func (s *allocSlab) byName(c *scheduler.Candidate) []engine.Allocation {
	nres := 0
	for _, a := range c.Allocations {
		nres += len(a.Resources)
	}
	if s == nil || len(c.Allocations) == 0 || len(c.Allocations) > cap(s.allocs)-len(s.allocs) || nres > cap(s.res)-len(s.res) {
		return c.AllocationsByName()
	}
	from := len(s.allocs)
	for _, a := range c.Allocations {
		var res []engine.ResourceAmount // nil for none, as AllocationsByName
		if len(a.Resources) > 0 {
			r0 := len(s.res)
			s.res = append(s.res, a.Resources...)
			res = s.res[r0:len(s.res):len(s.res)]
			slices.SortFunc(res, func(x, y engine.ResourceAmount) int { return strings.Compare(x.Class, y.Class) })
		}
		s.allocs = append(s.allocs, engine.Allocation{ProviderUUID: a.ProviderUUID, Resources: res})
	}
	return s.allocs[from:len(s.allocs):len(s.allocs)]
}
