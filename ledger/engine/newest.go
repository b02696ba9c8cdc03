package engine

import (
	"sync/atomic"
	"time"
)

// The newest change of a listing: GET /resource_providers' Last-Modified
// is the newest change time (updated_at, else created_at) of the providers
// it lists. For a list of every provider the snapshot finds it once and
// keeps it (newestCache), and a claim batch's patch carries it forward
// from the snapshot it patches (carryNewest), so listing a large cloud
// does not walk it twice.

// newestCache is a snapshot's newest change of every provider, found on
// first use; nil until then.
type newestCache struct{ t atomic.Pointer[time.Time] }

// changedAt is when p last changed: UpdatedAt, else CreatedAt.
func (p *ProviderRecord) changedAt() time.Time {
	if p.UpdatedAt.IsZero() {
		return p.CreatedAt
	}
	return p.UpdatedAt
}

// newestOfAll returns the newest change of every provider of s.
func (s *Snapshot) newestOfAll() time.Time {
	if t := s.newest.t.Load(); t != nil {
		return *t
	}
	var newest time.Time
	for i := range s.provs.len() {
		if t := s.provs.at(int32(i)).changedAt(); t.After(newest) {
			newest = t
		}
	}
	s.newest.t.Store(&newest)
	return newest
}

// carryNewest gives s, made from old by replacing the providers of at
// (index to new record) and nothing else, old's newest change when old
// has found it and no replaced provider's change time went backwards;
// otherwise s finds its own on first use.
func (s *Snapshot) carryNewest(old *Snapshot, at []indexedRecord) {
	t := old.newest.t.Load()
	if t == nil {
		return
	}
	newest := *t
	for _, ch := range at {
		c := ch.p.changedAt()
		if c.Before(old.provs.at(ch.i).changedAt()) {
			return
		}
		if c.After(newest) {
			newest = c
		}
	}
	s.newest.t.Store(&newest)
}

// Newest returns the newest change time (UpdatedAt, else CreatedAt) of
// the list's providers; zero when it lists none. It reads the providers'
// records only, and for a list of every provider it is the snapshot's,
// found once.
func (l *ProviderList) Newest() time.Time {
	if l.all() {
		return l.s.newestOfAll()
	}
	var newest time.Time
	l.each(func(i int32) bool {
		if t := l.s.provs.at(i).changedAt(); t.After(newest) {
			newest = t
		}
		return true
	})
	return newest
}
