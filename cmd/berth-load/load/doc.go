// Package load drives the Placement HTTP API of any endpoint (Berth or
// OpenStack Placement) to seed benchmark data and time it: allocation
// candidate queries over flat compute nodes, Placement's perfload nested
// trees, Placement's nested-perfload gate job as the gate runs it (its
// trees, its query, its Apache Benchmark throughput: PerfloadParams), a
// wide tree that makes granular queries explode, and concurrent
// claims (two-step, or Berth's POST /claims; optionally in rounds released
// between, see ClaimsParams) with an overcommit check afterwards.
//
// It owns nothing on the server: it only speaks HTTP/1.1, so the same run
// can target both implementations. Requests are built, sent and read by
// httpapi/client (client.go adds the per-request timeout, the expected
// statuses and the request count); kept-alive ones go through a small
// transport of its own (transport.go), because the tool shares the machine
// it measures and net/http's Transport costs goroutine hand-offs per
// request. Every loop it runs is bounded by a count or a duration and
// stops by itself.
// Provider and aggregate UUIDs are derived from fixed names (NameUUID) so
// that reruns are idempotent and queries can name aggregates without a
// lookup.
package load
