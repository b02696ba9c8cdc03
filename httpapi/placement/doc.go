// Package placement serves OpenStack Placement's API: resource providers
// (provider.go, provider_list.go), their inventories (inventories.go,
// inventory_bodies.go), usages, resource classes, aggregates and traits,
// allocations (allocations.go, allocation_schemas.go) and reshapes, and
// allocation candidates (candidates.go), with a cache of their answers for
// a query asked again of an unchanged snapshot (candidates_cache.go). One
// handler type per route family holds what it asks of the ledger as a
// small interface of the part that answers it (resources.Providers,
// resources.Allocations, snapshot.Cache); each handler decodes its request
// through package wire, calls the ledger once and answers through wire.
// The candidate query (candidate_query.go, request_groups.go) is read
// here, from a query string or from the JSON of a claim's selection, for
// Berth's claims and capacity too. BodySchemas and QuerySchemas
// (route_schemas.go) list the schemas the routes validate their bodies and
// query strings with at the latest microversion, for the API's
// description.
package placement
