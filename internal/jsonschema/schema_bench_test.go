package jsonschema

import "testing"

// benchAllocationSchema is Placement's PUT /allocations/{consumer_uuid}
// body at 1.38, written out.
const benchAllocationSchema = `{
	"type": "object",
	"properties": {
		"allocations": {
			"type": "object",
			"minProperties": 0,
			"patternProperties": {
				"^[0-9a-fA-F-]{36}$": {
					"type": "object",
					"properties": {
						"generation": {"type": "integer"},
						"resources": {
							"type": "object",
							"minProperties": 1,
							"patternProperties": {"^[A-Z0-9_]+$": {"type": "integer", "minimum": 1}},
							"additionalProperties": false
						}
					},
					"required": ["resources"],
					"additionalProperties": false
				}
			},
			"additionalProperties": false
		},
		"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"consumer_generation": {"type": ["integer", "null"], "additionalProperties": false},
		"consumer_type": {"type": "string", "pattern": "^[A-Z0-9_]+$", "minLength": 1, "maxLength": 255}
	},
	"required": ["allocations", "project_id", "user_id", "consumer_generation"],
	"additionalProperties": false
}`

// benchClaimSchema is a claim's body in the shape of Berth's POST /claims:
// a consumer, its owners and groups of resources with traits.
const benchClaimSchema = `{
	"type": "object",
	"properties": {
		"consumer_uuid": {"type": "string", "format": "uuid"},
		"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"policy": {"type": "string", "minLength": 1, "maxLength": 255},
		"dry_run": {"type": "boolean"},
		"groups": {
			"type": "array",
			"minItems": 1,
			"maxItems": 64,
			"items": {
				"type": "object",
				"properties": {
					"resources": {
						"type": "object",
						"minProperties": 1,
						"patternProperties": {"^[A-Z0-9_]+$": {"type": "integer", "minimum": 1}},
						"additionalProperties": false
					},
					"required": {"type": "array", "items": {"type": "string", "pattern": "^!?[A-Z0-9_]+$"}, "uniqueItems": true}
				},
				"required": ["resources"],
				"additionalProperties": false
			}
		}
	},
	"required": ["consumer_uuid", "project_id", "user_id", "groups"],
	"additionalProperties": false
}`

// BenchmarkValidate validates the bodies the API validates most: an
// allocation write, a claim, and a claim whose every field is wrong (the
// error path builds messages).
func BenchmarkValidate(b *testing.B) {
	cases := []struct {
		name, schema, doc string
		valid             bool
	}{
		{"allocation", benchAllocationSchema, `{"allocations": {
			"4e061c03-611e-4caa-bf26-999dcff4284e": {"resources": {"VCPU": 2, "MEMORY_MB": 2048}, "generation": 3},
			"7d2590ae-fb85-4080-9306-058b4c915e3f": {"resources": {"DISK_GB": 20}}},
			"project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`, true},
		{"claim", benchClaimSchema, `{"consumer_uuid": "4e061c03-611e-4caa-bf26-999dcff4284e", "project_id": "p", "user_id": "u",
			"groups": [{"resources": {"VCPU": 2, "MEMORY_MB": 2048}, "required": ["HW_CPU_X86_AVX2", "!CUSTOM_SLOW"]}]}`, true},
		{"claim/invalid", benchClaimSchema, `{"consumer_uuid": 5, "project_id": "", "user_id": [], "extra": 1,
			"groups": [{"resources": {"vcpu": 0}, "required": ["a", "a"]}]}`, false},
	}
	for _, c := range cases {
		s := Must(c.schema)
		doc, err := parse([]byte(c.doc))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Validate(doc); (err == nil) != c.valid {
			b.Fatalf("%s: Validate = %v, want valid %v", c.name, err, c.valid)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = s.Validate(doc)
			}
		})
	}
}
