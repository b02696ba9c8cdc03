// Package client is the Go client of Berth's HTTP API: OpenStack
// Placement's routes and Berth's own (claims, capacity, evacuation,
// limits, the audit, scheduling policies, scriptlets, shadows). It
// imports only the standard library, so a scheduler can import it (or
// copy it) without Berth's server. The API it speaks is described by the
// server's GET /openapi.json; docs/api.md shows both.
//
// A Client speaks to one endpoint (Config: its URL, a bare "host:port"
// meaning http://, the X-Auth-Token, the microversion, "latest" by
// default). Typed calls cover Berth's routes a scheduler makes (Claim,
// Reschedule, Move, ConfirmMove, RevertMove, StoredClaim, RenewLease,
// ConfirmLease, Capacity, Evacuate, Restore), the Placement calls it
// makes (providers, inventories, allocation candidates, allocations,
// usages), and, through Client.Admin, an operator's (limits, the audit,
// policies, scriptlets, shadows); Do, Send and JSON send any request. A refusal is an *Error carrying the status and
// Placement's error body ({"errors": [{status, title, detail, code,
// request_id}]}, and the two other shapes a refusal in front of
// Placement takes), decoded when asked (Code, RequestID, Items); a
// request that got no answer is a *NoAnswerError.
//
// Claim writes are retried, with the same body, after no answer or a 503
// (Config.ClaimRetries): the server recognises a repeated claim by its
// body and answers it with the first one's outcome, so a lost answer
// never claims twice. Nothing else is sent twice. Timeouts are the
// *http.Client's or the context's.
//
// Berth's own programs speak through it too: the CLI (cmd/berth/cli),
// the load tool (cmd/berth-load/load), the comparison of two endpoints
// (internal/placementdiff) and the failover soak (cmd/berth-soak/soak).
//
// Files: client.go (Config, Client, Response, the requests), retry.go
// (which requests are retried, and how), error.go (Error, NoAnswerError,
// IsStatus, an error as one readable line), claims.go (the claims
// routes), berth.go (capacity, evacuation), admin.go (Admin: the
// operator's routes), placement.go (Placement's calls).
package client
