// Package engine is Berth's candidate engine: the in-memory snapshot of
// the providers (trees, inventories with usage, traits, aggregates, as
// integer ids in flat arrays) and everything computed from it without a
// database: allocation candidates (Snapshot.Candidates), provider
// listings (Snapshot.ProvidersMatching, Snapshot.ProviderList and its
// Last-Modified, newest.go), the capacity count
// (Snapshot.Capacity), the providers over capacity (Snapshot.OverCapacity),
// the console's aggregates (utilisation.go: totals per class, per
// aggregate or trait, the roots' utilisation, fragmentation) and, for a request with no candidate, why each root
// provider has none (Snapshot.Shortfall), and where a gang of members fits
// whole in one domain, each member taking capacity from those after it
// (Snapshot.Gang, gang.go).
//
// It imports nothing of Berth's and no database driver. The ledger loads
// snapshots from PostgreSQL and keeps them fresh (snapshot.Cache.Snapshot);
// tests and benchmarks build them in memory with New. A Snapshot is
// immutable and safe for concurrent use; a change makes a new one that
// shares what did not change.
//
// Answers are advisory: every allocation write re-checks capacity in the
// database, so a stale snapshot can cost a failed write, never an
// overcommit.
package engine
