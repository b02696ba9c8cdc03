// Package claims selects and claims resources in one step (POST /claims):
// it takes one snapshot from the ledger (snapshot.Cache.Snapshot), asks the
// engine (ledger/engine) for the allocation candidates in it, removes
// those on excluded providers or off the target, has the scheduling
// policy filter, score and order the rest, and writes the best
// candidate's allocations through resources.Allocations.ClaimWrite, one
// transaction per attempt. Claims are optimistic: the write re-checks
// capacity and the consumer generation under row locks in PostgreSQL, and
// when it finds the capacity gone (another claim won the race, or the
// snapshot was stale) the claim moves on to the next ranked candidate on
// another root, a bounded number of times. No lock is held between the
// ranking and the write. A claim that places nothing says why with a
// *NotPlacedError whose steps count what each step removed. A claim that
// found no candidate may preempt: displace preemptible consumers of
// strictly lower priority, in its write's transaction (preempt.go,
// docs/preemption.md).
//
// A gang (Gangs, gang.go: POST /claims with members) is placed whole or
// not at all: the engine simulates it in each domain (an aggregate of
// root providers), the domains that hold every member are ranked by the
// gang's scheduling policy and its scriptlet (gang_rank.go), and the best
// is written in one transaction (resources.Allocations.GangWrite); its
// members'
// leases are renewed, confirmed and released together. A gang may name
// levels to fall back to (a rack, then a block) and a minimum count (a
// domain holding at least that many members will do when none holds
// all).
//
// The package also reschedules (remembering, in PostgreSQL, every
// provider a consumer failed on), and moves consumers the way Nova
// migrates: the source allocations go to a migration consumer, the
// destination is claimed for the instance, and the move is later
// confirmed or reverted. Every claim stores, with its allocations, its
// request and lease (the stored claim a reschedule or move redoes); a
// claim with a lease is provisional until confirmed, and the lease reaper
// releases it (or reverts its move) when the lease runs out. It evacuates
// hosts: a root provider marked evacuated (claims avoid it) has every
// consumer moved away, several at once, each move with reason
// evacuation. It is the only writer of claim transactions.
//
// The Claimer is built by New with its dependencies (Deps): the ledger,
// the catalogue of stored policies (claims/catalog, through PolicySource),
// the scheduler's view of the cloud (claims/cloud, through Cloud), the
// projects' limits (claims/quota, quota.Source: every write is checked
// against them by the ledger, in its own transaction, docs/quotas.md) and
// the runner of shadows (claims/shadow); cmd/berthd/compose wires
// them.
//
// The files follow a claim's path: claim.go (Claim, where a claim
// enters; claim, which runs it; its span and metrics), idempotent.go (the
// retry key and record that make Claim, Reschedule and Move safe to retry
// after an unknown outcome), selection.go (the snapshot, the candidates,
// the ranking, directly on the engine's records when the policy allows),
// candidates.go (the engine's answer as the scheduler's candidates, all
// of them or those a direct ranking kept), write.go (the write attempts,
// the answer), answer.go (the answer as the API gives it, encoded once
// for the retry record and the answer). Beside it: claimer.go (the
// Claimer, its configuration and dependencies), types.go (Params,
// Result), errors.go (a claim that placed nothing), preempt.go (what a
// claim that placed nothing may preempt, and the victims' side), move.go
// (reschedule, move, confirm, revert), lease.go (stored claims, leases,
// their reaper and its telemetry), evacuate.go (evacuate a host, restore
// it), quota.go (the limits a write is checked against, and a dry run's
// report of the check), refusals.go (the recent claims that placed
// nothing, in memory, for the operator console), shadow.go (a decided
// claim handed to the active shadows, claims/shadow), gang.go (gangs:
// choose, write, release), gang_retry.go (a gang's retry answered as the
// first).
package claims
