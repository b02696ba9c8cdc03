// Package shadow runs shadows: a candidate scriptlet or scheduling policy
// ranked beside every real claim that the default policy ranked, on the
// same candidates and request, without affecting the claim. The catalogue
// (claims/catalog) builds the active shadows from the ledger and hands
// them to the Runner (Runner.Set); the Claimer (claims) hands the Runner
// each claim's decision when the claim is done (Runner.Submit), which
// costs the claim a send on a bounded queue and nothing else: a worker
// ranks the shadows off the claim's path, within the shadow's own step,
// memory and time budgets, and a full queue drops the job and counts it.
//
// What a shadow would have done is counted in memory per replica (claims
// seen, agreed, disagreed, would refuse and why, failures by kind, time,
// the last disagreements) and added to the counts in PostgreSQL in one
// batched transaction every flush interval (scheduling.Catalogue.ShadowFlush), so
// every replica contributes and a restart loses at most one interval.
//
// Files: shadow.go (the Runner: the queue, the workers, the tallies, the
// flush), judge.go (one shadow's run on one claim, and its verdict).
package shadow
