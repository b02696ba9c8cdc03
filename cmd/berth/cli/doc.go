// Package cli is berth, the operator's command line client of a Berth (or
// any Placement) server: capacity, usage, provider trees with usage bars,
// dry-run claims that explain themselves, host evacuation, scriptlets,
// scheduling policies, server configuration, the allocation audit, and the
// load tool (cmd/berth-load/load) as "berth bench".
//
// It owns only the client side: it sends its requests through
// httpapi/client at "OpenStack-API-Version: placement latest" with
// X-Auth-Token (client.go adds the CLI's words for a request that got no
// answer: --url, --timeout), renders answers as tables (or the server's
// JSON with -o json) and Placement error bodies as one readable line
// (client.Error). Main is the whole program; cmd/berth only calls it,
// and tests call it in process.
package cli
