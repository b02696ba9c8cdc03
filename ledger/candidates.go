package ledger

import (
	"context"

	"github.com/berthd/berth/ledger/engine"
)

// Snapshot returns the engine's view of the ledger: a snapshot that
// reflects every write committed before the call, by this process or any
// other on the database (it catches up with the change log first:
// changelog.go), with the names among classes and traits (resource
// classes and traits the caller will resolve) checked against the
// database. It writes nothing. The snapshot is immutable: a caller that
// asks it several questions gets answers about one state.
func (s *Store) Snapshot(ctx context.Context, classes, traits []string) (*engine.Snapshot, error) {
	return s.snapshot(ctx, true, classes, traits)
}

// RankingSnapshot is Snapshot without the catch-up's round trip: it
// reflects every write this process committed before the call, and the
// other processes' writes that a catch-up has found (one runs in the
// background when they notify, and on every Snapshot). A claim ranks on
// it: its write re-checks capacity under the providers' locks, so a
// slightly stale ranking costs a retry, never an overcommit.
func (s *Store) RankingSnapshot(ctx context.Context, classes, traits []string) (*engine.Snapshot, error) {
	return s.snapshot(ctx, false, classes, traits)
}

func (s *Store) snapshot(ctx context.Context, fresh bool, classes, traits []string) (*engine.Snapshot, error) {
	snap, err := s.snap.get(ctx, fresh)
	if err != nil {
		return nil, dbError(err)
	}
	snap, err = s.knowNames(ctx, snap, classes, traits)
	return snap, dbError(err)
}

// knowNames makes sure snap's names are right for the given classes and
// traits before they are resolved (see engine.Snapshot.UnsureNames): the
// names it may have wrong are looked up, which the common case skips.
func (s *Store) knowNames(ctx context.Context, snap *engine.Snapshot, classes, traits []string) (*engine.Snapshot, error) {
	checkC, checkT := snap.UnsureNames(classes, traits)
	if len(checkC) == 0 && len(checkT) == 0 {
		return snap, nil
	}
	return s.snap.learnNames(ctx, snap, checkC, checkT)
}

// AllocationCandidates computes the allocation candidates for p from a
// fresh snapshot (engine.Snapshot.Candidates).
func (s *Store) AllocationCandidates(ctx context.Context, p engine.CandidatesParams) (*engine.Candidates, error) {
	classes, traits := engine.ParamsNames(&p)
	snap, err := s.Snapshot(ctx, classes, traits)
	if err != nil {
		return nil, err
	}
	return snap.Candidates(ctx, &p)
}

// ProvidersMatching lists, in creation order, the providers of a fresh
// snapshot that satisfy f (engine.Snapshot.ProvidersMatching).
func (s *Store) ProvidersMatching(ctx context.Context, f engine.ProviderFilter) ([]engine.Provider, error) {
	classes, traits := engine.GroupNames(&f.Group)
	snap, err := s.Snapshot(ctx, classes, traits)
	if err != nil {
		return nil, err
	}
	return snap.ProvidersMatching(&f)
}

// ProviderList resolves f against a fresh snapshot and returns the
// matching providers unread (engine.Snapshot.ProviderList): walking the
// list reads them from that snapshot one at a time, in creation order, so
// listing every provider holds no memory per provider.
func (s *Store) ProviderList(ctx context.Context, f engine.ProviderFilter) (*engine.ProviderList, error) {
	classes, traits := engine.GroupNames(&f.Group)
	snap, err := s.Snapshot(ctx, classes, traits)
	if err != nil {
		return nil, err
	}
	return snap.ProviderList(&f)
}

// Capacity answers p from a fresh snapshot (engine.Snapshot.Capacity).
func (s *Store) Capacity(ctx context.Context, p engine.CapacityParams) (*engine.Capacity, error) {
	classes, traits := engine.ParamsNames(&p.Request)
	snap, err := s.Snapshot(ctx, classes, traits)
	if err != nil {
		return nil, err
	}
	return snap.Capacity(ctx, &p)
}
