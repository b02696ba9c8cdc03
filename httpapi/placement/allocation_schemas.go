package placement

import (
	"strings"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
)

// The allocation schemas, as Placement's placement/schemas/allocation.py,
// one per microversion range. They are written out rather than derived,
// as Placement's comments advise, "for sake of comprehensibility".
const (
	// uuidKeyPattern matches provider and consumer uuids used as keys.
	uuidKeyPattern = `^[0-9a-fA-F-]{36}$`
	// ConsumerTypePattern is a consumer type (1.38), and of a claim's
	// consumer.
	ConsumerTypePattern = `^[A-Z0-9_]+$`
	// groupSuffixPattern is Placement's GROUP_PAT_1_33, which its
	// mappings schema (1.34) uses as is: unanchored, so a key with one
	// such character is checked and a key without any (such as "", the
	// unsuffixed group) is not.
	groupSuffixPattern = `[a-zA-Z0-9_-]{1,64}`

	resourcesSchema = `{
		"type": "object",
		"minProperties": 1,
		"patternProperties": {"` + rcPattern + `": {"type": "integer", "minimum": 1}},
		"additionalProperties": false
	}`
	idSchema = `{"type": "string", "minLength": 1, "maxLength": 255}`

	// allocationSchemaV1_0 is the list form of PUT /allocations/{consumer_uuid}.
	allocationSchemaV1_0 = `{
		"type": "object",
		"properties": {
			"allocations": {
				"type": "array",
				"minItems": 1,
				"items": {
					"type": "object",
					"properties": {
						"resource_provider": {
							"type": "object",
							"properties": {"uuid": {"type": "string", "format": "uuid"}},
							"additionalProperties": false,
							"required": ["uuid"]
						},
						"resources": ` + resourcesSchema + `
					},
					"required": ["resource_provider", "resources"],
					"additionalProperties": false
				}
			}
			EXTRA_PROPERTIES
		},
		"required": ["allocations" EXTRA_REQUIRED],
		"additionalProperties": false
	}`

	// allocationSchemaV1_12 is the dict form, symmetric with GET.
	// MIN_ALLOCS is 1 until 1.28 (and in POST 0, to delete).
	allocationSchemaV1_12 = `{
		"type": "object",
		"properties": {
			"allocations": {
				"type": "object",
				"minProperties": MIN_ALLOCS,
				"patternProperties": {
					"` + uuidKeyPattern + `": {
						"type": "object",
						"properties": {
							"generation": {"type": "integer"},
							"resources": ` + resourcesSchema + `
						},
						"required": ["resources"],
						"additionalProperties": false
					}
				},
				"additionalProperties": false
			},
			"project_id": ` + idSchema + `,
			"user_id": ` + idSchema + `
			EXTRA_PROPERTIES
		},
		"additionalProperties": false,
		"required": ["allocations", "project_id", "user_id" EXTRA_REQUIRED]
	}`

	consumerGenerationProperty = `,
		"consumer_generation": {"type": ["integer", "null"], "additionalProperties": false}`
	mappingsProperty = `,
		"mappings": {
			"type": "object",
			"minProperties": 1,
			"patternProperties": {
				"` + groupSuffixPattern + `": {
					"type": "array",
					"minItems": 1,
					"items": {"type": "string", "format": "uuid"}
				}
			}
		}`
	consumerTypeProperty = `,
		"consumer_type": {"type": "string", "pattern": "` + ConsumerTypePattern + `", "minLength": 1, "maxLength": 255}`
)

// fill expands a schema template.
func fill(tmpl, minAllocs, extraProps, extraRequired string) string {
	return strings.NewReplacer(
		"MIN_ALLOCS", minAllocs,
		"EXTRA_PROPERTIES", extraProps,
		"EXTRA_REQUIRED", extraRequired,
	).Replace(tmpl)
}

// consumerSchemaText is the body for one consumer's allocations at a
// microversion, dict form (1.12 on). minAllocs is "0" where an empty
// allocations object means "remove them all".
func consumerSchemaText(minor int, minAllocs string) string {
	props, req := "", ""
	if minor >= 28 {
		props += consumerGenerationProperty
		req += `, "consumer_generation"`
		minAllocs = "0"
	}
	if minor >= 34 {
		props += mappingsProperty
	}
	if minor >= 38 {
		props += consumerTypeProperty
		req += `, "consumer_type"`
	}
	return fill(allocationSchemaV1_12, minAllocs, props, req)
}

// postAllocationsSchemaText is POST /allocations (and the allocations of
// POST /reshaper, with minConsumers "0").
func postAllocationsSchemaText(minor int, minConsumers string) string {
	return `{
		"type": "object",
		"minProperties": ` + minConsumers + `,
		"additionalProperties": false,
		"patternProperties": {"` + uuidKeyPattern + `": ` + consumerSchemaText(minor, "0") + `}
	}`
}

var (
	allocationSchemaV1_0Compiled = jsonschema.Must(fill(allocationSchemaV1_0, "", "", ""))
	allocationSchemaV1_8Compiled = jsonschema.Must(fill(allocationSchemaV1_0, "",
		`, "project_id": `+idSchema+`, "user_id": `+idSchema, `, "project_id", "user_id"`))
	allocationSchemaV1_12Compiled = jsonschema.Must(consumerSchemaText(12, "1"))
	allocationSchemaV1_28Compiled = jsonschema.Must(consumerSchemaText(28, "1"))
	allocationSchemaV1_34Compiled = jsonschema.Must(consumerSchemaText(34, "1"))
	allocationSchemaV1_38Compiled = jsonschema.Must(consumerSchemaText(38, "1"))

	postAllocationsSchemaV1_13 = jsonschema.Must(postAllocationsSchemaText(13, "1"))
	postAllocationsSchemaV1_28 = jsonschema.Must(postAllocationsSchemaText(28, "1"))
	postAllocationsSchemaV1_34 = jsonschema.Must(postAllocationsSchemaText(34, "1"))
	postAllocationsSchemaV1_38 = jsonschema.Must(postAllocationsSchemaText(38, "1"))
)

// putAllocationsSchema is the schema of PUT /allocations/{consumer_uuid}.
func putAllocationsSchema(v wire.Version) *jsonschema.Schema {
	switch {
	case v.AtLeast(38):
		return allocationSchemaV1_38Compiled
	case v.AtLeast(34):
		return allocationSchemaV1_34Compiled
	case v.AtLeast(28):
		return allocationSchemaV1_28Compiled
	case v.AtLeast(12):
		return allocationSchemaV1_12Compiled
	case v.AtLeast(8):
		return allocationSchemaV1_8Compiled
	}
	return allocationSchemaV1_0Compiled
}

// postAllocationsSchema is the schema of POST /allocations.
func postAllocationsSchema(v wire.Version) *jsonschema.Schema {
	switch {
	case v.AtLeast(38):
		return postAllocationsSchemaV1_38
	case v.AtLeast(34):
		return postAllocationsSchemaV1_34
	case v.AtLeast(28):
		return postAllocationsSchemaV1_28
	}
	return postAllocationsSchemaV1_13
}
