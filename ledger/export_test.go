package ledger

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SetListening tells s's snapshot cache that its change listener is
// (dis)connected, as the listener does, so tests can put a Store in the
// state it is in while PostgreSQL is away without stopping PostgreSQL.
func SetListening(s *Store, on bool) {
	s.snap.mu.Lock()
	s.snap.listening = on
	s.snap.mu.Unlock()
}

// Listening reports whether s's change listener is connected.
func Listening(s *Store) bool { return s.SnapshotListening() }

// PoolExec runs one statement on s's connection pool, so that tests can
// see the pool's session settings (statement_timeout) at work.
func PoolExec(ctx context.Context, s *Store, sql string) error {
	_, err := s.db.Exec(ctx, sql)
	return err
}

// SnapshotStale reports how many providers s's snapshot cache has marked
// dirty (-1: everything).
func SnapshotStale(s *Store) int {
	s.snap.mu.Lock()
	defer s.snap.mu.Unlock()
	if s.snap.all {
		return -1
	}
	return len(s.snap.dirty)
}

// ClaimBatches reports how many transactions s's claim writers sent and
// how many claims they held.
func ClaimBatches(s *Store) (batches, claims int64) {
	return s.claims.groups.Load(), s.claims.items.Load()
}

// QueuedClaims reports how many claims wait for s's claim writers.
func QueuedClaims(s *Store) int { return len(s.claims.queue) }

// SetGeneralWrites makes s write providers, inventories, aggregates and
// traits by the general path only (on) or fast path first (off), so that
// tests can compare the two. Call it before s is used.
func SetGeneralWrites(s *Store, on bool) { s.generalWrites = on }

// FastWrites reports how many provider writes s's fast paths committed.
func FastWrites(s *Store) int64 { return s.fastWrites.Load() }

// ProviderGroups reports how many groups s's provider writers sent and
// how many writes they held.
func ProviderGroups(s *Store) (groups, writes int64) {
	return s.trips.groups.Load(), s.trips.items.Load()
}

// QueuedProviderWrites reports how many provider writes wait for s's
// provider writers.
func QueuedProviderWrites(s *Store) int { return len(s.trips.queue) }

// OpenMuted opens a Store that sends no change notification, as a
// process killed between each commit and its notification: its peers
// learn of its writes from the change log alone.
func OpenMuted(ctx context.Context, cfg Config) (*Store, error) {
	cfg.muteNotifications = true
	return Open(ctx, cfg)
}

// SnapshotWork reports how many catch-ups, partial reloads and full
// loads s's snapshot cache has done.
func SnapshotWork(s *Store) (catchUps, partial, full int64) {
	s.snap.mu.Lock()
	defer s.snap.mu.Unlock()
	return s.snap.catchUps, s.snap.partialLoads, s.snap.fullLoads
}

// SendTraitsAgain sends the fast path of a traits write (generation, names)
// on the provider rpUUID first on dead, a connection whose server
// has ended it, where the send fails while pgx prepares its statements,
// and then through s alone, as a write whose group failed as a whole is
// sent again (provider_group.go). It returns the first send's error,
// and the second's with the generation it answered.
func SendTraitsAgain(ctx context.Context, s *Store, dead *pgx.Conn, rpUUID string, generation int64, names []string) (first error, next int64, err error) {
	stored, _ := storedUUID(rpUUID)
	var traits []Trait
	w := traitsReplaceTrip(stored, generation, names, &next, &traits)
	first = dead.SendBatch(ctx, w.b).Close()
	err = s.sendAlone(ctx, w)
	return first, next, err
}
