package placement

import (
	"fmt"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/internal/testing/pythontest"
)

// TestSchemasMatchPlacement compares every schema Berth validates a
// Placement request with against the schema Placement 8.0.0 uses for the
// same route and microversion (imported from python3-placement), as the
// error trailer prints them: pprint.pformat at width 72. The trailer is
// part of the error detail clients show, and the same schema means the
// same verdict on every body.
func TestSchemasMatchPlacement(t *testing.T) {
	type pair struct {
		placement string // module.NAME under placement.schemas
		berth     *jsonschema.Schema
	}
	pairs := []pair{
		{"aggregate.PUT_AGGREGATES_SCHEMA_V1_1", aggregatesSchemaV1_1},
		{"aggregate.PUT_AGGREGATES_SCHEMA_V1_19", aggregatesSchemaV1_19},
		{"allocation.ALLOCATION_SCHEMA", putAllocationsSchema(wire.Version{Major: 1, Minor: 0})},
		{"allocation.ALLOCATION_SCHEMA_V1_8", putAllocationsSchema(wire.Version{Major: 1, Minor: 8})},
		{"allocation.ALLOCATION_SCHEMA_V1_12", putAllocationsSchema(wire.Version{Major: 1, Minor: 12})},
		{"allocation.ALLOCATION_SCHEMA_V1_28", putAllocationsSchema(wire.Version{Major: 1, Minor: 28})},
		{"allocation.ALLOCATION_SCHEMA_V1_34", putAllocationsSchema(wire.Version{Major: 1, Minor: 34})},
		{"allocation.ALLOCATION_SCHEMA_V1_38", putAllocationsSchema(wire.Version{Major: 1, Minor: 38})},
		{"allocation.POST_ALLOCATIONS_V1_13", postAllocationsSchema(wire.Version{Major: 1, Minor: 13})},
		{"allocation.POST_ALLOCATIONS_V1_28", postAllocationsSchema(wire.Version{Major: 1, Minor: 28})},
		{"allocation.POST_ALLOCATIONS_V1_34", postAllocationsSchema(wire.Version{Major: 1, Minor: 34})},
		{"allocation.POST_ALLOCATIONS_V1_38", postAllocationsSchema(wire.Version{Major: 1, Minor: 38})},
		{"inventory.POST_INVENTORY_SCHEMA", postInventorySchema},
		{"inventory.PUT_INVENTORY_SCHEMA", putInventoriesSchemaCompiled},
		{"inventory.BASE_INVENTORY_SCHEMA", putInventorySchema},
		{"reshaper.POST_RESHAPER_SCHEMA", reshaperSchemaV1_30},
		{"reshaper.POST_RESHAPER_SCHEMA_V1_34", reshaperSchemaV1_34},
		{"reshaper.POST_RESHAPER_SCHEMA_V1_38", reshaperSchemaV1_38},
		{"resource_class.POST_RC_SCHEMA_V1_2", resourceClassSchema},
		{"resource_class.PUT_RC_SCHEMA_V1_2", resourceClassSchema},
		{"resource_provider.POST_RESOURCE_PROVIDER_SCHEMA", providerPostSchema},
		{"resource_provider.POST_RP_SCHEMA_V1_14", providerPostSchemaV1_14},
		{"resource_provider.PUT_RESOURCE_PROVIDER_SCHEMA", providerPutSchema},
		{"resource_provider.PUT_RP_SCHEMA_V1_14", providerPutSchemaV1_14},
		{"trait.CUSTOM_TRAIT", customTraitSchema},
		{"trait.LIST_TRAIT_SCHEMA", traitListQuerySchema},
		{"trait.SET_TRAITS_FOR_RP_SCHEMA", providerTraitsSchema},
		{"usage.GET_USAGES_SCHEMA_1_9", usagesQuerySchemaV1_9},
		{"usage.GET_USAGES_SCHEMA_V1_38", usagesQuerySchemaV1_38},
	}
	for _, ls := range providerListSchemas {
		pairs = append(pairs, pair{fmt.Sprintf("resource_provider.GET_RPS_SCHEMA_1_%d", ls.minor), ls.schema})
	}
	for _, cs := range candidatesSchemas {
		pairs = append(pairs, pair{fmt.Sprintf("allocation_candidate.GET_SCHEMA_1_%d", cs.minor), cs.schema})
	}
	names := make([]string, len(pairs))
	for i, p := range pairs {
		names[i] = p.placement
	}
	var want []string
	pythontest.Run(t, `
import importlib, json, pprint, sys
out = []
for name in json.load(sys.stdin):
    module, const = name.split(".")
    out.append(pprint.pformat(getattr(importlib.import_module("placement.schemas." + module), const), width=72))
print(json.dumps(out))
`, names, &want)
	for i, p := range pairs {
		if got := jsonschema.PFormat(p.berth.Doc(), 72); got != want[i] {
			t.Errorf("%s differs:\n got %s\nwant %s", p.placement, got, want[i])
		}
	}
}

// TestNonFiniteNumbers: NaN, Infinity and -Infinity, which json.loads
// reads, are judged by the schema as Placement judges them (checked
// against jsonschema with python3-placement's schemas); where the schema
// lets them through, Berth refuses them.
func TestNonFiniteNumbers(t *testing.T) {
	cases := []struct {
		Schema string `json:"schema"` // module.NAME under placement.schemas
		Body   string `json:"body"`
		berth  *jsonschema.Schema
	}{
		{"resource_provider.POST_RP_SCHEMA_V1_14", `{"name": NaN}`, providerPostSchemaV1_14},
		{"resource_provider.POST_RP_SCHEMA_V1_14", `{"name": "x", "uuid": -Infinity}`, providerPostSchemaV1_14},
		{"inventory.POST_INVENTORY_SCHEMA", `{"resource_class": "VCPU", "total": Infinity}`, postInventorySchema},
		{"inventory.POST_INVENTORY_SCHEMA", `{"resource_class": "VCPU", "total": 4, "allocation_ratio": Infinity}`, postInventorySchema},
		{"inventory.POST_INVENTORY_SCHEMA", `{"resource_class": "VCPU", "total": 4, "allocation_ratio": NaN}`, postInventorySchema},
		{"inventory.POST_INVENTORY_SCHEMA", `{"resource_class": "VCPU", "total": 4, "allocation_ratio": -Infinity}`, postInventorySchema},
		{"inventory.POST_INVENTORY_SCHEMA", `{"resource_class": "VCPU", "total": 4, "reserved": NaN}`, postInventorySchema},
		{"aggregate.PUT_AGGREGATES_SCHEMA_V1_1", `[NaN]`, aggregatesSchemaV1_1},
	}
	var want []string
	pythontest.Run(t, `
import importlib, json, sys, jsonschema
import placement.util  # Placement's uuid format checker
out = []
for c in json.load(sys.stdin):
    module, const = c["schema"].split(".")
    schema = getattr(importlib.import_module("placement.schemas." + module), const)
    try:
        jsonschema.validate(json.loads(c["body"]), schema, format_checker=jsonschema.FormatChecker())
        out.append("")
    except jsonschema.ValidationError as e:
        out.append("JSON does not validate: %s" % e)
print(json.dumps(out))
`, cases, &want)
	for i, c := range cases {
		var dst any
		err := wire.DecodeJSON([]byte(c.Body), c.berth, &dst)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if want[i] == "" {
			want[i] = "JSON does not validate: NaN, Infinity and -Infinity are not accepted."
		}
		if got != want[i] {
			t.Errorf("%s against %s:\n got %s\nwant %s", c.Body, c.Schema, got, want[i])
		}
	}
}
