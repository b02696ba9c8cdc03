package integration

import "fmt"

const (
	ckCN1   = "5f000000-0000-4000-8000-000000000001"
	ckCN2   = "5f000000-0000-4000-8000-000000000002"
	ckChild = "5f000000-0000-4000-8000-000000000010"
	ckC1    = "5f000000-0000-4000-8000-0000000000c1"
	ckC2    = "5f000000-0000-4000-8000-0000000000c2"
)

// checksSession sends requests with several things wrong at once: which
// error a client gets depends on the order of Placement's checks (schema,
// existence, generation, class, capacity), and so does what it fixes
// first.
func checksSession() corpusSession {
	a := func(prov, res string) string { return `"` + prov + `": {"resources": ` + res + `}` }
	put := func(name, consumer, gen string, allocs string) corpusStep {
		return st(name, "PUT", "/allocations/"+consumer, "1.39", j(`{"allocations": {`+allocs+`},
			"project_id": "p", "user_id": "u", "consumer_generation": `+gen+`, "consumer_type": "INSTANCE"}`))
	}
	// fresh names a consumer of its own for each multi-fault write: a
	// refused write can leave an empty consumer behind in Placement (see
	// the step after the first), which would change the next answers.
	fresh := func(n int) string { return ckC2[:34] + fmt.Sprintf("%02d", n) }
	return corpusSession{name: "checks", about: "requests with several faults: the order of Placement's checks", steps: []corpusStep{
		st("create cn1", "POST", "/resource_providers", "1.39", j(`{"name": "cn1", "uuid": "`+ckCN1+`"}`)),
		st("create cn2", "POST", "/resource_providers", "1.39", j(`{"name": "cn2", "uuid": "`+ckCN2+`"}`)),
		st("create child", "POST", "/resource_providers", "1.39", j(`{"name": "child", "uuid": "`+ckChild+`", "parent_provider_uuid": "`+ckCN1+`"}`)),
		st("inventory cn1", "PUT", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4, "max_unit": 2}, "MEMORY_MB": {"total": 1024}}}`)),
		st("inventory cn2", "PUT", rp(ckCN2)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}`)),
		put("setup allocation", ckC1, "null", a(ckCN1, `{"VCPU": 1}`)),

		// Providers.
		st("create: duplicate name and unknown parent", "POST", "/resource_providers", "1.39", j(`{"name": "cn1", "parent_provider_uuid": "`+cpNone+`"}`)),
		st("create: duplicate name and duplicate uuid", "POST", "/resource_providers", "1.39", j(`{"name": "cn2", "uuid": "`+ckCN1+`"}`)),
		st("create: duplicate uuid and unknown parent", "POST", "/resource_providers", "1.39", j(`{"name": "x", "uuid": "`+ckCN1+`", "parent_provider_uuid": "`+cpNone+`"}`)),
		st("create: parent is itself", "POST", "/resource_providers", "1.39", j(`{"name": "self", "uuid": "`+cpNone+`", "parent_provider_uuid": "`+cpNone+`"}`)),
		st("update: duplicate name and unknown parent", "PUT", rp(ckCN2), "1.39", j(`{"name": "cn1", "parent_provider_uuid": "`+cpNone+`"}`)),
		st("update: parent is itself", "PUT", rp(ckCN2), "1.39", j(`{"name": "cn2", "parent_provider_uuid": "`+ckCN2+`"}`)),
		st("update: child becomes root's parent", "PUT", rp(ckCN1), "1.39", j(`{"name": "cn1", "parent_provider_uuid": "`+ckChild+`"}`)),
		st("update: move child to another tree", "PUT", rp(ckChild), "1.39", j(`{"name": "child", "parent_provider_uuid": "`+ckCN2+`"}`)),
		st("update: move child back", "PUT", rp(ckChild), "1.39", j(`{"name": "child", "parent_provider_uuid": "`+ckCN1+`"}`)),
		st("tree after moves", "GET", "/resource_providers?in_tree="+ckCN1, "1.39", ""),

		// Inventories.
		st("inventories: stale generation and unknown class", "PUT", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {"CUSTOM_NOPE": {"total": 1}}}`)),
		st("inventories: stale generation and class in use removed", "PUT", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {}}`)),
		st("inventories: unknown class and class in use removed", "PUT", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 1, "inventories": {"CUSTOM_NOPE": {"total": 1}}}`)),
		st("inventories: unknown class and bad min/max", "PUT", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 4, "min_unit": 5, "max_unit": 2}, "CUSTOM_NOPE": {"total": 1}}}`)),
		st("inventories: reserved above total and class in use removed", "PUT", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 1, "inventories": {"MEMORY_MB": {"total": 10, "reserved": 11}}}`)),
		st("inventories: two classes in use removed", "PUT", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 1, "inventories": {"DISK_GB": {"total": 10}}}`)),
		st("inventory: unknown provider and unknown class", "PUT", rp(cpNone)+"/inventories/CUSTOM_NOPE", "1.39", j(`{"resource_provider_generation": 0, "total": 1}`)),
		st("inventory: stale generation and class not on provider", "PUT", rp(ckCN1)+"/inventories/DISK_GB", "1.39", j(`{"resource_provider_generation": 0, "total": 1}`)),
		st("inventory: class not on provider", "PUT", rp(ckCN1)+"/inventories/DISK_GB", "1.39", j(`{"resource_provider_generation": 1, "total": 1}`)),
		st("inventory: stale generation, in use", "DELETE", rp(ckCN1)+"/inventories/VCPU", "1.39", ""),
		st("inventory: delete unknown class", "DELETE", rp(ckCN1)+"/inventories/CUSTOM_NOPE", "1.39", ""),
		st("inventory: post stale and exists", "POST", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_class": "VCPU", "total": 4, "resource_provider_generation": 0}`)),
		st("inventory: post unknown class, stale", "POST", rp(ckCN1)+"/inventories", "1.39", j(`{"resource_class": "CUSTOM_NOPE", "total": 4, "resource_provider_generation": 0}`)),

		// Allocations.
		put("alloc: unknown provider and over capacity", fresh(1), "null", a(cpNone, `{"VCPU": 1}`)+", "+a(ckCN1, `{"VCPU": 100}`)),
		put("alloc: after a refused first write, null generation", fresh(1), "null", a(ckCN1, `{"VCPU": 1}`)),
		st("alloc: remove what that wrote", "DELETE", "/allocations/"+fresh(1), "1.39", ""),
		put("alloc: over capacity first, unknown provider second", fresh(2), "null", a(ckCN1, `{"VCPU": 100}`)+", "+a(cpNone, `{"VCPU": 1}`)),
		put("alloc: unknown class and over capacity", fresh(3), "null", a(ckCN1, `{"CUSTOM_NOPE": 1, "VCPU": 100}`)),
		put("alloc: class not on provider and over max_unit", fresh(4), "null", a(ckCN1, `{"DISK_GB": 1, "VCPU": 3}`)),
		put("alloc: over max_unit on two providers", fresh(5), "null", a(ckCN2, `{"VCPU": 5}`)+", "+a(ckCN1, `{"VCPU": 3}`)),
		put("alloc: stale consumer generation and over capacity", ckC1, "5", a(ckCN1, `{"VCPU": 100}`)),
		put("alloc: null generation for existing and unknown provider", ckC1, "null", a(cpNone, `{"VCPU": 1}`)),
		put("alloc: both classes over on two providers", fresh(6), "null", a(ckCN1, `{"VCPU": 2, "MEMORY_MB": 2000}`)+", "+a(ckCN2, `{"VCPU": 5}`)),
		st("post: two consumers, both wrong", "POST", "/allocations", "1.39", j(`{
			"`+ckC1+`": {"allocations": {`+a(ckCN1, `{"VCPU": 100}`)+`}, "project_id": "p", "user_id": "u", "consumer_generation": 1, "consumer_type": "INSTANCE"},
			"`+fresh(20)+`": {"allocations": {`+a(cpNone, `{"VCPU": 1}`)+`}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}}`)),
		st("post: two consumers, generation wrong second", "POST", "/allocations", "1.39", j(`{
			"`+fresh(21)+`": {"allocations": {`+a(ckCN1, `{"VCPU": 100}`)+`}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"},
			"`+ckC1+`": {"allocations": {`+a(ckCN1, `{"VCPU": 1}`)+`}, "project_id": "p", "user_id": "u", "consumer_generation": 7, "consumer_type": "INSTANCE"}}`)),

		// Traits and aggregates.
		st("traits: unknown provider, stale, unknown trait", "PUT", rp(cpNone)+"/traits", "1.39", j(`{"resource_provider_generation": 9, "traits": ["CUSTOM_NOPE"]}`)),
		st("aggregates: stale and bad uuid", "PUT", rp(ckCN1)+"/aggregates", "1.39", j(`{"resource_provider_generation": 0, "aggregates": ["abc"]}`)),
		st("trait: delete standard, in use", "DELETE", "/traits/COMPUTE_STATUS_DISABLED", "1.39", ""),
		st("trait: set standard on provider", "PUT", rp(ckCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 1, "traits": ["COMPUTE_STATUS_DISABLED"]}`)),
		st("trait: delete standard, in use now", "DELETE", "/traits/COMPUTE_STATUS_DISABLED", "1.39", ""),
		st("class: delete standard in use", "DELETE", "/resource_classes/VCPU", "1.39", ""),
		st("class: update custom at 1.2 to a standard name", "PUT", "/resource_classes/CUSTOM_NOPE", "1.2", j(`{"name": "VCPU"}`)),
		st("class: create", "POST", "/resource_classes", "1.39", j(`{"name": "CUSTOM_CHECK"}`)),
		st("class: rename at 1.2 onto existing", "PUT", "/resource_classes/CUSTOM_CHECK", "1.2", j(`{"name": "CUSTOM_CHECK"}`)),
		st("class: rename at 1.2 non-custom", "PUT", "/resource_classes/CUSTOM_CHECK", "1.2", j(`{"name": "NOT_CUSTOM"}`)),

		// Deletes.
		st("delete: root with child and allocations", "DELETE", rp(ckCN1), "1.39", ""),
		st("delete: unknown provider", "DELETE", rp(cpNone), "1.39", ""),
		st("delete: child", "DELETE", rp(ckChild), "1.39", ""),
		st("delete: root with allocations", "DELETE", rp(ckCN1), "1.39", ""),
		st("delete: allocations", "DELETE", "/allocations/"+ckC1, "1.39", ""),
		st("delete: root", "DELETE", rp(ckCN1), "1.39", ""),
		st("delete: provider with a trait", "DELETE", rp(ckCN2), "1.39", ""),
		st("trait: delete standard, now unused", "DELETE", "/traits/COMPUTE_STATUS_DISABLED", "1.39", ""),
	}}
}
