// Package httpapi serves the OpenStack Placement API (microversions 1.0 to
// 1.39) and Berth's extensions over echo. It owns routing, microversion
// negotiation, authentication (noauth2, static tokens, or the identity
// headers of an authenticating proxy), policy enforcement (the rules and
// their evaluation are package authz's), CORS, request validation (JSON
// schemas whose error messages match Placement's), and the mapping of
// errors to Placement's error body format. It holds no state of its own:
// every request is answered from the ledger.
package httpapi
