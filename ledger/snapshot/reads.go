package snapshot

import (
	"context"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
)

// Snapshot returns the engine's view of the ledger: a snapshot that
// reflects every write committed before the call, by this process or any
// other on the database (it catches up with the change log first:
// changelog.go), with the names among classes and traits (resource
// classes and traits the caller will resolve) checked against the
// database. It writes nothing. The snapshot is immutable: a caller that
// asks it several questions gets answers about one state.
func (c *Cache) Snapshot(ctx context.Context, classes, traits []string) (*engine.Snapshot, error) {
	return c.snapshot(ctx, true, classes, traits)
}

// RankingSnapshot is Snapshot without the catch-up's round trip: it
// reflects every write this process committed before the call, and the
// other processes' writes that a catch-up has found (one runs in the
// background when they notify, and on every Snapshot). A claim ranks on
// it: its write re-checks capacity under the providers' locks, so a
// slightly stale ranking costs a retry, never an overcommit.
func (c *Cache) RankingSnapshot(ctx context.Context, classes, traits []string) (*engine.Snapshot, error) {
	return c.snapshot(ctx, false, classes, traits)
}

func (c *Cache) snapshot(ctx context.Context, fresh bool, classes, traits []string) (*engine.Snapshot, error) {
	snap, err := c.get(ctx, fresh)
	if err != nil {
		return nil, core.DBError(err)
	}
	snap, err = c.knowNames(ctx, snap, classes, traits)
	return snap, core.DBError(err)
}

// knowNames makes sure snap's names are right for the given classes and
// traits before they are resolved (see engine.Snapshot.UnsureNames): the
// names it may have wrong are looked up, which the common case skips.
func (c *Cache) knowNames(ctx context.Context, snap *engine.Snapshot, classes, traits []string) (*engine.Snapshot, error) {
	checkC, checkT := snap.UnsureNames(classes, traits)
	if len(checkC) == 0 && len(checkT) == 0 {
		return snap, nil
	}
	return c.learnNames(ctx, snap, checkC, checkT)
}

// AllocationCandidates computes the allocation candidates for p from a
// fresh snapshot (engine.Snapshot.Candidates).
func (c *Cache) AllocationCandidates(ctx context.Context, p engine.CandidatesParams) (*engine.Candidates, error) {
	snap, err := c.CandidatesSnapshot(ctx, &p)
	if err != nil {
		return nil, err
	}
	return snap.Candidates(ctx, &p)
}

// CandidatesSnapshot returns the snapshot AllocationCandidates computes
// p's candidates on: fresh (Snapshot), with its names right for p's. A
// snapshot is immutable and every change to the ledger is published as
// another one, so one pointer stands for one state: the same pointer
// always gives the same candidates for the same p (randomness and a
// search cut short by its context aside); and since a call reflects
// every write committed before it, by any process, it never returns a
// pointer returned before a write that changed what a snapshot holds.
func (c *Cache) CandidatesSnapshot(ctx context.Context, p *engine.CandidatesParams) (*engine.Snapshot, error) {
	classes, traits := engine.ParamsNames(p)
	return c.Snapshot(ctx, classes, traits)
}

// ProvidersMatching lists, in creation order, the providers of a fresh
// snapshot that satisfy f (engine.Snapshot.ProvidersMatching).
func (c *Cache) ProvidersMatching(ctx context.Context, f engine.ProviderFilter) ([]engine.Provider, error) {
	classes, traits := engine.GroupNames(&f.Group)
	snap, err := c.Snapshot(ctx, classes, traits)
	if err != nil {
		return nil, err
	}
	return snap.ProvidersMatching(&f)
}

// ProviderList resolves f against a fresh snapshot and returns the
// matching providers unread (engine.Snapshot.ProviderList): walking the
// list reads them from that snapshot one at a time, in creation order, so
// listing every provider holds no memory per provider.
func (c *Cache) ProviderList(ctx context.Context, f engine.ProviderFilter) (*engine.ProviderList, error) {
	classes, traits := engine.GroupNames(&f.Group)
	snap, err := c.Snapshot(ctx, classes, traits)
	if err != nil {
		return nil, err
	}
	return snap.ProviderList(&f)
}

// Capacity answers p from a fresh snapshot (engine.Snapshot.Capacity).
func (c *Cache) Capacity(ctx context.Context, p engine.CapacityParams) (*engine.Capacity, error) {
	classes, traits := engine.ParamsNames(&p.Request)
	snap, err := c.Snapshot(ctx, classes, traits)
	if err != nil {
		return nil, err
	}
	return snap.Capacity(ctx, &p)
}
