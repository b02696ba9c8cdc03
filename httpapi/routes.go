package httpapi

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/ledger"
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
	// (admission.go). One provider's allocations, usages or inventories
	// are not bounded: their size does not.
	bounded
)

// routes is the API: every route, the microversions it exists in, the
// policy rule that guards it and its handler, in three tables by family
// (below, in this order): Placement's resources, Berth's claims and
// what they read of providers, and scheduling. A path's methods come in
// the order Placement declares them, which is the order of a 405's Allow
// header. The version document (GET /) is public and is not in the
// table; the probes and /metrics are answered before routing (health.go).
func (s *Server) routes() []route {
	return slices.Concat(s.placementRoutes(), s.claimRoutes(), s.schedulingRoutes())
}

// placementRoutes are Placement's API: resource providers and their
// inventories, usages, aggregates and traits, resource classes,
// allocations, allocation candidates and reshapes.
func (s *Server) placementRoutes() []route {
	const (
		get, put, post, del = http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete
	)
	every := since(0) // every microversion
	return []route{
		// Resource providers.
		{get, "/resource_providers", every, "placement:resource_providers:list", s.providerList, acceptJSON | bounded},
		{post, "/resource_providers", every, "placement:resource_providers:create", s.providerCreate, acceptAny},
		{get, "/resource_providers/:uuid", every, "placement:resource_providers:show", s.providerShow, acceptJSON},
		{del, "/resource_providers/:uuid", every, "placement:resource_providers:delete", s.providerDelete, acceptAny},
		{put, "/resource_providers/:uuid", every, "placement:resource_providers:update", s.providerUpdate, acceptAny},

		// Inventories.
		{get, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:list", s.inventoriesList, acceptJSON},
		{post, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:create", s.inventoryCreate, acceptAny},
		{put, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:update", s.inventoriesReplace, acceptAny},
		{del, "/resource_providers/:uuid/inventories", every, "placement:resource_providers:inventories:delete", s.inventoriesDelete, acceptAny},
		{get, "/resource_providers/:uuid/inventories/:resource_class", every, "placement:resource_providers:inventories:show", s.inventoryShow, acceptJSON},
		{put, "/resource_providers/:uuid/inventories/:resource_class", every, "placement:resource_providers:inventories:update", s.inventoryUpdate, acceptAny},
		{del, "/resource_providers/:uuid/inventories/:resource_class", every, "placement:resource_providers:inventories:delete", s.inventoryDelete, acceptAny},

		// Usages.
		{get, "/resource_providers/:uuid/usages", every, "placement:resource_providers:usages", s.providerUsagesGet, acceptJSON},
		{get, "/usages", since(9), "placement:usages", s.usagesGet, acceptJSON | bounded},

		// Resource classes.
		{get, "/resource_classes", since(2), "placement:resource_classes:list", s.resourceClassList, acceptJSON},
		{post, "/resource_classes", since(2), "placement:resource_classes:create", s.resourceClassCreate, acceptAny},
		{get, "/resource_classes/:name", since(2), "placement:resource_classes:show", s.resourceClassShow, acceptJSON},
		{put, "/resource_classes/:name", since(2), "placement:resource_classes:update", s.resourceClassUpdate, acceptAny},
		{del, "/resource_classes/:name", since(2), "placement:resource_classes:delete", s.resourceClassDelete, acceptAny},

		// Aggregates.
		{get, "/resource_providers/:uuid/aggregates", since(1), "placement:resource_providers:aggregates:list", s.providerAggregatesShow, acceptJSON},
		{put, "/resource_providers/:uuid/aggregates", since(1), "placement:resource_providers:aggregates:update", s.providerAggregatesReplace, acceptAny},

		// Traits. GET /traits/{name} answers 204 without a body and, as in
		// Placement, does not look at Accept.
		{get, "/traits", since(6), "placement:traits:list", s.traitList, acceptJSON},
		{get, "/traits/:name", since(6), "placement:traits:show", s.traitShow, acceptAny},
		{put, "/traits/:name", since(6), "placement:traits:update", s.traitPut, acceptAny},
		{del, "/traits/:name", since(6), "placement:traits:delete", s.traitDelete, acceptAny},
		{get, "/resource_providers/:uuid/traits", since(6), "placement:resource_providers:traits:list", s.providerTraitsShow, acceptJSON},
		{put, "/resource_providers/:uuid/traits", since(6), "placement:resource_providers:traits:update", s.providerTraitsReplace, acceptAny},
		{del, "/resource_providers/:uuid/traits", since(6), "placement:resource_providers:traits:delete", s.providerTraitsDelete, acceptAny},

		// Allocations.
		{get, "/allocations/:consumer_uuid", every, "placement:allocations:list", s.allocationsGet, acceptJSON},
		{put, "/allocations/:consumer_uuid", every, "placement:allocations:update", s.allocationsPut, acceptAny},
		{del, "/allocations/:consumer_uuid", every, "placement:allocations:delete", s.allocationsDelete, acceptAny},
		{post, "/allocations", since(13), "placement:allocations:manage", s.allocationsPost, acceptAny},
		{get, "/resource_providers/:uuid/allocations", every, "placement:resource_providers:allocations:list", s.providerAllocationsGet, acceptJSON},

		// Allocation candidates and reshapes.
		{get, "/allocation_candidates", since(10), "placement:allocation_candidates:list", s.allocationCandidates, acceptJSON | bounded},
		{post, "/reshaper", since(30), "placement:reshaper:reshape", s.reshape, acceptAny},
	}
}

// Berth's extensions (claimRoutes, schedulingRoutes) exist at every
// microversion (Placement has no equivalent); their error bodies carry a
// "code" from 1.23 on, as for every route.

// claimRoutes are Berth's claims, the capacity question, what agents
// report of providers and claims read (provider state and placement
// keys), and host evacuation.
func (s *Server) claimRoutes() []route {
	const (
		get, put, post, patch = http.MethodGet, http.MethodPut, http.MethodPost, http.MethodPatch
	)
	every := since(0) // every microversion
	return []route{
		// Claims: select and claim in one request, reschedule, move,
		// confirm and revert; the stored claim and its lease
		// (docs/claims.md).
		{post, "/claims", every, "berth:claims:create", s.claimCreate, bounded},
		{get, "/claims/:consumer_uuid", every, "berth:claims:show", s.claimShow, acceptJSON},
		{patch, "/claims/:consumer_uuid", every, "berth:claims:update", s.claimUpdate, acceptAny},
		{post, "/claims/:consumer_uuid/reschedule", every, "berth:claims:reschedule", s.claimReschedule, bounded},
		{post, "/claims/:consumer_uuid/move", every, "berth:claims:move", s.claimMove, bounded},
		{post, "/claims/:consumer_uuid/move/confirm", every, "berth:claims:move", s.claimConfirm, bounded},
		{post, "/claims/:consumer_uuid/move/revert", every, "berth:claims:move", s.claimRevert, bounded},

		// Capacity: how many more instances of one request fit, and where.
		{get, "/capacity", every, "berth:capacity:show", s.capacityShow, acceptJSON | bounded},

		// Provider state reported by agents, and affinity placement keys.
		{get, "/resource_providers/:uuid/state", every, "berth:resource_providers:state:show", s.providerStateShow, acceptJSON},
		{put, "/resource_providers/:uuid/state", every, "berth:resource_providers:state:update", s.providerStatePut, acceptAny},
		{get, "/resource_providers/:uuid/placement_keys", every, "berth:resource_providers:placement_keys:list", s.placementKeysList, acceptJSON},
		{put, "/resource_providers/:uuid/placement_keys", every, "berth:resource_providers:placement_keys:update", s.placementKeysPut, acceptAny},

		// Evacuating a host and restoring it (docs/claims.md).
		{post, "/resource_providers/:uuid/evacuate", every, "berth:resource_providers:evacuate", s.providerEvacuate, bounded},
		{post, "/resource_providers/:uuid/restore", every, "berth:resource_providers:evacuate", s.providerRestore, acceptAny},
	}
}

// schedulingRoutes are how claims are placed: scheduling policies, the
// units they name, scriptlets, and the server-wide settings.
func (s *Server) schedulingRoutes() []route {
	const (
		get, put, post, del, patch = http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch
	)
	every := since(0) // every microversion
	return []route{
		// Scheduling policies, the units they may name, and a policy's
		// balancer suggestions.
		{get, "/scheduling_policies", every, "berth:scheduling_policies:list", s.policyList, acceptJSON},
		{post, "/scheduling_policies", every, "berth:scheduling_policies:create", s.policyCreate, acceptAny},
		{get, "/scheduling_policies/:name", every, "berth:scheduling_policies:show", s.policyShow, acceptJSON},
		{put, "/scheduling_policies/:name", every, "berth:scheduling_policies:update", s.policyPut, acceptAny},
		{del, "/scheduling_policies/:name", every, "berth:scheduling_policies:delete", s.policyDelete, acceptAny},
		{get, "/scheduling_policies/:name/balance", every, "berth:scheduling_policies:balance", s.policyBalance, acceptJSON | bounded},
		{put, "/scheduling_policies/:name/shadow", every, "berth:scheduling_policies:shadow:start", s.shadowStart(ledger.ShadowPolicy), acceptJSON},
		{get, "/scheduling_policies/:name/shadow", every, "berth:scheduling_policies:shadow:show", s.shadowShow(ledger.ShadowPolicy), acceptJSON},
		{del, "/scheduling_policies/:name/shadow", every, "berth:scheduling_policies:shadow:stop", s.shadowStop(ledger.ShadowPolicy), acceptAny},
		{get, "/policy_units", every, "berth:policy_units:list", s.policyUnits, acceptJSON},

		// Stored Starlark scriptlets. GET of one answers its source as
		// text/plain, so it does not insist on JSON.
		{get, "/scriptlets", every, "berth:scriptlets:list", s.scriptletList, acceptJSON},
		{get, "/scriptlets/:name", every, "berth:scriptlets:show", s.scriptletShow, acceptAny},
		{put, "/scriptlets/:name", every, "berth:scriptlets:update", s.scriptletPut, acceptAny},
		{del, "/scriptlets/:name", every, "berth:scriptlets:delete", s.scriptletDelete, acceptAny},
		{post, "/scriptlets/:name/test", every, "berth:scriptlets:test", s.scriptletTest, bounded},
		{put, "/scriptlets/:name/shadow", every, "berth:scriptlets:shadow:start", s.shadowStart(ledger.ShadowScriptlet), acceptJSON},
		{get, "/scriptlets/:name/shadow", every, "berth:scriptlets:shadow:show", s.shadowShow(ledger.ShadowScriptlet), acceptJSON},
		{del, "/scriptlets/:name/shadow", every, "berth:scriptlets:shadow:stop", s.shadowStop(ledger.ShadowScriptlet), acceptAny},

		// The allocation audit: findings, and the fix of one.
		{get, "/audit", every, "berth:audit:read", s.auditList, acceptJSON | bounded},
		{post, "/audit/fix", every, "berth:audit:fix", s.auditFix, acceptAny},

		// Server-wide settings.
		{get, "/config", every, "berth:config:show", s.configShow, acceptJSON},
		{patch, "/config", every, "berth:config:update", s.configPatch, acceptAny},

		// Quotas: the projects' limits (docs/quotas.md).
		{get, "/limits", every, "berth:limits:list", s.limitsList, acceptJSON},
		{get, "/limits/:project_id", every, "berth:limits:show", s.limitsShow, acceptJSON},
		{put, "/limits/:project_id", every, "berth:limits:update", s.limitsPut, acceptAny},
		{del, "/limits/:project_id", every, "berth:limits:update", s.limitsDelete, acceptAny},
		{get, "/registered_limits", every, "berth:limits:list", s.registeredLimitsShow, acceptJSON},
		{put, "/registered_limits", every, "berth:limits:update", s.registeredLimitsPut, acceptAny},
	}
}

// addRoutes registers the version document and every route of the table.
// A route's rule must be one of authz.OperationRules: authorize panics on
// anything else, since the table is a constant of the program.
func (s *Server) addRoutes() {
	s.e.GET("/", s.root)
	s.allow = map[string]string{"/": http.MethodGet}
	for _, r := range s.routes() {
		if a := s.allow[r.path]; a != "" {
			s.allow[r.path] = a + ", " + r.method
		} else {
			s.allow[r.path] = r.method
		}
		mw := []echo.MiddlewareFunc{versionGate(r.versions), s.authorize(r.rule)}
		if r.flags&acceptJSON != 0 {
			mw = append(mw, requireJSONAccept)
		}
		if r.flags&bounded != 0 {
			// After authorisation, so that a caller who may not run the
			// request never takes or waits for a slot.
			mw = append(mw, s.admission.middleware)
		}
		// Composed once here: echo would compose a route's middleware
		// for every request.
		s.e.Add(r.method, r.path, chainMiddleware(r.handler, mw))
	}
}

// versionGate answers 404 to requests outside the route's microversions,
// as Placement does for routes that did not exist yet.
func versionGate(v minors) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ver := version(c)
			if !ver.AtLeast(v.first) || (v.last > 0 && ver.AtLeast(v.last+1)) {
				return notFound("")
			}
			return next(c)
		}
	}
}
