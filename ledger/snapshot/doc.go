// Package snapshot keeps the in-memory snapshot that allocation
// candidates are computed from fresh (Cache): it loads it (cache.go),
// applies this process's writes at commit and marks what else changed
// (core.Core.Notify calls it first), catches up with every process's
// commits through the change log and trims the log (changelog.go), tells
// the other processes that something changed and listens for their word
// (notifier.go, cache.go: a hint only), and answers the engine's reads
// through a fresh snapshot (reads.go). The computing is package
// ledger/engine's.
package snapshot
