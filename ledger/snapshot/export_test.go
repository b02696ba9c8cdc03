package snapshot

// SetListening tells c that its change listener is (dis)connected, as
// the listener does, so tests can put a cache in the state it is in while
// PostgreSQL is away without stopping PostgreSQL.
func SetListening(c *Cache, on bool) {
	c.mu.Lock()
	c.listening = on
	c.mu.Unlock()
}

// Listening reports whether c's change listener is connected.
func Listening(c *Cache) bool { return c.SnapshotListening() }

// SnapshotStale reports how many providers c has marked dirty (-1:
// everything).
func SnapshotStale(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all {
		return -1
	}
	return len(c.dirty)
}
