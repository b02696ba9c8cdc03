// Package apiclient is the one client of the Placement HTTP API (Berth's
// or OpenStack Placement's) that Berth's programs share: the CLI
// (cmd/berth/cli), the load tool (cmd/berth-load/load), the read-by-read
// comparison of two endpoints (internal/placementdiff) and the failover
// soak (cmd/berth-soak/soak).
//
// It owns what every request of theirs has in common: the endpoint's base
// URL (a URL, or a bare "host:port" taken as http://), the X-Auth-Token
// and OpenStack-API-Version headers, the JSON encoding of a body, reading
// the whole answer and decoding it, and Placement's error body
// ({"errors": [{status, title, detail, code, request_id}]}, and the two
// other shapes a refusal in front of Placement takes) decoded into one
// error type, *Error. It sends through an *http.Client its caller hands it,
// so the load tool keeps its own transport, and leaves timeouts to that
// client or to the request's context.
//
// Files: client.go (Config, Client, Response, the requests), error.go
// (Error, NoAnswerError, IsStatus and the rendering of an error as one
// readable line).
package apiclient
