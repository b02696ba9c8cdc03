// Package keystone validates OpenStack Keystone tokens for berthd's
// `--auth keystone`, as keystonemiddleware's auth_token does for
// Placement: each X-Auth-Token (and X-Service-Token) is checked with
// Identity v3's GET /v3/auth/tokens (X-Subject-Token), authenticated as
// Berth's own service user, and turned into an Identity (user, project,
// domain, system scope, roles with the implied ones Keystone adds, expiry).
//
// It owns Berth's service session (password or application credential,
// fetched at start and renewed before it expires), a bounded LRU cache of
// validated tokens (each kept at most the cache TTL and never past the
// token's expiry, keyed by the token's SHA-256, never the token itself),
// and the one-validation rule: concurrent requests with one unknown token
// share one Keystone round trip (singleflight).
//
// With --limits-source keystone it also reads Keystone's unified limits
// of one service (limits.go: LimitsReader, the registered limits and the
// project limits, with a system-scoped token of the same service user,
// as oslo.limit reads them); package quota caches them.
//
// Libraries: gophercloud v2 for the service session (password and
// application-credential authentication, re-authentication on a 401, the
// token's expiry) and for sending the validation request with that
// session's token; hashicorp/golang-lru/v2 for the cache;
// golang.org/x/sync/singleflight for sharing validations.
//
// Errors are of three kinds, which httpapi maps to statuses: ErrNoToken
// and ErrInvalidToken (401), ErrUnavailable (Keystone unreachable or
// answering 5xx, or Berth's session refused: 503), and ErrCredentials
// (Berth's own credentials refused at start: berthd does not start).
package keystone
