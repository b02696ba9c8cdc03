// Package integration holds Berth's end-to-end tests; it has no code of its
// own. They drive the Placement API as clients do: in process (an
// httpapi.Server over a ledger.Store on a ledgertest database, through
// httptest) for the fuzz target FuzzAPI and the "bad input changes
// nothing" tables, and over HTTP against the real berthd binary for the
// compute-service scenario and the concurrency test. Every test gets its own
// database and talks to loopback only; none asserts on timing.
package integration
