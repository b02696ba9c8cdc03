package placement

import (
	"net/http"

	"github.com/berthd/berth/httpapi/wire"
)

// BodySchemas are the schemas Placement's routes validate their JSON
// request bodies with at the latest microversion, each the value its
// handler decodes with (GET /openapi.json describes them). The routes
// that take no JSON body at the latest microversion are not listed (PUT
// /resource_classes/{name} and PUT /traits/{name} take none from 1.7 and
// 1.6 on).
func BodySchemas() []wire.RouteSchema {
	v := wire.MaxVersion
	const post, put = http.MethodPost, http.MethodPut
	return []wire.RouteSchema{
		{Method: post, Path: "/resource_providers", Schema: providerPostSchemaV1_14},
		{Method: put, Path: "/resource_providers/:uuid", Schema: providerPutSchemaV1_14},
		{Method: post, Path: "/resource_providers/:uuid/inventories", Schema: postInventorySchema},
		{Method: put, Path: "/resource_providers/:uuid/inventories", Schema: putInventoriesSchemaCompiled},
		{Method: put, Path: "/resource_providers/:uuid/inventories/:resource_class", Schema: putInventorySchema},
		{Method: post, Path: "/resource_classes", Schema: resourceClassSchema},
		{Method: put, Path: "/resource_providers/:uuid/aggregates", Schema: aggregatesSchemaV1_19},
		{Method: put, Path: "/resource_providers/:uuid/traits", Schema: providerTraitsSchema},
		{Method: put, Path: "/allocations/:consumer_uuid", Schema: putAllocationsSchema(v)},
		{Method: post, Path: "/allocations", Schema: postAllocationsSchema(v)},
		{Method: post, Path: "/reshaper", Schema: reshaperSchemaV1_38},
	}
}

// QuerySchemas are the schemas Placement's routes validate their query
// strings with at the latest microversion, each the value its handler
// validates with. A granular request group's keys (resources1,
// required_NET...) are the schema's patternProperties.
func QuerySchemas() []wire.RouteSchema {
	const get = http.MethodGet
	return []wire.RouteSchema{
		{Method: get, Path: "/resource_providers", Schema: providerListSchemas[0].schema},
		{Method: get, Path: "/usages", Schema: usagesQuerySchemaV1_38},
		{Method: get, Path: "/traits", Schema: traitListQuerySchema},
		{Method: get, Path: "/allocation_candidates", Schema: CandidatesSchema(wire.MaxVersion)},
	}
}
