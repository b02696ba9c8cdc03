// Package ledger is Berth's PostgreSQL store. It owns every SQL statement and
// the only import of pgx: resource providers and their trees, inventories,
// resource classes, traits, aggregates, consumers, allocations and usages.
// It loads the in-memory snapshot that allocation candidates are computed
// from and keeps it fresh (Store.Snapshot); the computing is package
// ledger/engine's, which knows nothing of the database.
//
// Every mutation runs in one transaction (see withTx, the one transaction
// helper) and either applies whole or not at all. Errors leave this package as *fault.Error values
// whose Kind is one of fault.ErrNotFound, fault.ErrConflict or fault.ErrInvalid, so callers
// map them to HTTP statuses with errors.Is and never inspect driver errors.
//
// Capacity is guarded by row locks: every write that changes a provider's
// inventory or usage locks the provider's row (SELECT ... FOR UPDATE)
// before it reads capacity and usage, so checks and writes cannot
// interleave. Writes take their locks in one order — projects, users and
// consumer types (by name), consumers (by uuid), then providers (by id) —
// so concurrent writers queue instead of deadlocking.
package ledger
