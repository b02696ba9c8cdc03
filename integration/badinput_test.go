package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/berthd/berth/ledger/ledgertest"
)

// badInput is a request the API must refuse with status want, changing
// nothing.
type badInput struct {
	name    string
	method  string
	path    string
	version string // OpenStack-API-Version; empty means latest
	body    string
	want    int
}

// A fresh consumer, and an allocation body for the fixture's consumer
// (generation 1) holding resources on cn1.
const newConsumer = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"

func allocBody(resources string, consumerGen string) string {
	return `{"allocations": {"` + rootUUID + `": {"resources": ` + resources + `}},
		"project_id": "proj", "user_id": "user", "consumer_generation": ` + consumerGen + `, "consumer_type": "INSTANCE"}`
}

// malformed are bodies no endpoint accepts.
var malformed = []struct{ name, body string }{
	{"empty", ""},
	{"truncated", `{"name": `},
	{"trailing garbage", `{} x`},
	{"two documents", `{} {}`},
	{"single quotes", `{'name': 'x'}`},
	{"trailing comma", `{"a": 1,}`},
	{"raw NUL", "{\"name\": \"a\x00\"}"},
	{"deep nesting", strings.Repeat("[", 10001) + strings.Repeat("]", 10001)},
	{"not an object", `[1, 2, 3]`},
	{"null", `null`},
	{"string", `"x"`},
	{"huge number", `1e400`},
}

// badInputs lists, per endpoint, bodies and parameters each endpoint must
// refuse. Generations in the fixture: cn1 4, its child 2, cn2 2, empty 0;
// the consumer 1.
func badInputs() map[string][]badInput {
	rp := "/resource_providers/" + rootUUID
	cases := map[string][]badInput{
		"POST /resource_providers": {
			{name: "wrong type", body: `{"name": 5}`, want: 400},
			{name: "unknown field", body: `{"name": "x", "generation": 3}`, want: 400},
			{name: "name too long", body: `{"name": "` + strings.Repeat("x", 201) + `"}`, want: 400},
			{name: "name with NUL", body: `{"name": "a\u0000b"}`, want: 400},
			{name: "duplicate name", body: `{"name": "cn1"}`, want: 409},
			{name: "duplicate uuid", body: `{"name": "x", "uuid": "` + rootUUID + `"}`, want: 409},
			{name: "duplicate uuid without dashes", body: `{"name": "x", "uuid": "` + strings.ReplaceAll(rootUUID, "-", "") + `"}`, want: 409},
			{name: "bad uuid", body: `{"name": "x", "uuid": "not-a-uuid"}`, want: 400},
			{name: "empty uuid", body: `{"name": "x", "uuid": ""}`, want: 400},
			{name: "uuid with NUL", body: `{"name": "x", "uuid": "` + newConsumer + `\u0000"}`, want: 400},
			{name: "unknown parent", body: `{"name": "x", "parent_provider_uuid": "` + unknownUUID + `"}`, want: 400},
			{name: "parent is itself", body: `{"name": "x", "uuid": "` + newConsumer + `", "parent_provider_uuid": "` + newConsumer + `"}`, want: 400},
			{name: "parent before 1.14", version: "placement 1.13", body: `{"name": "x", "parent_provider_uuid": "` + rootUUID + `"}`, want: 400},
		},
		"PUT /resource_providers/{uuid}": {
			{name: "missing name", path: rp, body: `{}`, want: 400},
			{name: "uuid in body", path: rp, body: `{"name": "cn1", "uuid": "` + newConsumer + `"}`, want: 400},
			{name: "name with NUL", path: rp, body: `{"name": "\u0000"}`, want: 400},
			{name: "duplicate name", path: rp, body: `{"name": "cn2"}`, want: 409},
			{name: "own child as parent", path: rp, body: `{"name": "cn1", "parent_provider_uuid": "` + childUUID + `"}`, want: 400},
			{name: "unknown parent", path: rp, body: `{"name": "cn1", "parent_provider_uuid": "` + unknownUUID + `"}`, want: 400},
			{name: "reparent before 1.37", path: "/resource_providers/" + childUUID, version: "placement 1.36",
				body: `{"name": "cn1_numa0", "parent_provider_uuid": "` + root2UUID + `"}`, want: 400},
			{name: "unknown provider", path: "/resource_providers/" + unknownUUID, body: `{"name": "x"}`, want: 404},
			{name: "not a uuid", path: "/resource_providers/xyz", body: `{"name": "x"}`, want: 404},
		},
		"DELETE /resource_providers/{uuid}": {
			{name: "has a child", path: rp, want: 409},
			{name: "has allocations", path: "/resource_providers/" + childUUID, want: 409},
			{name: "unknown", path: "/resource_providers/" + unknownUUID, want: 404},
			{name: "not a uuid", path: "/resource_providers/xyz", want: 404},
			{name: "NUL", path: "/resource_providers/%00", want: 404},
		},
		"PUT /resource_providers/{uuid}/inventories": {
			{name: "stale generation", path: rp + "/inventories", body: `{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}`, want: 409},
			{name: "generation 1e400", path: rp + "/inventories", body: `{"resource_provider_generation": 1e400, "inventories": {}}`, want: 400},
			{name: "generation beyond int64", path: rp + "/inventories", body: `{"resource_provider_generation": 99999999999999999999, "inventories": {}}`, want: 400},
			{name: "generation int64 max", path: rp + "/inventories", body: `{"resource_provider_generation": 9223372036854775807, "inventories": {}}`, want: 409},
			{name: "removes classes in use", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {}}`, want: 409},
			{name: "one good class, one unknown", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {
				"VCPU": {"total": 16}, "MEMORY_MB": {"total": 4096}, "CUSTOM_NOPE": {"total": 1}}}`, want: 400},
			{name: "lowercase class", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {"vcpu": {"total": 8}}}`, want: 400},
			{name: "total too big", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {"VCPU": {"total": 2147483648}}}`, want: 400},
			{name: "total zero", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {"VCPU": {"total": 0}}}`, want: 400},
			{name: "reserved over total", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {
				"VCPU": {"total": 8, "reserved": 9}, "MEMORY_MB": {"total": 4096}}}`, want: 400},
			{name: "negative allocation ratio", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {
				"VCPU": {"total": 8, "allocation_ratio": -2}, "MEMORY_MB": {"total": 4096}}}`, want: 400},
			{name: "allocation ratio 1e400", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {
				"VCPU": {"total": 8, "allocation_ratio": 1e400}, "MEMORY_MB": {"total": 4096}}}`, want: 400},
			{name: "unknown field", path: rp + "/inventories", body: `{"resource_provider_generation": 4, "inventories": {"VCPU": {"total": 8, "colour": "red"}}}`, want: 400},
			{name: "unknown provider", path: "/resource_providers/" + unknownUUID + "/inventories", body: `{"resource_provider_generation": 0, "inventories": {}}`, want: 404},
		},
		"POST /resource_providers/{uuid}/inventories": {
			{name: "class exists", path: rp + "/inventories", body: `{"resource_class": "VCPU", "total": 8}`, want: 409},
			{name: "unknown class", path: rp + "/inventories", body: `{"resource_class": "CUSTOM_NOPE", "total": 8}`, want: 400},
			{name: "class with NUL", path: rp + "/inventories", body: `{"resource_class": "DISK_GB\u0000", "total": 8}`, want: 400},
			{name: "total beyond int64", path: rp + "/inventories", body: `{"resource_class": "DISK_GB", "total": 99999999999999999999}`, want: 400},
			{name: "missing total", path: rp + "/inventories", body: `{"resource_class": "DISK_GB"}`, want: 400},
		},
		"PUT /resource_providers/{uuid}/inventories/{class}": {
			{name: "stale generation", path: rp + "/inventories/VCPU", body: `{"resource_provider_generation": 0, "total": 8}`, want: 409},
			{name: "unknown class", path: rp + "/inventories/CUSTOM_NOPE", body: `{"resource_provider_generation": 4, "total": 8}`, want: 404},
			{name: "class the provider lacks", path: rp + "/inventories/DISK_GB", body: `{"resource_provider_generation": 4, "total": 8}`, want: 400},
			{name: "NUL class", path: rp + "/inventories/%00", body: `{"resource_provider_generation": 4, "total": 8}`, want: 400},
			{name: "missing generation", path: rp + "/inventories/VCPU", body: `{"total": 8}`, want: 400},
		},
		"DELETE /resource_providers/{uuid}/inventories[/{class}]": {
			{name: "all, in use", path: rp + "/inventories", want: 409},
			{name: "one, in use", path: rp + "/inventories/VCPU", want: 409},
			{name: "one the provider lacks", path: rp + "/inventories/DISK_GB", want: 404},
			{name: "unknown class", path: rp + "/inventories/CUSTOM_NOPE", want: 404},
			{name: "NUL class", path: rp + "/inventories/%00", want: 400},
			{name: "unknown provider", path: "/resource_providers/" + unknownUUID + "/inventories", want: 404},
		},
		"PUT /resource_providers/{uuid}/traits": {
			{name: "one known, one unknown", path: rp + "/traits", body: `{"traits": ["HW_CPU_X86_SSE", "CUSTOM_NOPE"], "resource_provider_generation": 4}`, want: 400},
			{name: "stale generation", path: rp + "/traits", body: `{"traits": [], "resource_provider_generation": 0}`, want: 409},
			{name: "generation beyond int64", path: rp + "/traits", body: `{"traits": [], "resource_provider_generation": 99999999999999999999}`, want: 400},
			{name: "generation not an integer", path: rp + "/traits", body: `{"traits": [], "resource_provider_generation": 4.5}`, want: 400},
			{name: "generation as a string", path: rp + "/traits", body: `{"traits": [], "resource_provider_generation": "4"}`, want: 400},
			{name: "trait with NUL", path: rp + "/traits", body: `{"traits": ["\u0000"], "resource_provider_generation": 4}`, want: 400},
			{name: "lowercase trait", path: rp + "/traits", body: `{"traits": ["custom_fast"], "resource_provider_generation": 4}`, want: 400},
			{name: "traits not a list", path: rp + "/traits", body: `{"traits": "HW_CPU_X86_SSE", "resource_provider_generation": 4}`, want: 400},
			{name: "missing generation", path: rp + "/traits", body: `{"traits": []}`, want: 400},
			{name: "unknown provider", path: "/resource_providers/" + unknownUUID + "/traits", body: `{"traits": [], "resource_provider_generation": 0}`, want: 404},
		},
		"DELETE /resource_providers/{uuid}/traits": {
			{name: "unknown provider", path: "/resource_providers/" + unknownUUID + "/traits", want: 404},
		},
		"PUT /resource_providers/{uuid}/aggregates": {
			{name: "stale generation", path: rp + "/aggregates", body: `{"aggregates": [], "resource_provider_generation": 0}`, want: 409},
			{name: "one good, one bad uuid", path: rp + "/aggregates", body: `{"aggregates": ["` + newConsumer + `", "xyz"], "resource_provider_generation": 4}`, want: 400},
			{name: "duplicates", path: rp + "/aggregates", body: `{"aggregates": ["` + aggUUID + `", "` + aggUUID + `"], "resource_provider_generation": 4}`, want: 400},
			{name: "list at 1.19", path: rp + "/aggregates", body: `["` + aggUUID + `"]`, want: 400},
			{name: "object at 1.1", path: rp + "/aggregates", version: "placement 1.1", body: `{"aggregates": []}`, want: 400},
			{name: "bad uuid at 1.1", path: rp + "/aggregates", version: "placement 1.1", body: `["xyz"]`, want: 400},
			{name: "generation beyond int64", path: rp + "/aggregates", body: `{"aggregates": [], "resource_provider_generation": 99999999999999999999}`, want: 400},
			{name: "unknown provider", path: "/resource_providers/" + unknownUUID + "/aggregates", body: `{"aggregates": [], "resource_provider_generation": 0}`, want: 404},
		},
		"POST /resource_classes": {
			{name: "exists", body: `{"name": "` + customClass + `"}`, want: 409},
			{name: "lowercase", body: `{"name": "CUSTOM_gold"}`, want: 400},
			{name: "no prefix", body: `{"name": "GOLD"}`, want: 400},
			{name: "standard", body: `{"name": "VCPU"}`, want: 400},
			{name: "NUL", body: `{"name": "CUSTOM_A\u0000"}`, want: 400},
			{name: "too long", body: `{"name": "CUSTOM_` + strings.Repeat("A", 300) + `"}`, want: 400},
			{name: "unknown field", body: `{"name": "CUSTOM_X", "id": 5}`, want: 400},
		},
		"PUT /resource_classes/{name}": {
			{name: "lowercase", path: "/resource_classes/CUSTOM_gold", want: 400},
			{name: "standard", path: "/resource_classes/VCPU", want: 400},
			{name: "NUL", path: "/resource_classes/CUSTOM_%00", want: 400},
			{name: "rename an unknown class (1.6)", path: "/resource_classes/CUSTOM_NOPE", version: "placement 1.6", body: `{"name": "CUSTOM_SILVER"}`, want: 404},
			{name: "rename a standard class (1.6)", path: "/resource_classes/VCPU", version: "placement 1.6", body: `{"name": "CUSTOM_SILVER"}`, want: 400},
			{name: "rename to a bad name (1.6)", path: "/resource_classes/" + customClass, version: "placement 1.6", body: `{"name": "gold"}`, want: 400},
		},
		"DELETE /resource_classes/{name}": {
			{name: "in use", path: "/resource_classes/" + customClass, want: 409},
			{name: "standard", path: "/resource_classes/VCPU", want: 400},
			{name: "unknown", path: "/resource_classes/CUSTOM_NOPE", want: 404},
			{name: "NUL", path: "/resource_classes/%00", want: 400},
		},
		"PUT /traits/{name}": {
			{name: "lowercase", path: "/traits/CUSTOM_lower", want: 400},
			{name: "standard", path: "/traits/HW_CPU_X86_AVX", want: 400},
			{name: "NUL", path: "/traits/CUSTOM_%00", want: 400},
			{name: "unicode", path: "/traits/CUSTOM_%E2%98%83", want: 400},
			{name: "too long", path: "/traits/CUSTOM_" + strings.Repeat("A", 300), want: 400},
		},
		"DELETE /traits/{name}": {
			{name: "in use", path: "/traits/" + customTrait, want: 409},
			{name: "standard", path: "/traits/HW_CPU_X86_AVX", want: 400},
			{name: "unknown", path: "/traits/CUSTOM_NOPE", want: 404},
			{name: "NUL", path: "/traits/%00", want: 400},
		},
		"PUT /allocations/{consumer}": {
			{name: "over capacity", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": 17}`, "1"), want: 409},
			{name: "amount zero", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": 0}`, "1"), want: 400},
			{name: "amount negative", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": -1}`, "1"), want: 400},
			{name: "amount beyond int64", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": 99999999999999999999}`, "1"), want: 400},
			{name: "amount int64 max", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": 9223372036854775807}`, "1"), want: 409},
			{name: "amount 1e400", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": 1e400}`, "1"), want: 400},
			{name: "amount as a string", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": "1"}`, "1"), want: 400},
			{name: "unknown class", path: "/allocations/" + consumerUUID, body: allocBody(`{"CUSTOM_NOPE": 1}`, "1"), want: 400},
			{name: "class the provider lacks", path: "/allocations/" + consumerUUID, body: allocBody(`{"DISK_GB": 1}`, "1"), want: 409},
			{name: "lowercase class", path: "/allocations/" + consumerUUID, body: allocBody(`{"vcpu": 1}`, "1"), want: 400},
			{name: "step size", path: "/allocations/" + consumerUUID, body: allocBody(`{"MEMORY_MB": 100}`, "1"), want: 409},
			{name: "max unit", path: "/allocations/" + consumerUUID, body: allocBody(`{"MEMORY_MB": 8192}`, "1"), want: 409},
			{name: "stale consumer generation", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": 1}`, "0"), want: 409},
			{name: "null generation for an existing consumer", path: "/allocations/" + consumerUUID, body: allocBody(`{"VCPU": 1}`, "null"), want: 409},
			{name: "generation for a new consumer", path: "/allocations/" + newConsumer, body: allocBody(`{"VCPU": 1}`, "3"), want: 409},
			{name: "missing consumer generation", path: "/allocations/" + newConsumer, version: "placement 1.28",
				body: `{"allocations": {"` + rootUUID + `": {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u"}`, want: 400},
			{name: "unknown provider", path: "/allocations/" + newConsumer, body: strings.Replace(allocBody(`{"VCPU": 1}`, "null"), rootUUID, unknownUUID, 1), want: 400},
			{name: "project with NUL", path: "/allocations/" + newConsumer, body: strings.Replace(allocBody(`{"VCPU": 1}`, "null"), `"proj"`, `"p\u0000"`, 1), want: 400},
			{name: "lowercase consumer type", path: "/allocations/" + newConsumer, body: strings.Replace(allocBody(`{"VCPU": 1}`, "null"), "INSTANCE", "instance", 1), want: 400},
			{name: "bad consumer uuid", path: "/allocations/xyz", body: allocBody(`{"VCPU": 1}`, "null"), want: 400},
			{name: "unknown field", path: "/allocations/" + newConsumer, body: strings.Replace(allocBody(`{"VCPU": 1}`, "null"), `"user_id"`, `"colour": 1, "user_id"`, 1), want: 400},
			{name: "list form over capacity (1.0)", path: "/allocations/" + newConsumer, version: "placement 1.0",
				body: `{"allocations": [{"resource_provider": {"uuid": "` + rootUUID + `"}, "resources": {"VCPU": 100}}]}`, want: 409},
		},
		"POST /allocations": {
			{name: "second consumer over capacity", body: `{
				"` + consumerUUID + `": {"allocations": {}, "project_id": "proj", "user_id": "user", "consumer_generation": 1, "consumer_type": "INSTANCE"},
				"` + newConsumer + `": {"allocations": {"` + root2UUID + `": {"resources": {"VCPU": 5}}}, "project_id": "proj", "user_id": "user",
					"consumer_generation": null, "consumer_type": "MIGRATION"}}`, want: 409},
			{name: "second consumer unknown class", body: `{
				"` + consumerUUID + `": {"allocations": {}, "project_id": "proj", "user_id": "user", "consumer_generation": 1, "consumer_type": "INSTANCE"},
				"` + newConsumer + `": {"allocations": {"` + root2UUID + `": {"resources": {"CUSTOM_NOPE": 1}}}, "project_id": "proj", "user_id": "user",
					"consumer_generation": null, "consumer_type": "MIGRATION"}}`, want: 400},
			{name: "first consumer stale", body: `{
				"` + consumerUUID + `": {"allocations": {}, "project_id": "proj", "user_id": "user", "consumer_generation": 7, "consumer_type": "INSTANCE"},
				"` + newConsumer + `": {"allocations": {"` + root2UUID + `": {"resources": {"VCPU": 2}}}, "project_id": "proj", "user_id": "user",
					"consumer_generation": null, "consumer_type": "MIGRATION"}}`, want: 409},
			{name: "bad consumer key", body: `{"xyz": {"allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "X"}}`, want: 400},
			{name: "empty", body: `{}`, want: 400},
			{name: "before 1.13", version: "placement 1.12", body: `{}`, want: 404},
		},
		"DELETE /allocations/{consumer}": {
			{name: "unknown", path: "/allocations/" + unknownUUID, want: 404},
			{name: "not a uuid", path: "/allocations/xyz", want: 404},
			{name: "NUL", path: "/allocations/%00", want: 404},
		},
		"POST /reshaper": {
			{name: "stale provider generation", body: reshapeBody(3, 2, 1, `"VCPU": 2`), want: 409},
			{name: "stale second provider", body: reshapeBody(4, 0, 1, `"VCPU": 2`), want: 409},
			{name: "stale consumer", body: reshapeBody(4, 2, 5, `"VCPU": 2`), want: 409},
			{name: "over capacity after the move", body: reshapeBody(4, 2, 1, `"VCPU": 9`), want: 409},
			{name: "unknown class moved", body: reshapeBody(4, 2, 1, `"CUSTOM_NOPE": 1`), want: 400},
			{name: "generation beyond int64", body: strings.Replace(reshapeBody(4, 2, 1, `"VCPU": 2`), `"resource_provider_generation": 4`,
				`"resource_provider_generation": 99999999999999999999`, 1), want: 400},
			{name: "unknown provider", body: strings.Replace(reshapeBody(4, 2, 1, `"VCPU": 2`), childUUID, unknownUUID, 1), want: 400},
			{name: "empty inventories", body: `{"inventories": {}, "allocations": {}}`, want: 400},
			{name: "before 1.30", version: "placement 1.29", body: reshapeBody(4, 2, 1, `"VCPU": 2`), want: 404},
		},
		"POST /claims": {
			{name: "over capacity", path: "/claims", body: `{"consumer_uuid": "` + newConsumer + `", "project_id": "p", "user_id": "u", "resources": {"VCPU": 100}}`, want: 409},
			{name: "unknown class", path: "/claims", body: `{"consumer_uuid": "` + newConsumer + `", "project_id": "p", "user_id": "u", "resources": {"CUSTOM_NOPE": 1}}`, want: 400},
			{name: "bad query", path: "/claims", body: `{"consumer_uuid": "` + newConsumer + `", "project_id": "p", "user_id": "u", "resources": {"VCPU": -1}}`, want: 400},
			{name: "project with NUL", path: "/claims", body: `{"consumer_uuid": "` + newConsumer + `", "project_id": "\u0000", "user_id": "u", "resources": {"VCPU": 1}}`, want: 400},
			{name: "stale consumer", path: "/claims", body: `{"consumer_uuid": "` + consumerUUID + `", "project_id": "proj", "user_id": "user", "consumer_generation": 9, "resources": {"VCPU": 1}}`, want: 409},
			{name: "reschedule unknown consumer", path: "/claims/" + unknownUUID + "/reschedule", body: `{"resources": {"VCPU": 1}}`, want: 404},
			{name: "move unknown consumer", path: "/claims/" + unknownUUID + "/move", body: `{"migration_uuid": "` + newConsumer + `", "resources": {"VCPU": 1}}`, want: 404},
			{name: "confirm unknown consumer", path: "/claims/" + unknownUUID + "/move/confirm", body: `{}`, want: 404},
			{name: "revert unknown migration", path: "/claims/" + consumerUUID + "/move/revert", body: `{"migration_uuid": "` + unknownUUID + `"}`, want: 404},
			{name: "unknown target", path: "/claims", body: `{"consumer_uuid": "` + newConsumer + `", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "target": "nosuch"}`, want: 400},
		},
	}
	// Every endpoint that takes a body refuses malformed ones.
	for _, route := range []struct{ key, method, path string }{
		{"POST /resource_providers", "POST", "/resource_providers"},
		{"PUT /resource_providers/{uuid}", "PUT", rp},
		{"PUT /resource_providers/{uuid}/inventories", "PUT", rp + "/inventories"},
		{"POST /resource_providers/{uuid}/inventories", "POST", rp + "/inventories"},
		{"PUT /resource_providers/{uuid}/inventories/{class}", "PUT", rp + "/inventories/VCPU"},
		{"PUT /resource_providers/{uuid}/traits", "PUT", rp + "/traits"},
		{"PUT /resource_providers/{uuid}/aggregates", "PUT", rp + "/aggregates"},
		{"POST /resource_classes", "POST", "/resource_classes"},
		{"PUT /allocations/{consumer}", "PUT", "/allocations/" + consumerUUID},
		{"POST /allocations", "POST", "/allocations"},
		{"POST /reshaper", "POST", "/reshaper"},
		{"POST /claims", "POST", "/claims"},
	} {
		for _, m := range malformed {
			cases[route.key] = append(cases[route.key], badInput{name: "malformed: " + m.name, method: route.method, path: route.path, body: m.body, want: 400})
		}
	}
	// Fill in the method and path from the key where a case leaves them out.
	for key, list := range cases {
		method, path, _ := strings.Cut(key, " ")
		for i := range list {
			if list[i].method == "" {
				list[i].method = method
			}
			if list[i].path == "" {
				list[i].path = path
			}
		}
	}
	return cases
}

// reshapeBody moves the fixture consumer's VCPU from cn1 to its child,
// with these generations for cn1, the child and the consumer, and
// resources (besides CUSTOM_GOLD) on the child.
func reshapeBody(rootGen, childGen, consumerGen int, childResources string) string {
	return fmt.Sprintf(`{"inventories": {
		"%s": {"resource_provider_generation": %d, "inventories": {"MEMORY_MB": {"total": 4096, "max_unit": 4096, "step_size": 256}}},
		"%s": {"resource_provider_generation": %d, "inventories": {"CUSTOM_GOLD": {"total": 4}, "VCPU": {"total": 8}}}},
		"allocations": {"%s": {"allocations": {"%s": {"resources": {"MEMORY_MB": 512}}, "%s": {"resources": {%s, "CUSTOM_GOLD": 1}}},
			"project_id": "proj", "user_id": "user", "consumer_generation": %d, "consumer_type": "INSTANCE"}}}`,
		rootUUID, rootGen, childUUID, childGen, consumerUUID, rootUUID, childUUID, childResources, consumerGen)
}

// apiView is what a client sees of the fixture: every GET that could
// show a change, concatenated.
func (e *env) apiView(t *testing.T) string {
	t.Helper()
	paths := []string{
		"/resource_providers", "/resource_classes", "/traits", "/usages?project_id=proj",
		"/allocations/" + consumerUUID, "/allocations/" + newConsumer,
	}
	for _, rp := range []string{rootUUID, childUUID, root2UUID, emptyUUID} {
		for _, sub := range []string{"", "/inventories", "/traits", "/aggregates", "/usages", "/allocations"} {
			paths = append(paths, "/resource_providers/"+rp+sub)
		}
	}
	var b bytes.Buffer
	for _, p := range paths {
		r := e.do("GET", p, latest, nil)
		fmt.Fprintf(&b, "GET %s: %d %s\n", p, r.status, r.body)
	}
	return b.String()
}

// TestBadInputChangesNothing sends each mutating endpoint bodies and
// parameters it must refuse, and checks the status, Placement's error
// format, and that neither the database nor what the API shows changed.
func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	saved, err := ledgertest.SaveRows(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer saved.Close()
	fp := e.fingerprint(t)
	view := e.apiView(t)
	// restore puts the fixture back after a case that changed it, so that
	// one failure does not make every later case fail.
	restore := func(t *testing.T) {
		t.Helper()
		e.store.Close()
		if err := saved.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		fresh, err := openEnv(ctx, e.dbURL, e.fp)
		if err != nil {
			t.Fatal(err)
		}
		e.store, e.api = fresh.store, fresh.api
	}
	for key, list := range badInputs() {
		t.Run(key, func(t *testing.T) {
			for _, c := range list {
				version := c.version
				if version == "" {
					version = latest
				}
				var body []byte
				if c.body != "" || c.method == "POST" || c.method == "PUT" {
					body = []byte(c.body)
				}
				r := e.do(c.method, c.path, version, body)
				if r.status != c.want {
					t.Errorf("%s: %s %s: status %d, want %d: %s", c.name, c.method, c.path, r.status, c.want, r.body)
				}
				if r.status >= 400 {
					if err := checkErrorBody(c.method, r); err != nil {
						t.Errorf("%s: %v", c.name, err)
					}
				}
				if diff := fp.Diff(e.fingerprint(t)); len(diff) > 0 {
					t.Errorf("%s: answered %d and changed %v", c.name, r.status, diff)
					restore(t)
				} else if v := e.apiView(t); v != view {
					t.Errorf("%s: answered %d and the API shows a change:\n%s", c.name, r.status, lineDiff(view, v))
					restore(t)
				}
			}
		})
	}
}

// TestBadHeadersChangeNothing sends valid writes with headers that make
// them invalid: they must be refused in Placement's format, changing
// nothing.
func TestBadHeadersChangeNothing(t *testing.T) {
	e := newEnv(t)
	fp := e.fingerprint(t)
	view := e.apiView(t)
	good := `{"traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": 4}`
	path := "/resource_providers/" + rootUUID + "/traits"
	hdr := func(kv ...string) http.Header {
		h := http.Header{"Openstack-Api-Version": {latest}, "Content-Type": {"application/json"}}
		for i := 0; i < len(kv); i += 2 {
			h[http.CanonicalHeaderKey(kv[i])] = []string{kv[i+1]}
		}
		return h
	}
	for _, c := range []struct {
		name string
		h    http.Header
		body string
		want int
	}{
		{"no token", hdr("X-Auth-Token", ""), good, 401},
		{"not admin", hdr("X-Auth-Token", "alice"), good, 403},
		{"text/plain body", hdr("Content-Type", "text/plain"), good, 415},
		{"no content type", hdr("Content-Type", ""), good, 400},
		{"bad content type", hdr("Content-Type", "APPLICATION/JSON"), good, 415},
		{"bad version", hdr("OpenStack-API-Version", "placement one"), good, 400},
		{"version too new", hdr("OpenStack-API-Version", "placement 1.40"), good, 406},
		{"version huge", hdr("OpenStack-API-Version", "placement 1.99999999999999999999"), good, 400},
		{"version before traits", hdr("OpenStack-API-Version", "placement 1.5"), good, 404},
		{"body over 32 MiB", hdr(), `{"traits": ["` + strings.Repeat("A", 33<<20) + `"], "resource_provider_generation": 4}`, 413},
	} {
		r := e.doHeaders("PUT", path, c.h, []byte(c.body))
		if r.status != c.want {
			t.Errorf("%s: status %d, want %d: %.300s", c.name, r.status, c.want, r.body)
		}
		if err := checkErrorBody("PUT", r); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if diff := fp.Diff(e.fingerprint(t)); len(diff) > 0 {
			t.Fatalf("%s: answered %d and changed %v", c.name, r.status, diff)
		}
		if v := e.apiView(t); v != view {
			t.Fatalf("%s: answered %d and the API shows a change:\n%s", c.name, r.status, lineDiff(view, v))
		}
	}
	// The same request with good headers is accepted: the refusals above
	// were the headers'.
	if r := e.doHeaders("PUT", path, hdr(), []byte(good)); r.status != 200 {
		t.Errorf("good request: %d %s", r.status, r.body)
	}
}

// lineDiff lists the lines of b that are not in a, and the other way round.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	am, bm := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !bm[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !am[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
