package engine

import (
	"testing"
	"time"
)

// newestByWalk is the newest change of the providers f lists, found the
// long way: every listed provider's CreatedAt and UpdatedAt.
func newestByWalk(t *testing.T, s *Snapshot, f ProviderFilter) time.Time {
	t.Helper()
	provs, err := s.ProvidersMatching(&f)
	if err != nil {
		t.Fatal(err)
	}
	var newest time.Time
	for _, p := range provs {
		c := p.UpdatedAt
		if c.IsZero() {
			c = p.CreatedAt
		}
		if c.After(newest) {
			newest = c
		}
	}
	return newest
}

// TestProviderListNewest: a list's Newest is the newest change of the
// providers it lists, filtered or not; a patch that moves a change time
// forward carries the snapshot's newest forward, one that moves it back
// (a clock stepped back) or deletes the newest provider does not keep a
// stale one.
func TestProviderListNewest(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b := newSnapBuilder()
	b.rp("cn1", "").inv("cn1", "VCPU", 8)
	b.rp("cn2", "").inv("cn2", "VCPU", 8)
	b.rp("cn3", "").inv("cn3", "DISK_GB", 8)
	s := b.build()
	for id, at := range map[int64][2]time.Duration{1: {0, 3 * time.Hour}, 2: {time.Hour, 0}, 3: {5 * time.Hour, 0}} {
		p, _ := s.ProviderByID(id)
		p.CreatedAt = base.Add(at[0])
		if at[1] > 0 {
			p.UpdatedAt = base.Add(at[1])
		}
	}
	newest := func(s *Snapshot, f ProviderFilter) time.Time {
		t.Helper()
		l, err := s.ProviderList(&f)
		if err != nil {
			t.Fatal(err)
		}
		got, want := l.Newest(), newestByWalk(t, s, f)
		if !got.Equal(want) {
			t.Errorf("filter %+v: Newest %v, the providers' newest %v", f, got, want)
		}
		return got
	}
	if got := newest(s, ProviderFilter{}); !got.Equal(base.Add(5 * time.Hour)) {
		t.Errorf("every provider: %v", got)
	}
	newest(s, ProviderFilter{Group: RequestGroup{Resources: res("VCPU:4")}})
	newest(s, ProviderFilter{Name: "cn2"})
	newest(s, ProviderFilter{Name: "nope"})

	patch := func(s *Snapshot, id int64, updated time.Time) *Snapshot {
		old, _ := s.ProviderByID(id)
		p := *old
		p.Generation++
		p.UpdatedAt = updated
		return s.WithProviders(map[int64]*ProviderRecord{id: &p}, nil, s.Names())
	}
	forward := patch(s, 2, base.Add(7*time.Hour))
	if forward.newest.t.Load() == nil {
		t.Error("a patch forward did not carry the newest change")
	}
	if got := newest(forward, ProviderFilter{}); !got.Equal(base.Add(7 * time.Hour)) {
		t.Errorf("after cn2 changed: %v", got)
	}
	back := patch(forward, 2, base.Add(2*time.Hour))
	if back.newest.t.Load() != nil {
		t.Error("a patch that moved a change time back carried the newest change")
	}
	newest(back, ProviderFilter{})
	gone := back.WithProviders(nil, map[int64]bool{3: true}, s.Names())
	if got := newest(gone, ProviderFilter{}); !got.Equal(base.Add(3 * time.Hour)) {
		t.Errorf("after the newest provider went: %v", got)
	}
}
