// Package httpapi serves the OpenStack Placement API (microversions 1.0 to
// 1.39) and Berth's extensions over echo. It owns the route table
// (routes.go: method, path, microversions, policy rule, handler),
// microversion negotiation, authentication (noauth2, static tokens, or the
// identity headers of an authenticating proxy), policy enforcement (the
// rules and their evaluation are package authz's), CORS, request
// validation (schemas checked by internal/jsonschema, whose messages match
// Placement's), and the mapping of errors to Placement's error body
// format. Its handlers only translate HTTP: they decode and check the
// request, call one method of a component they are given (the ledger, the
// claimer, the catalogue, the cloud view; internal/daemon/compose builds
// them) and render the answer. It holds no state of its own.
package httpapi
