package ledger

import "context"

// Listening reports whether s's change listener is connected.
func Listening(s *Store) bool { return s.Snapshots.SnapshotListening() }

// PoolExec runs one statement on s's connection pool, so that tests can
// see the pool's session settings (statement_timeout) at work.
func PoolExec(ctx context.Context, s *Store, sql string) error {
	_, err := s.core.DB.Exec(ctx, sql)
	return err
}

// ClaimBatches reports how many transactions s's claim writers sent and
// how many claims they held.
func ClaimBatches(s *Store) (batches, claims int64) {
	batches, claims, _ = s.Allocations.WriterStats()
	return batches, claims
}

// QueuedClaims reports how many claims wait for s's claim writers.
func QueuedClaims(s *Store) int {
	_, _, queued := s.Allocations.WriterStats()
	return queued
}

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
	catchUps, partial, full, _ = s.Snapshots.Work()
	return catchUps, partial, full
}
