// Package ledger is Berth's PostgreSQL store. It owns every SQL statement and
// the only import of pgx: resource providers and their trees, inventories,
// resource classes, traits, aggregates, consumers, allocations and usages,
// and what the claims and the scheduling catalogue store. It loads the
// in-memory snapshot that allocation candidates are computed from and
// keeps it fresh (Store.Snapshot); the computing is package ledger/engine's,
// which knows nothing of the database, and whose types the Store's reads
// return as they are.
//
// Every mutation runs in one transaction (withTx, tx.go, the one
// transaction helper) and either applies whole or not at all. Errors leave
// the package as internal/fault's kinds: driver errors are translated at
// one boundary (dbError, errors.go: withTx, the reads of db.go and the
// one-trip pipelines call it), so no caller inspects a driver error.
//
// Capacity is guarded by row locks: every write that changes a provider's
// inventory or usage locks the provider's row (SELECT ... FOR UPDATE)
// before it reads capacity and usage, so checks and writes cannot
// interleave. Writes take their locks in one order — projects, users and
// consumer types (by name), consumers (by uuid), providers (by id), then
// the projects' usage counters (by project id, then resource) — so
// concurrent writers queue instead of deadlocking. Creating a row with a
// unique key (a new project name, a new counter) takes a lock as locking
// one does: a concurrent creator of the same key waits for the
// transaction's end; so creations keep the same order. Names sort in byte
// order (COLLATE "C" in SQL, whatever the database's collation, as Go
// sorts). A writer locks the counters it changes in one statement, in that
// order, after its providers' locks (quota.go lists the statements).
// The claim fast path (claim_write.go) creates no name, and creates its
// new consumer after its providers' locks: two writes of one new consumer
// at the same moment are the one case where writers can deadlock (and one
// of them is retried). The lease reaper locks the consumers it writes, in
// uuid order, before it checks the lease; the names it writes exist.
//
// Quotas: every statement that writes allocations also counts what it
// changes in its projects' usage counters (migration 0009), and a write
// with a Quota checks its projects' limits under the lock of the counters
// it adds to, in its own transaction (quota.go), so a limit holds
// whatever else is written at the same moment, from any process. A new
// way of writing allocations must count them too (quota.go lists the
// ways; TestProjectUsagesFollowEveryWrite recounts after each).
//
// The files, by job:
//
//   - the store and its transactions: store.go (Open, Config), tx.go
//     (withTx), db.go (reads outside transactions), errors.go (the
//     boundary), migrate.go, standard.go (standard classes and traits),
//     health.go, metrics.go;
//   - the entities, one file each: provider.go, inventory.go,
//     resourceclass.go, trait.go, aggregate.go, consumer.go,
//     consumer_details.go, allocation.go (the general allocation write:
//     plan, lock, clear and check, count, write), usage.go,
//     project_usage.go (usage per project, paged, for the console),
//     reshape.go, overcapacity.go,
//     placement_keys.go, state.go (reported provider state),
//     evacuation.go (evacuated root providers, which claims avoid), and
//     what the
//     scheduling catalogue stores: policy.go, scriptlet.go, config.go,
//     shadow.go (active shadows and their counts);
//   - quotas: quota.go (the check of a write against its projects'
//     limits, the usage counters), limits.go (the limits Berth keeps);
//   - the allocation audit: audit.go (the kinds of finding and their page
//     queries), audit_fix.go (a finding's fix, re-checked in one
//     transaction);
//   - a claim's write, in the order it goes: claim_write.go (ClaimWrite, and
//     the one-round-trip write of a new consumer's allocations), then
//     claim_batch.go (claims queued together), group_commit.go (the group
//     writer that batches claims and provider writes alike), replication.go
//     (commits the synchronous standby did not confirm; the primary of a
//     multi-host URL), and claim_records.go (what claims remember: retry
//     records, moves in progress, failed providers, and each consumer's
//     stored claim with its lease), claim_leases.go (stored claims outside
//     a claim's transaction: read, renew or confirm, the expired leases,
//     the advisory lock of the lease reaper);
//   - provider writes in one round trip: provider_fast.go, grouped by
//     provider_group.go;
//   - the snapshot: candidates.go (the engine's reads through a fresh
//     snapshot), snapshot_cache.go (loading it and keeping it fresh),
//     changelog.go (catching it up with every process's commits through
//     the change log, and trimming the log), notifier.go (telling the
//     other processes that something changed: a hint), cloud.go (what
//     scheduler units and scriptlets ask about the cloud);
//   - Placement's quirks: pyorder.go (Python's set order), uuid.go.
package ledger
