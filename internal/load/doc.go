// Package load drives the Placement HTTP API of any endpoint (Berth or
// OpenStack Placement) to seed benchmark data and time it: allocation
// candidate queries over flat compute nodes, Placement's perfload nested
// trees, a wide tree that makes granular queries explode, and concurrent
// two-step claims with an overcommit check afterwards.
//
// It owns nothing on the server: it only speaks HTTP with the standard
// library client, so the same run can target both implementations. Every
// loop it runs is bounded by a count or a duration and stops by itself.
// Provider and aggregate UUIDs are derived from fixed names (NameUUID) so
// that reruns are idempotent and queries can name aggregates without a
// lookup.
package load
