// Package berthapi serves Berth's own routes, its extensions to
// Placement's API (each at every microversion): claims (claim.go, where
// POST /claims starts; gang.go, a claim of a gang's members;
// claim_moves.go; stored_claim.go), host evacuation,
// the capacity question, what agents report of providers (provider
// state, placement keys), scheduling policies with their units and
// balancer, scriptlets and their shadows, the server-wide settings, the
// allocation audit and the projects' limits. One handler type per route
// family holds only the components it uses, through small interfaces;
// each decodes its request through package wire (a claim's body is
// read by wire and decoded in one pass by claim_body.go, wire's decoding
// and schema wording any refusal), calls one component (the claimer, the
// catalogue, the ledger, the limits' source) and answers through wire. A claim's selection fields are read as GET
// /allocation_candidates reads its query (package placement).
// BodySchemas and QuerySchemas (route_schemas.go) list the schemas the
// routes validate their bodies and query strings with, for the API's
// description.
package berthapi
