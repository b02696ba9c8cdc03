// Package claimrecords keeps what claims remember between calls: the
// requests and answers of claims, for their retries; the move in progress
// per consumer; the providers each consumer failed on; and each
// consumer's stored claim with its lease (records.go). Records reads them
// and renews or confirms a lease outside a claim's transaction, lists the
// leases that ran out and holds the advisory lock of the lease reaper
// (leases.go); it records the members of each gang (gangs.go: a gang's
// leases change together); the functions that take a core.Txn (WriteRequest,
// WriteState, WriteMove, ForgetMove, SettleStates, CheckLeaseExpired,
// WriteGang)
// write them in the transaction of the write they go with
// (ledger/resources' ClaimWrite and Placement's writes of allocations).
package claimrecords
