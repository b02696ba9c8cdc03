// Package ledger is Berth's PostgreSQL store, opened: Open connects the
// pool, makes sure the standard resource classes and traits exist and
// builds the ledger's parts over one ledger/internal/core, which they all
// share; the Store holds the parts as fields (store.Providers,
// store.Allocations, ...), and a caller uses the part it needs. This
// package adds Open's Config, the Store's lifecycle (Close, Ping,
// OnChange), its health (PoolStats, SchemaStatus: health.go), its metrics
// (metrics.go) and Migrate.
//
// Only the packages under ledger/ import pgx and speak SQL, and every SQL
// statement sits next to the Go that runs it. Every exported method of the
// Store and of its parts answers in internal/fault's kinds: driver errors
// are translated at one boundary (core.DBError: core.Core.WithTx, core.DB's
// reads and the one-round-trip pipelines call it), so no caller inspects a
// driver error.
//
// The packages, by job:
//
//   - ledger/internal/core: the plumbing every part shares, one of each:
//     the pool, the one transaction helper (WithTx and ReadTx, tx.go), the
//     reads outside transactions (db.go), the driver-error boundary
//     (errors.go), commits the synchronous standby did not confirm and the
//     primary of a multi-host URL (replication.go), the group writer that
//     sends queued writes together (group_writer.go), uuid spellings
//     (uuid.go), and Notify, which runs after every commit that changed
//     providers: the snapshot first, then the change hooks (OnChange);
//   - ledger/resources: Placement's data. Providers: providers and their
//     trees, inventories, resource classes, traits, aggregates, usages,
//     and the provider writes sent as one pipeline. Allocations: consumers
//     and their allocations, the reshape, and a claim's write (ClaimWrite,
//     claim_write.go), with the quota check and the usage counting that run
//     in every write of allocations (quota_check.go), and the consumers a
//     claim may preempt and displaces in its write (preempt.go);
//   - ledger/claimrecords: what claims remember (retry records, moves in
//     progress, failed providers, stored claims and their leases, the
//     record of each preempted consumer: preemptions.go): read and
//     renewed outside a claim's transaction (Records), and written in it
//     by the functions the claim write calls;
//   - ledger/quotas: the limits Berth keeps and the projects' usage
//     counters (Quotas);
//   - ledger/audit: the allocation audit's pages and fixes (Auditor);
//   - ledger/snapshot: the in-memory snapshot (Cache), kept fresh by the
//     change log and the notifications between processes, and the
//     engine's reads through it (reads.go);
//   - ledger/scheduling: what the scheduling catalogue stores (policies,
//     scriptlets, config, shadows: Catalogue), and what agents report of
//     the providers and scheduler units ask of the cloud (provider state,
//     placement keys, evacuation, instances: Cloud);
//   - ledger/engine: the candidate engine, which knows nothing of the
//     database, and whose types the parts' reads return as they are;
//     ledger/placementdb: OpenStack Placement's schema, for import and
//     export; ledger/ledgertest and ledger/internal/dbwork: tests' databases.
//
// Every mutation runs in one transaction (core.Core.WithTx) and either
// applies whole or not at all; a transaction never spans two calls, and
// one that writes the records of several parts (a claim's allocations,
// its retry record and its stored claim) is one transaction of the part
// whose write it is, calling the others' functions with its core.Txn.
//
// Capacity is guarded by row locks: every write that changes a provider's
// inventory or usage locks the provider's row (SELECT ... FOR UPDATE)
// before it reads capacity and usage, so checks and writes cannot
// interleave. The lock order, which every write of every part keeps, so
// that concurrent writers queue instead of deadlocking:
//
//  1. projects, users and consumer types, by name (created if new);
//  2. consumers, by uuid (resources.LockConsumers), each one's stored
//     claim after it when a write checks its lease
//     (claimrecords.CheckLeaseExpired);
//  3. providers, by id (resources' lockProviders, and the first statement
//     of every one-round-trip pipeline);
//  4. the projects' usage counters, by project id, then resource
//     (resources/quota_check.go).
//
// Creating a row with a unique key (a new project name, a new counter)
// takes a lock as locking one does: a concurrent creator of the same key
// waits for the transaction's end; so creations keep the same order.
// Names sort in byte order (COLLATE "C" in SQL, whatever the database's
// collation, as Go sorts). A writer locks the counters it changes in one
// statement, in that order, after its providers' locks
// (resources/quota_check.go lists the statements). The claim fast path
// (resources/claim_write.go) creates no name, and creates its new
// consumer after its providers' locks: two writes of one new consumer at
// the same moment are the one case where writers can deadlock (and one
// of them is retried). A gang's write (resources/gang_write.go) takes the
// general path for all its members at once, in the same order. The lease
// reaper locks the consumers it writes, in uuid order, before it checks
// the lease (of every member, for a gang); the names it writes exist.
// A claim that preempts takes its names' locks, then its own consumer's
// and its victims' in uuid order, re-checks the victims, then writes as
// the general path does (resources/preempt.go).
//
// Quotas: every statement that writes allocations also counts what it
// changes in its projects' usage counters (migration 0009), and a write
// with a Quota checks its projects' limits under the lock of the counters
// it adds to, in its own transaction (resources/quota_check.go), so a
// limit holds whatever else is written at the same moment, from any
// process. A new way of writing allocations must count them too
// (quota_check.go lists the ways; TestProjectUsagesFollowEveryWrite
// recounts after each).
package ledger
