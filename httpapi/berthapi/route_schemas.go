package berthapi

import (
	"net/http"

	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
)

// BodySchemas are the schemas Berth's routes validate their JSON request
// bodies with, each the value its handler decodes with (GET
// /openapi.json describes them). Berth's routes are the same at every
// microversion. The routes that take no JSON body are not listed: PUT
// /scriptlets/{name} takes the source as text/plain; restoring a host and
// starting a shadow take none.
func BodySchemas() []wire.RouteSchema {
	const post, put, patch = http.MethodPost, http.MethodPut, http.MethodPatch
	return []wire.RouteSchema{
		{Method: post, Path: "/claims", Schema: claimSchema},
		{Method: post, Path: "/claims", Schema: gangSchema},
		{Method: patch, Path: "/claims/:consumer_uuid", Schema: claimUpdateSchema},
		{Method: post, Path: "/claims/:consumer_uuid/reschedule", Schema: rescheduleSchema},
		{Method: post, Path: "/claims/:consumer_uuid/move", Schema: moveSchema},
		{Method: post, Path: "/claims/:consumer_uuid/move/confirm", Schema: moveEndSchema},
		{Method: post, Path: "/claims/:consumer_uuid/move/revert", Schema: moveEndSchema},
		{Method: put, Path: "/resource_providers/:uuid/state", Schema: providerStateSchema},
		{Method: put, Path: "/resource_providers/:uuid/placement_keys", Schema: placementKeysSchema},
		{Method: post, Path: "/resource_providers/:uuid/evacuate", Schema: evacuateSchema},
		{Method: post, Path: "/scheduling_policies", Schema: policyPostSchema},
		{Method: put, Path: "/scheduling_policies/:name", Schema: policyPutSchema},
		{Method: post, Path: "/scriptlets/:name/test", Schema: sampleSchema},
		{Method: put, Path: "/scheduling_policies/:name/shadow", Schema: shadowStartSchema},
		{Method: put, Path: "/scriptlets/:name/shadow", Schema: shadowStartSchema},
		{Method: post, Path: "/audit/fix", Schema: auditFixSchema},
		{Method: patch, Path: "/config", Schema: configPatchSchema},
		{Method: put, Path: "/limits/:project_id", Schema: limitsBodySchema},
		{Method: put, Path: "/registered_limits", Schema: limitsBodySchema},
	}
}

// QuerySchemas are the schemas Berth's routes validate their query
// strings with. GET /capacity's is GET /allocation_candidates' (package
// placement) and its max; GET /scheduling_policies/{name}/balance reads
// its one parameter (aggregate) itself.
func QuerySchemas() []wire.RouteSchema {
	const get = http.MethodGet
	return []wire.RouteSchema{
		{Method: get, Path: "/capacity", Schema: placement.CandidatesSchema(capacityQueryVersion)},
		{Method: get, Path: "/capacity", Schema: capacityMaxSchema},
		{Method: get, Path: "/audit", Schema: auditQuerySchema},
	}
}
