package shadow

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
)

// Defaults of Options.
const (
	DefaultWorkers  = 1
	DefaultQueue    = 32
	DefaultDeadline = 5 * time.Second
	// DefaultBudget is the share of its time a worker may spend judging
	// claims (Options.Budget).
	DefaultBudget = 0.1
	// DefaultFlush is how often Run adds the counts to the ledger.
	DefaultFlush = 5 * time.Second
)

// Shadow is an active shadow as the catalogue built it: its ledger id,
// what it runs, and the policy it ranks with (for a scriptlet, the default
// policy with that scriptlet; for a policy, that policy). The policy is
// built to refuse on a scriptlet failure (scriptlet.Limits.OnError
// "refuse"), so that failures are seen and counted, not ignored.
type Shadow struct {
	ID     int64
	Kind   string // scheduling.ShadowScriptlet or scheduling.ShadowPolicy
	Name   string
	Policy *scheduler.Policy
}

// Job is one claim's decision and what it was made from. The request and
// candidates are the claim's: a shadow reads them and never changes them
// (scheduler.Policy.Rank does not; a shadow that needs more provider
// fields than the claim's policy did enriches copies).
type Job struct {
	// Default says the claim ranked with the default policy (as it
	// resolved it: a reload of the catalogue since then does not change
	// that): only such claims are shadowed.
	Default    bool
	Request    *scheduler.Request
	Candidates []*scheduler.Candidate
	// Enriched are the provider fields the claim's cloud view filled in.
	Enriched scheduler.Needs
	// Root is the root provider of the claim's first choice, "" when it
	// placed nothing; Refusal then says why.
	Root    string
	Refusal string
	// Preemption, when set, is the claim's preemption search
	// (docs/preemption.md): the claim found no candidate its policy
	// accepted, and preempting made it fit somewhere.
	Preemption *Preemption
}

// Preemption is what a claim that found nothing could preempt: its plans,
// best first as the claim tries them, and the root it preempted on.
type Preemption struct {
	Plans []*PreemptPlan
	// Root is the root provider the claim preempted on, "" when it did
	// not (every plan lost to concurrent writes, or its policy accepted
	// none).
	Root, RootName string
}

// PreemptPlan is one root where preempting Victims consumers makes the
// claim fit.
type PreemptPlan struct {
	Root    string
	Victims int
	// Candidates computes the claim's request and candidates on Root
	// with the victims' allocations released (the request's Target is
	// Root). A shadow's worker calls it, off the claim's path; the
	// first call's answer is kept for the job's other shadows.
	Candidates func(ctx context.Context) (*scheduler.Request, []*scheduler.Candidate, error)

	done  bool
	req   *scheduler.Request
	cands []*scheduler.Candidate
	err   error
}

// candidates is pl.Candidates, computed once.
func (pl *PreemptPlan) candidates(ctx context.Context) (*scheduler.Request, []*scheduler.Candidate, error) {
	if !pl.done {
		pl.req, pl.cands, pl.err = pl.Candidates(ctx)
		pl.done = pl.err == nil // a deadline of one shadow is not the next one's
	}
	return pl.req, pl.cands, pl.err
}

// Enricher fills the costly provider fields a policy needs (claims.Cloud's
// Enrich; claims/cloud's View).
type Enricher interface {
	Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.ProviderView) error
}

// Options configure a Runner.
type Options struct {
	// Store is where the counts go. Required.
	Store *ledger.Store
	// Cloud enriches the candidates' providers when a shadow needs more
	// than the claim's policy did; nil: shadows see what the claim's
	// policy saw.
	Cloud Enricher
	// Logger receives failed flushes; nil means slog.Default().
	Logger *slog.Logger
	// Workers rank the shadows, Queue jobs wait for them; when the queue
	// is full a claim is not shadowed and counted as dropped. 0 means
	// DefaultWorkers and DefaultQueue.
	Workers, Queue int
	// Deadline bounds one shadow's ranking of one claim, built-in units
	// included (its scriptlets also have the scriptlet deadline). 0 means
	// DefaultDeadline.
	Deadline time.Duration
	// Budget bounds what shadows cost the claims: the share of wall time
	// each worker may spend judging (its scriptlets, its ranking, the
	// cloud view's reads it waits for), averaged over a second or so. A
	// claim that comes when the budget is spent is not shadowed and is
	// counted as dropped. 0 means DefaultBudget; 1 or more, no bound but
	// the workers.
	Budget float64
}

// active is what Set installed: the shadows.
type active struct {
	shadows []Shadow
}

// queued is a job with the shadows active when it was submitted.
type queued struct {
	job Job
	set *active
}

// Runner runs the active shadows beside claims and keeps their counts. It
// is safe for concurrent use.
type Runner struct {
	o     Options
	cur   atomic.Pointer[active]
	queue chan queued
	start sync.Once
	done  chan struct{}
	stop  sync.Once
	// wg counts the workers; pending the jobs queued or running.
	wg      sync.WaitGroup
	pending atomic.Int64
	// resumeAt is when a worker's budget will allow judging again (Unix
	// nanoseconds): until then Submit drops claims at once rather than
	// queue them (a queued claim holds its candidates in memory).
	resumeAt atomic.Int64

	mu      sync.Mutex
	tallies map[int64]*scheduling.ShadowDelta
}

// New returns a Runner as o says, with no shadow active.
func New(o Options) *Runner {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Runner{o: o, queue: make(chan queued, o.Queue), done: make(chan struct{}),
		tallies: map[int64]*scheduling.ShadowDelta{}}
}

// Set installs the active shadows (the catalogue calls it on every
// load). They are compared with the claims of the default policy (Job.Default).
// Counts of shadows no longer active are kept until the next flush, which
// drops them if the ledger no longer has the shadow.
func (r *Runner) Set(shadows []Shadow) {
	r.cur.Store(&active{shadows: shadows})
}

// Active reports whether any shadow runs: a claim builds no Job when none
// does.
func (r *Runner) Active() bool {
	a := r.cur.Load()
	return a != nil && len(a.shadows) > 0
}

// Submit queues j for the active shadows, if j's claim was ranked by the
// default policy. It never blocks: with the queue full, the claim is
// counted as dropped by every active shadow.
func (r *Runner) Submit(j Job) {
	a := r.cur.Load()
	if a == nil || len(a.shadows) == 0 || !j.Default {
		return
	}
	if time.Now().UnixNano() < r.resumeAt.Load() {
		r.drop(a)
		return
	}
	r.start.Do(r.startWorkers)
	r.pending.Add(1)
	select {
	case r.queue <- queued{job: j, set: a}:
		return
	default:
	}
	r.pending.Add(-1)
	r.drop(a)
}

// drop counts a claim the shadows of a did not judge.
func (r *Runner) drop(a *active) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sh := range a.shadows {
		r.tally(sh.ID).Counts.Dropped++
	}
}

// startWorkers starts the workers (on the first Submit, so a Runner that
// never shadows starts none); they run until Close.
func (r *Runner) startWorkers() {
	for range r.o.Workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			b := newBudget(r.o.Budget, time.Now())
			for {
				select {
				case <-r.done:
					return
				case q := <-r.queue:
					if start := time.Now(); b.allow(start) {
						for _, sh := range q.set.shadows {
							v := judge(r.o, sh, &q.job)
							r.record(sh.ID, &q.job, v)
						}
						if wait := b.spend(time.Since(start)); wait > 0 {
							r.resumeAt.Store(time.Now().Add(wait).UnixNano())
						}
					} else {
						r.drop(q.set)
					}
					r.pending.Add(-1)
				}
			}
		}()
	}
}

// Close stops the workers (the jobs still queued are not run) and waits
// for them.
func (r *Runner) Close() {
	r.stop.Do(func() { close(r.done) })
	r.wg.Wait()
}

// tally is the unflushed delta of shadow id. r.mu must be held.
func (r *Runner) tally(id int64) *scheduling.ShadowDelta {
	d := r.tallies[id]
	if d == nil {
		d = &scheduling.ShadowDelta{ShadowID: id, Refusals: map[string]int64{}}
		r.tallies[id] = d
	}
	return d
}

// record counts one verdict of shadow id on j's claim.
func (r *Runner) record(id int64, j *Job, v verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.tally(id)
	c := &d.Counts
	c.ClaimsSeen++
	c.Nanoseconds += int64(v.took)
	if v.victims > 0 {
		c.WouldPreempt++
		c.WouldPreemptVictims += int64(v.victims)
	}
	switch v.outcome {
	case agreed:
		c.Agreed++
	case disagreed:
		c.Disagreed++
		d.Disagreements = append(d.Disagreements, v.disagreement(j))
		if n := len(d.Disagreements) - scheduling.ShadowMaxDisagreements; n > 0 {
			d.Disagreements = d.Disagreements[n:]
		}
	case wouldRefuse:
		c.WouldRefuse++
		msg := v.refusal
		if _, ok := d.Refusals[msg]; !ok && len(d.Refusals) >= scheduling.ShadowMaxRefusals {
			msg = scheduling.ShadowOtherRefusals
		}
		d.Refusals[msg]++
	case failedSteps:
		c.FailedSteps++
	case failedMemory:
		c.FailedMemory++
	case failedDeadline:
		c.FailedDeadline++
	default:
		c.FailedError++
	}
}

// Flush adds the counts of this replica since the last flush to the
// ledger in one transaction. When the write fails the counts are kept for
// the next flush.
func (r *Runner) Flush(ctx context.Context) error {
	r.mu.Lock()
	if len(r.tallies) == 0 {
		r.mu.Unlock()
		return nil
	}
	taken := r.tallies
	r.tallies = map[int64]*scheduling.ShadowDelta{}
	r.mu.Unlock()
	deltas := make([]scheduling.ShadowDelta, 0, len(taken))
	for _, d := range taken {
		deltas = append(deltas, *d)
	}
	err := r.o.Store.Catalogue.ShadowFlush(ctx, deltas)
	if err != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, old := range taken {
			d := r.tally(old.ShadowID)
			d.Counts.Add(old.Counts)
			for m, n := range old.Refusals {
				d.Refusals[m] += n
			}
			d.Disagreements = append(old.Disagreements, d.Disagreements...)
		}
	}
	return err
}

// Idle waits until no job is queued or running, or ctx ends: what tests
// and a report that wants this replica's latest counts wait for.
func (r *Runner) Idle(ctx context.Context) error {
	for r.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Run flushes the counts every interval (0: DefaultFlush) until ctx
// ends, then stops the workers and flushes a last time. Failed flushes
// are logged and retried at the next interval.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultFlush
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.Close()
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.Flush(fctx); err != nil {
				r.o.Logger.LogAttrs(ctx, slog.LevelWarn, "shadow: last flush of the counts failed", slog.Any("error", err))
			}
			return
		case <-tick.C:
		}
		if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.LogAttrs(ctx, slog.LevelWarn, "shadow: flush of the counts failed", slog.Any("error", err))
		}
	}
}

// budgetBurst is the most time a worker may spend at once after being
// idle: the budget is refilled at its rate up to this much.
const budgetBurst = 100 * time.Millisecond

// budget is a worker's allowance of time to judge claims: it grows at
// rate seconds per second of wall time, up to budgetBurst, and each
// judging spends what it took. One worker owns it (no lock).
type budget struct {
	rate   float64
	tokens time.Duration
	last   time.Time
}

func newBudget(rate float64, now time.Time) *budget {
	return &budget{rate: rate, tokens: budgetBurst, last: now}
}

// allow refills the allowance up to now and reports whether any is left.
// A rate of 1 or more always allows.
func (b *budget) allow(now time.Time) bool {
	if b.rate >= 1 {
		return true
	}
	b.tokens = min(budgetBurst, b.tokens+time.Duration(float64(now.Sub(b.last))*b.rate))
	b.last = now
	return b.tokens > 0
}

// spend takes d from the allowance (it may go below zero: the next claims
// are dropped until it has grown back) and returns how long that takes,
// 0 when some is left.
func (b *budget) spend(d time.Duration) time.Duration {
	b.tokens -= d
	if b.tokens > 0 || b.rate >= 1 {
		return 0
	}
	return time.Duration(float64(-b.tokens)/b.rate) + 1
}
