// Package resources is Placement's data in the ledger: resource
// providers and what they carry (Providers), consumers and what they hold
// (Allocations), and the writes of allocations, Placement's and claims'
// alike.
//
// The files, by job:
//
//   - Providers: provider.go (providers and their trees), inventory.go,
//     resourceclass.go, trait.go, aggregate.go, usage.go, overcapacity.go,
//     standard.go (the standard classes and traits, inserted at Open);
//     provider_pipeline.go (a provider's create or delete, and a
//     replacement of its inventories, aggregates or traits, as one
//     pipeline of statements in one round trip, falling back to the
//     general path when it writes nothing), provider_writers.go (the
//     writers that send such pipelines queued together, on
//     core.GroupWriter);
//   - Allocations, in the order a claim's write goes: allocation.go (the
//     reads, and the general write: plan, lock, clear and check, count,
//     write), consumer.go and consumer_details.go, quota_check.go (the limits
//     checked and the usage counted in every write of allocations),
//     claim_write.go (ClaimWrite, and the one-round-trip write of a new
//     consumer's allocations, with the array arguments and the answers of
//     the claims' statements, encoded and decoded without pgx's
//     reflection), claim_writers.go (the claims queued while
//     the writers are busy, written together by one statement),
//     reshape.go; gang_write.go (GangWrite, a gang's members in one
//     transaction on the general path, and GangRelease, the reaper's
//     release of a gang whose leases ran out);
//   - Placement's quirks: pyorder.go (Python's set order).
//
// A claim's write records, in its transaction, what claims remember
// (ledger/claimrecords' functions); the exported functions that take a
// core.Txn (LockConsumers, DeleteConsumer, LookupProvider) serve the
// ledger's other parts the same way.
package resources
