package snapshot

import "time"

// SnapshotListening reports whether the cache's change listener is
// connected. Until it is (at start, and after the connection is lost),
// every read of the snapshot catches up with the change log, claims'
// rankings too, since no notification wakes a catch-up in the
// background.
func (c *Cache) SnapshotListening() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listening
}

// SnapshotStats counts the snapshot's reloads (see cache.go).
type SnapshotStats struct {
	// FullReloads read every provider; PartialReloads only those
	// changed; FailedReloads ended in an error (readers then get the
	// error, and the next one tries again).
	FullReloads, PartialReloads, FailedReloads int64
	// LastFullLoad is when the last full reload ended; zero before the
	// first. The periodic refresh (Options.Refresh) reloads fully,
	// repairing whatever a missed notification left stale, so its age is
	// how stale the snapshot can be at worst.
	LastFullLoad time.Time
	// Listening is whether the change listener hears other processes'
	// writes now.
	Listening bool
}

// SnapshotStats returns the snapshot's reload counters.
func (c *Cache) SnapshotStats() SnapshotStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Listening = c.listening
	return st
}

// Work reports what the cache has done and has left to do: its
// catch-ups with the change log, its partial and full reloads, and how
// many providers it holds marked changed (-1: everything), which the next
// read reloads. For tests and diagnostics.
func (c *Cache) Work() (catchUps, partial, full int64, stale int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stale = len(c.dirty)
	if c.all {
		stale = -1
	}
	return c.catchUps, c.partialLoads, c.fullLoads, stale
}
