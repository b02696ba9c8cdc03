package httpapi

import (
	"net/http"

	"github.com/berthd/berth/ledger/scheduling"
	"github.com/labstack/echo/v4"
)

// route is one row of the route table.
type route struct {
	method string
	path   string
	// versions is the microversion range the route exists in; outside it
	// the route answers 404, as Placement does for routes that did not
	// exist yet.
	versions minors
	// rule is the policy rule the caller must pass (one of
	// authz.OperationRules).
	rule    string
	handler echo.HandlerFunc
	// flags say whether the route refuses an Accept header that rules
	// out JSON (406) and whether admission control bounds it.
	flags routeFlags
}

// minors is the range of microversions 1.first to 1.last; last 0 means
// up to the latest.
type minors struct{ first, last int }

// since is the range from 1.first to the latest.
func since(first int) minors { return minors{first: first} }

// routeFlags say how a route treats the Accept header and whether it is
// expensive.
type routeFlags uint8

const (
	// acceptAny: Accept is not looked at. As in Placement, the routes
	// that change things do not look at it (their errors are rendered in
	// whatever type the client prefers); nor do the GET routes that answer
	// no JSON.
	acceptAny routeFlags = 0
	// acceptJSON: the answer is JSON, and an Accept header that rules it
	// out is 406. Placement's GET routes do this.
	acceptJSON routeFlags = 1 << iota
	// bounded: the route's work grows with the cloud (candidates, claims,
	// lists), so admission control bounds how many run at once
	// (admission.Slots). One provider's allocations, usages or inventories
	// are not bounded: their size does not.
	bounded
)

// routes is the API: every route, the microversions it exists in, the
// policy rule that guards it and its handler, in one table, by family:
// Placement's resources (package placement), then Berth's claims and what
// they read of providers, and scheduling (package berthapi). Berth's
// routes exist at every microversion (Placement has no equivalent); their
// error bodies carry a "code" from 1.23 on, as for every route. A path's
// methods come in the order Placement declares them, which is the order
// of a 405's Allow header. The version document (GET /) and the API's
// description (GET /openapi.json, openapi.go) are public and are not in
// the table; the probes and /metrics are answered before routing
// (health.go), the console's paths by the console.
func (s *Server) routes() []route {
	const (
		get, put, post, del, patch = http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch
	)
	every := since(0) // every microversion
	p, b := &s.placement, &s.berth
	return []route{
		// Placement's API: resource providers and their inventories,
		// usages, aggregates and traits, resource classes, allocations,
		// allocation candidates and reshapes.

		// Resource providers.
		{get, "/resource_providers", every, "placement:resource_providers:list", p.providers.List, acceptJSON | bounded},
		{post, "/resource_providers", every, "placement:resource_providers:create", p.providers.Create, acceptAny},
		{get, "/resource_providers/:uuid", every, "placement:resource_providers:show", p.providers.Show, acceptJSON},
		{del, "/resource_providers/:uuid", every, "placement:resource_providers:delete", p.providers.Delete, acceptAny},
		{put, "/resource_providers/:uuid", every, "placement:resource_providers:update", p.providers.Update, acceptAny},

		// Inventories.
		{get, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:list", p.inventories.List, acceptJSON},
		{post, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:create", p.inventories.Create, acceptAny},
		{put, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:update", p.inventories.Replace, acceptAny},
		{del, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:delete", p.inventories.DeleteAll, acceptAny},
		{get, "/resource_providers/:uuid/inventories/:resource_class", every, "placement:resource_providers:inventories:show", p.inventories.Show, acceptJSON},
		{put, "/resource_providers/:uuid/inventories/:resource_class", every, "placement:resource_providers:inventories:update", p.inventories.Update, acceptAny},
		{del, "/resource_providers/:uuid/inventories/:resource_class", every, "placement:resource_providers:inventories:delete", p.inventories.Delete, acceptAny},

		// Usages.
		{get, "/resource_providers/:uuid/usages", every, "placement:resource_providers:usages", p.usages.Provider, acceptJSON},
		{get, "/usages", since(9), "placement:usages", p.usages.Project, acceptJSON | bounded},

		// Resource classes.
		{get, "/resource_classes", since(2), "placement:resource_classes:list", p.classes.List, acceptJSON},
		{post, "/resource_classes", since(2), "placement:resource_classes:create", p.classes.Create, acceptAny},
		{get, "/resource_classes/:name", since(2), "placement:resource_classes:show", p.classes.Show, acceptJSON},
		{put, "/resource_classes/:name", since(2), "placement:resource_classes:update", p.classes.Update, acceptAny},
		{del, "/resource_classes/:name", since(2), "placement:resource_classes:delete", p.classes.Delete, acceptAny},

		// Aggregates.
		{get, "/resource_providers/:uuid/aggregates", since(1), "placement:resource_providers:aggregates:list", p.aggregates.Show, acceptJSON},
		{put, "/resource_providers/:uuid/aggregates", since(1), "placement:resource_providers:aggregates:update", p.aggregates.Replace, acceptAny},

		// Traits. GET /traits/{name} answers 204 without a body and, as in
		// Placement, does not look at Accept.
		{get, "/traits", since(6), "placement:traits:list", p.traits.List, acceptJSON},
		{get, "/traits/:name", since(6), "placement:traits:show", p.traits.Show, acceptAny},
		{put, "/traits/:name", since(6), "placement:traits:update", p.traits.Put, acceptAny},
		{del, "/traits/:name", since(6), "placement:traits:delete", p.traits.Delete, acceptAny},
		{get, "/resource_providers/:uuid/traits", since(6), "placement:resource_providers:traits:list", p.traits.ProviderShow, acceptJSON},
		{put, "/resource_providers/:uuid/traits", since(6), "placement:resource_providers:traits:update", p.traits.ProviderReplace, acceptAny},
		{del, "/resource_providers/:uuid/traits", since(6), "placement:resource_providers:traits:delete", p.traits.ProviderDelete, acceptAny},

		// Allocations.
		{get, "/allocations/:consumer_uuid", every, "placement:allocations:list", p.allocations.Get, acceptJSON},
		{put, "/allocations/:consumer_uuid", every, "placement:allocations:update", p.allocations.Put, acceptAny},
		{del, "/allocations/:consumer_uuid", every, "placement:allocations:delete", p.allocations.Delete, acceptAny},
		{post, "/allocations", since(13), "placement:allocations:manage", p.allocations.Post, acceptAny},
		{get, "/resource_providers/:uuid/allocations", every, "placement:resource_providers:allocations:list", p.allocations.ByProvider, acceptJSON},

		// Allocation candidates and reshapes.
		{get, "/allocation_candidates", since(10), "placement:allocation_candidates:list", p.candidates.List, acceptJSON | bounded},
		{post, "/reshaper", since(30), "placement:reshaper:reshape", p.allocations.Reshape, acceptAny},

		// Berth's claims, the capacity question, what agents report of
		// providers and claims read (provider state and placement keys),
		// and host evacuation.

		// Claims: select and claim in one request, reschedule, move,
		// confirm and revert; the stored claim and its lease
		// (docs/claims.md).
		{post, "/claims", every, "berth:claims:create", b.claims.Create, bounded},
		{get, "/claims/:consumer_uuid", every, "berth:claims:show", b.claims.Show, acceptJSON},
		{patch, "/claims/:consumer_uuid", every, "berth:claims:update", b.claims.Update, acceptAny},
		{post, "/claims/:consumer_uuid/reschedule", every, "berth:claims:reschedule", b.claims.Reschedule, bounded},
		{post, "/claims/:consumer_uuid/move", every, "berth:claims:move", b.claims.Move, bounded},
		{post, "/claims/:consumer_uuid/move/confirm", every, "berth:claims:move", b.claims.Confirm, bounded},
		{post, "/claims/:consumer_uuid/move/revert", every, "berth:claims:move", b.claims.Revert, bounded},
		// The consumers claims displaced (docs/preemption.md).
		{get, "/preemptions", every, "berth:preemptions:list", b.preemptions.List, acceptJSON},

		// Capacity: how many more instances of one request fit, and where.
		{get, "/capacity", every, "berth:capacity:show", b.capacity.Show, acceptJSON | bounded},

		// Provider state reported by agents, and affinity placement keys.
		{get, "/resource_providers/:uuid/state", every, "berth:resource_providers:state:show", b.states.Show, acceptJSON},
		{put, "/resource_providers/:uuid/state", every, "berth:resource_providers:state:update", b.states.Put, acceptAny},
		{get, "/resource_providers/:uuid/placement_keys", every, "berth:resource_providers:placement_keys:list", b.keys.List, acceptJSON},
		{put, "/resource_providers/:uuid/placement_keys", every, "berth:resource_providers:placement_keys:update", b.keys.Put, acceptAny},

		// Evacuating a host and restoring it (docs/claims.md).
		{post, "/resource_providers/:uuid/evacuate", every, "berth:resource_providers:evacuate", b.evacuations.Evacuate, bounded},
		{post, "/resource_providers/:uuid/restore", every, "berth:resource_providers:evacuate", b.evacuations.Restore, acceptAny},

		// How claims are placed: scheduling policies, the units they
		// name, scriptlets, and the server-wide settings.

		// Scheduling policies, the units they may name, and a policy's
		// balancer suggestions.
		{get, "/scheduling_policies", every, "berth:scheduling_policies:list", b.policies.List, acceptJSON},
		{post, "/scheduling_policies", every, "berth:scheduling_policies:create", b.policies.Create, acceptAny},
		{get, "/scheduling_policies/:name", every, "berth:scheduling_policies:show", b.policies.Show, acceptJSON},
		{put, "/scheduling_policies/:name", every, "berth:scheduling_policies:update", b.policies.Put, acceptAny},
		{del, "/scheduling_policies/:name", every, "berth:scheduling_policies:delete", b.policies.Delete, acceptAny},
		{get, "/scheduling_policies/:name/balance", every, "berth:scheduling_policies:balance", b.policies.Balance, acceptJSON | bounded},
		{put, "/scheduling_policies/:name/shadow", every, "berth:scheduling_policies:shadow:start", b.shadows.Start(scheduling.ShadowPolicy), acceptJSON},
		{get, "/scheduling_policies/:name/shadow", every, "berth:scheduling_policies:shadow:show", b.shadows.Show(scheduling.ShadowPolicy), acceptJSON},
		{del, "/scheduling_policies/:name/shadow", every, "berth:scheduling_policies:shadow:stop", b.shadows.Stop(scheduling.ShadowPolicy), acceptAny},
		{get, "/policy_units", every, "berth:policy_units:list", b.policies.Units, acceptJSON},

		// Stored Starlark scriptlets. GET of one answers its source as
		// text/plain, so it does not insist on JSON.
		{get, "/scriptlets", every, "berth:scriptlets:list", b.scriptlets.List, acceptJSON},
		{get, "/scriptlets/:name", every, "berth:scriptlets:show", b.scriptlets.Show, acceptAny},
		{put, "/scriptlets/:name", every, "berth:scriptlets:update", b.scriptlets.Put, acceptAny},
		{del, "/scriptlets/:name", every, "berth:scriptlets:delete", b.scriptlets.Delete, acceptAny},
		{post, "/scriptlets/:name/test", every, "berth:scriptlets:test", b.scriptlets.Test, bounded},
		{put, "/scriptlets/:name/shadow", every, "berth:scriptlets:shadow:start", b.shadows.Start(scheduling.ShadowScriptlet), acceptJSON},
		{get, "/scriptlets/:name/shadow", every, "berth:scriptlets:shadow:show", b.shadows.Show(scheduling.ShadowScriptlet), acceptJSON},
		{del, "/scriptlets/:name/shadow", every, "berth:scriptlets:shadow:stop", b.shadows.Stop(scheduling.ShadowScriptlet), acceptAny},

		// The allocation audit: findings, and the fix of one.
		{get, "/audit", every, "berth:audit:read", b.audit.List, acceptJSON | bounded},
		{post, "/audit/fix", every, "berth:audit:fix", b.audit.Fix, acceptAny},

		// Server-wide settings.
		{get, "/config", every, "berth:config:show", b.settings.Show, acceptJSON},
		{patch, "/config", every, "berth:config:update", b.settings.Patch, acceptAny},

		// Quotas: the projects' limits (docs/quotas.md).
		{get, "/limits", every, "berth:limits:list", b.limits.List, acceptJSON},
		{get, "/limits/:project_id", every, "berth:limits:show", b.limits.Show, acceptJSON},
		{put, "/limits/:project_id", every, "berth:limits:update", b.limits.Put, acceptAny},
		{del, "/limits/:project_id", every, "berth:limits:update", b.limits.Delete, acceptAny},
		{get, "/registered_limits", every, "berth:limits:list", b.limits.RegisteredShow, acceptJSON},
		{put, "/registered_limits", every, "berth:limits:update", b.limits.RegisteredPut, acceptAny},
	}
}

// addRoutes registers the version document, the API's description
// (openapi.go) and every route of the table.
// A route's rule must be one of authz.OperationRules: authorize panics on
// anything else, since the table is a constant of the program.
func (s *Server) addRoutes() {
	s.e.GET("/", s.root)
	s.e.GET(openAPIPath, s.openAPI)
	s.allow = map[string]string{"/": http.MethodGet, openAPIPath: http.MethodGet}
	for _, r := range s.routes() {
		if a := s.allow[r.path]; a != "" {
			s.allow[r.path] = a + ", " + r.method
		} else {
			s.allow[r.path] = r.method
		}
		// The route's own steps and its handler (chain.go).
		step := &routeStep{route: r, policy: s.authorize(r.rule), s: s}
		s.e.Add(r.method, r.path, step.serve)
	}
}
