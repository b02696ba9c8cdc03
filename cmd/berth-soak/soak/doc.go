// Package soak is a long failover benchmark, not a test: claims and
// deletes through three berthd processes on a Patroni cluster
// (internal/testing/patronitest), one berthd killed (SIGKILL) and restarted
// every KillEvery, one failover of the primary (kill -9 of its
// postmaster) in the middle. Clients retry a request whose outcome they
// did not learn with the same request, as a scheduler should. It
// reports claims per second over time, errors by kind, the time without
// service, and a final audit through the API (httpapi/client): every
// claim a client holds is there exactly as it was told, nothing else is
// allocated, no provider is over capacity.
//
// It is the one package outside tests that imports a harness of
// internal/testing/: starting a Patroni cluster and failing it over is
// the whole program (cmd/berth-soak), and the import rules at the
// module's root (imports_test.go) name it as their one exception.
//
// Files: soak.go (the run, its clients, the killer and the audit).
package soak
