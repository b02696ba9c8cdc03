// Package httpapi is the API server: it serves the OpenStack Placement
// API (microversions 1.0 to 1.39) and Berth's extensions over echo.
//
// This package is the server itself: Config and New (server.go), which
// build one handler per route family over the components they are given
// (the ledger, the claimer, the catalogue, the cloud view, the projects'
// limits; cmd/berthd/compose builds those); the request chain (chain.go:
// ServeHTTP and every step a request takes, in the order it takes them:
// the request id, telemetry, microversion negotiation, the deadline,
// CORS, routing, authentication, the method and content checks, the
// route's microversions, its policy rule, Accept, the admission slot and
// the handler; at its end, the request's metrics' instruments and
// tracer), with what its steps call: auth.go and keystone.go (authentication by
// noauth2, static tokens, an authenticating proxy's headers or Keystone,
// and the policy targets; the rules are package authz's) and cors.go;
// the one route table (routes.go: method, path,
// microversions, policy rule, handler, and whether it insists on JSON and
// is bounded by admission control); the one table from error kinds to
// statuses (errors.go); the API's description, GET /openapi.json
// (openapi.go: an OpenAPI 3.1 document built from the route table, the
// request schemas the handlers validate with, and the answers of
// openapi_responses.json); and the probes and /metrics (health.go). It
// holds no state of its own.
//
// Its parts, each a package beneath it:
//
//   - wire: the wire format of Placement's Python service: request
//     bodies read, bounded, parsed as json.loads and decoded (one entry
//     point, Bodies.Decode), answers written as Placement writes them,
//     errors in Placement's and webob's formats (wire.Error), the
//     microversions, the Accept header and query strings.
//   - placement: Placement's routes (providers, inventories, usages,
//     resource classes, aggregates, traits, allocations, reshapes,
//     allocation candidates) and the candidate query they and Berth's
//     claims read.
//   - berthapi: Berth's own routes (claims, where POST /claims starts at
//     claim.go; evacuation, capacity, provider state, placement keys,
//     scheduling policies, scriptlets, shadows, settings, the audit, the
//     limits).
//   - console: the read-only operator console at /ui.
//   - admission: what the server lets in: the listener wrapper, the
//     slots of expensive requests, the budget of large bodies.
//   - client: the public Go client of the API (standard library only),
//     which Berth's own programs use too.
//   - apitest: the harness of these packages' tests.
//
// Handlers only translate HTTP: they decode and check the request
// through wire, call one method of a component, and answer through wire.
package httpapi
