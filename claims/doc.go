// Package claims selects and claims resources in one step: it asks the
// ledger for allocation candidates, has the scheduler policy filter, score
// and order them, and writes the best candidate's allocations through the
// ledger. Claims are optimistic: candidates come from the in-memory
// snapshot, and the write re-checks capacity and the consumer generation
// under row locks. When the write finds the capacity gone (another claim
// won the race, or the snapshot was stale), the claim moves on to the next
// ranked candidate on another root, a bounded number of times. A claim
// that places nothing explains why with a *NotPlacedError: no candidates,
// every candidate filtered out (with counts per filter), refused by the
// scriptlet, or conflicts on every attempt.
package claims
