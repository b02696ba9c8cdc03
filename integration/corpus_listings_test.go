package integration

import "fmt"

const (
	clCN1   = "5d000000-0000-4000-8000-000000000001"
	clCN2   = "5d000000-0000-4000-8000-000000000002"
	clChild = "5d000000-0000-4000-8000-000000000010"
	clNew   = "5d000000-0000-4000-8000-000000000011"
	clC1    = "5d000000-0000-4000-8000-0000000000c1"
	clC2    = "5d000000-0000-4000-8000-0000000000c2"
	clC3    = "5d000000-0000-4000-8000-0000000000c3"
	clC4    = "5d000000-0000-4000-8000-0000000000c4"
	clProjA = "5d000000-0000-4000-8000-0000000000e1"
	clProjB = "5d000000-0000-4000-8000-0000000000e3"
	clUserA = "5d000000-0000-4000-8000-0000000000e2"
	clUserB = "5d000000-0000-4000-8000-0000000000e4"
)

// listingsSession covers the listings and the multi-consumer writes:
// resource classes and traits with their filters, usages by project,
// user and consumer type, consumer types from 1.38, POST /allocations
// with its edge cases, the reshaper's, and chains of deletes.
func listingsSession() corpusSession {
	alloc := func(prov string, res string) string {
		return `"` + prov + `": {"resources": ` + res + `}`
	}
	consumer := func(proj, user, gen, ctype string, allocs ...string) string {
		s := `{"allocations": {`
		for i, a := range allocs {
			if i > 0 {
				s += ", "
			}
			s += a
		}
		s += `}, "project_id": "` + proj + `", "user_id": "` + user + `", "consumer_generation": ` + gen
		if ctype != "" {
			s += `, "consumer_type": "` + ctype + `"`
		}
		return s + "}"
	}
	steps := []corpusStep{
		st("classes before any custom", "GET", "/resource_classes", "1.39", ""),
		st("classes at 1.2", "GET", "/resource_classes", "1.2", ""),
		st("class CUSTOM_ZED", "PUT", "/resource_classes/CUSTOM_ZED", "1.39", ""),
		st("class CUSTOM_ALPHA", "POST", "/resource_classes", "1.39", j(`{"name": "CUSTOM_ALPHA"}`)),
		st("class CUSTOM_MID", "PUT", "/resource_classes/CUSTOM_MID", "1.39", ""),
		st("classes with custom", "GET", "/resource_classes", "1.39", ""),
		st("class show custom 1.15", "GET", "/resource_classes/CUSTOM_ALPHA", "1.15", ""),
		st("class show standard 1.15", "GET", "/resource_classes/MEMORY_MB", "1.15", ""),
		st("class delete and list", "DELETE", "/resource_classes/CUSTOM_MID", "1.39", ""),
		st("classes after delete", "GET", "/resource_classes", "1.39", ""),
		st("class recreate", "PUT", "/resource_classes/CUSTOM_MID", "1.39", ""),
		st("classes after recreate", "GET", "/resource_classes", "1.39", ""),
	}
	for _, q := range []string{
		"", "name=startswith:CUSTOM_", "name=startswith:HW_CPU_X86_A", "name=startswith:", "name=startswith:NOPE",
		"name=in:HW_CPU_X86_AVX2,CUSTOM_Z,CUSTOM_A,HW_CPU_X86_AVX", "name=in:CUSTOM_NOPE", "name=in:HW_CPU_X86_AVX,HW_CPU_X86_AVX",
		"name=HW_CPU_X86_AVX", "name=in:", "name=startswith:custom_", "associated=true", "associated=false", "associated=TRUE",
		"associated=1", "associated=true&name=startswith:CUSTOM_", "associated=false&name=in:CUSTOM_Z,CUSTOM_A",
		"name=in:CUSTOM_Z&name=in:CUSTOM_A",
	} {
		path := "/traits"
		if q != "" {
			path += "?" + q
		}
		steps = append(steps, st("traits "+q, "GET", path, "1.39", ""))
		if q == "" {
			steps = append(steps,
				st("trait CUSTOM_Z", "PUT", "/traits/CUSTOM_Z", "1.39", ""),
				st("trait CUSTOM_A", "PUT", "/traits/CUSTOM_A", "1.39", ""),
				st("trait CUSTOM_M", "PUT", "/traits/CUSTOM_M", "1.39", ""),
			)
		}
		if q == "name=startswith:NOPE" {
			steps = append(steps,
				st("setup cn1", "POST", "/resource_providers", "1.39", j(`{"name": "cn1", "uuid": "`+clCN1+`"}`)),
				st("setup cn2", "POST", "/resource_providers", "1.39", j(`{"name": "cn2", "uuid": "`+clCN2+`"}`)),
				st("setup child", "POST", "/resource_providers", "1.39", j(`{"name": "child", "uuid": "`+clChild+`", "parent_provider_uuid": "`+clCN1+`"}`)),
				st("traits on cn1, custom first", "PUT", rp(clCN1)+"/traits", "1.39", j(`{"resource_provider_generation": 0, "traits": ["CUSTOM_Z", "HW_CPU_X86_AVX2", "CUSTOM_A"]}`)),
				st("traits on cn1, show", "GET", rp(clCN1)+"/traits", "1.39", ""),
				st("traits on cn1 at 1.6", "GET", rp(clCN1)+"/traits", "1.6", ""),
				st("traits on cn2", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 0, "traits": ["HW_CPU_X86_AVX"]}`)),
				st("traits on cn2, same again", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 1, "traits": ["HW_CPU_X86_AVX"]}`)),
				st("traits on cn2, empty", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 2, "traits": []}`)),
				st("traits on cn2, again", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 3, "traits": ["HW_CPU_X86_AVX", "HW_CPU_X86_AVX"]}`)),
				st("traits on cn2, duplicates", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 3, "traits": ["HW_CPU_X86_AVX", "HW_CPU_X86_AVX"]}`)),
				st("traits on cn2, set", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 3, "traits": ["HW_CPU_X86_AVX"]}`)),
				st("traits on cn2, missing generation", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"traits": ["HW_CPU_X86_AVX"]}`)),
				st("traits on cn2, bad name", "PUT", rp(clCN2)+"/traits", "1.39", j(`{"resource_provider_generation": 4, "traits": ["lower"]}`)),
				st("trait delete associated", "DELETE", "/traits/CUSTOM_Z", "1.39", ""),
				st("provider traits delete cn2", "DELETE", rp(clCN2)+"/traits", "1.39", ""),
				st("provider cn2 after traits delete", "GET", rp(clCN2), "1.39", ""),
				st("provider traits delete cn2 again", "DELETE", rp(clCN2)+"/traits", "1.39", ""),
				st("provider cn2 after second traits delete", "GET", rp(clCN2), "1.39", ""),
				st("provider traits delete unknown provider", "DELETE", rp(cpNone)+"/traits", "1.39", ""),
				st("provider traits of unknown provider", "GET", rp(cpNone)+"/traits", "1.39", ""),
			)
		}
	}

	// Inventories for the usages and allocations below.
	steps = append(steps,
		st("inventory cn1", "PUT", rp(clCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 1, "inventories": {
			"VCPU": {"total": 16}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 200}, "CUSTOM_ZED": {"total": 5}, "CUSTOM_ALPHA": {"total": 5}}}`)),
		st("inventory cn1, show (class order)", "GET", rp(clCN1)+"/inventories", "1.39", ""),
		st("inventory cn2", "PUT", rp(clCN2)+"/inventories", "1.39", j(`{"resource_provider_generation": 6, "inventories": {
			"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}}}`)),
		st("inventory cn2 with stale generation", "PUT", rp(clCN2)+"/inventories", "1.39", j(`{"resource_provider_generation": 4, "inventories": {"VCPU": {"total": 8}}}`)),
		st("inventory child", "PUT", rp(clChild)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {"VGPU": {"total": 2}}}`)),
		st("usages of an empty provider", "GET", rp(clCN2)+"/usages", "1.39", ""),
		st("usages of an unknown provider", "GET", rp(cpNone)+"/usages", "1.39", ""),
		st("usages of an unknown project", "GET", "/usages?project_id="+cpNone, "1.9", ""),
		corpusStep{name: "usages of an unknown project at 1.38", method: "GET", path: "/usages?project_id=" + cpNone, version: "1.38", placementBroken: brokenUsages},
	)

	// POST /allocations: several consumers at once, and its edge cases.
	steps = append(steps,
		st("post two consumers", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjA, clUserA, "null", "INSTANCE", alloc(clCN1, `{"VCPU": 2, "MEMORY_MB": 1024, "CUSTOM_ZED": 1}`), alloc(clChild, `{"VGPU": 1}`))+`,
			"`+clC2+`": `+consumer(clProjA, clUserB, "null", "MIGRATION", alloc(clCN2, `{"VCPU": 1}`))+`}`)),
		st("post consumer 1 show", "GET", "/allocations/"+clC1, "1.39", ""),
		st("post consumer 2 show", "GET", "/allocations/"+clC2, "1.39", ""),
		st("post consumer 2 show at 1.37", "GET", "/allocations/"+clC2, "1.37", ""),
		st("post at 1.37 with consumer_type", "POST", "/allocations", "1.37", j(`{
			"`+clC3+`": `+consumer(clProjB, clUserA, "null", "INSTANCE", alloc(clCN2, `{"VCPU": 1}`))+`}`)),
		st("post at 1.37", "POST", "/allocations", "1.37", j(`{
			"`+clC3+`": `+consumer(clProjB, clUserA, "null", "", alloc(clCN2, `{"VCPU": 1}`))+`}`)),
		st("consumer 3 at 1.38 (unknown type)", "GET", "/allocations/"+clC3, "1.38", ""),
		st("post at 1.38 without consumer_type", "POST", "/allocations", "1.38", j(`{
			"`+clC4+`": `+consumer(clProjB, clUserB, "null", "", alloc(clCN2, `{"VCPU": 1}`))+`}`)),
		st("post at 1.12 (no generation)", "POST", "/allocations", "1.13", j(`{
			"`+clC4+`": {"allocations": {"`+clCN2+`": {"resources": {"VCPU": 1}}}, "project_id": "`+clProjB+`", "user_id": "`+clUserB+`"}}`)),
		st("consumer 4 at 1.27", "GET", "/allocations/"+clC4, "1.27", ""),
		st("consumer 4 at 1.28", "GET", "/allocations/"+clC4, "1.28", ""),
		st("post with stale generation", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjA, clUserA, "7", "INSTANCE", alloc(clCN1, `{"VCPU": 1}`))+`}`)),
		st("post with null generation on existing", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjA, clUserA, "null", "INSTANCE", alloc(clCN1, `{"VCPU": 1}`))+`}`)),
		st("post over capacity on one of two", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjA, clUserA, "1", "INSTANCE", alloc(clCN1, `{"VCPU": 1}`))+`,
			"`+clC2+`": `+consumer(clProjA, clUserB, "1", "MIGRATION", alloc(clCN2, `{"VCPU": 100}`))+`}`)),
		st("consumer 1 unchanged after failed post", "GET", "/allocations/"+clC1, "1.39", ""),
		st("post unknown provider", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjA, clUserA, "1", "INSTANCE", alloc(cpNone, `{"VCPU": 1}`))+`}`)),
		st("post class not on provider", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjA, clUserA, "1", "INSTANCE", alloc(clCN2, `{"DISK_GB": 1}`))+`}`)),
		st("post empty object", "POST", "/allocations", "1.39", `{}`),
		st("post bad consumer uuid", "POST", "/allocations", "1.39", j(`{"abc": `+consumer(clProjA, clUserA, "null", "INSTANCE", alloc(clCN1, `{"VCPU": 1}`))+`}`)),
		st("post bad consumer type", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjA, clUserA, "1", "lower", alloc(clCN1, `{"VCPU": 1}`))+`}`)),
		st("post change project and type", "POST", "/allocations", "1.39", j(`{
			"`+clC1+`": `+consumer(clProjB, clUserB, "1", "CUSTOM_KIND", alloc(clCN1, `{"VCPU": 3}`), alloc(clChild, `{"VGPU": 1}`))+`}`)),
		st("consumer 1 after change", "GET", "/allocations/"+clC1, "1.39", ""),
		st("post emptying consumer 2", "POST", "/allocations", "1.39", j(`{
			"`+clC2+`": `+consumer(clProjA, clUserB, "1", "MIGRATION")+`}`)),
		st("consumer 2 after emptying", "GET", "/allocations/"+clC2, "1.39", ""),
		st("post emptying unknown consumer", "POST", "/allocations", "1.39", j(`{
			"`+clNew+`": `+consumer(clProjA, clUserB, "null", "MIGRATION")+`}`)),
		st("post move: new consumer and old emptied", "POST", "/allocations", "1.39", j(`{
			"`+clC2+`": `+consumer(clProjA, clUserB, "null", "MIGRATION", alloc(clCN2, `{"VCPU": 2, "MEMORY_MB": 256}`))+`,
			"`+clC3+`": `+consumer(clProjB, clUserA, "1", "INSTANCE")+`}`)),
		st("consumer 3 after move", "GET", "/allocations/"+clC3, "1.39", ""),
		st("provider cn2 allocations", "GET", rp(clCN2)+"/allocations", "1.39", ""),
		st("provider cn1 allocations", "GET", rp(clCN1)+"/allocations", "1.39", ""),
		st("provider cn1 usages", "GET", rp(clCN1)+"/usages", "1.39", ""),
		st("provider cn1 usages 1.0", "GET", rp(clCN1)+"/usages", "1.0", ""),
		st("usages project A", "GET", "/usages?project_id="+clProjA, "1.37", ""),
		st("usages project B", "GET", "/usages?project_id="+clProjB, "1.37", ""),
		st("usages project B user A", "GET", "/usages?project_id="+clProjB+"&user_id="+clUserA, "1.37", ""),
		st("usages project B user B", "GET", "/usages?project_id="+clProjB+"&user_id="+clUserB, "1.37", ""),
		st("usages project B unknown user", "GET", "/usages?project_id="+clProjB+"&user_id="+cpNone, "1.37", ""),
		st("usages project at 1.15", "GET", "/usages?project_id="+clProjB, "1.15", ""),
		corpusStep{name: "usages project B at 1.38", method: "GET", path: "/usages?project_id=" + clProjB, version: "1.38", placementBroken: brokenUsages},
		corpusStep{name: "usages project B by consumer_type at 1.38", method: "GET", path: "/usages?project_id=" + clProjB + "&consumer_type=INSTANCE", version: "1.38", placementBroken: brokenUsages},
		corpusStep{name: "usages project B consumer_type all", method: "GET", path: "/usages?project_id=" + clProjB + "&consumer_type=all", version: "1.38", placementBroken: brokenUsages},
		corpusStep{name: "usages project B consumer_type unknown", method: "GET", path: "/usages?project_id=" + clProjB + "&consumer_type=unknown", version: "1.38", placementBroken: brokenUsages},
		st("usages consumer_type lowercase", "GET", "/usages?project_id="+clProjB+"&consumer_type=instance", "1.38", ""),
		st("usages consumer_type in:", "GET", "/usages?project_id="+clProjB+"&consumer_type=in:INSTANCE,MIGRATION", "1.38", ""),
	)

	// PUT /allocations/{consumer}: generations, types, empties.
	steps = append(steps,
		st("put consumer type change", "PUT", "/allocations/"+clC4, "1.39", consumer(clProjB, clUserB, "1", "MIGRATION", alloc(clCN2, `{"VCPU": 1}`))),
		st("consumer 4 after type change", "GET", "/allocations/"+clC4, "1.39", ""),
		st("put empty allocations at 1.39", "PUT", "/allocations/"+clC4, "1.39", consumer(clProjB, clUserB, "2", "MIGRATION")),
		st("consumer 4 after empty", "GET", "/allocations/"+clC4, "1.39", ""),
		st("put empty allocations for new consumer", "PUT", "/allocations/"+clNew, "1.39", consumer(clProjB, clUserB, "null", "MIGRATION")),
		st("put empty allocations at 1.27", "PUT", "/allocations/"+clNew, "1.27", j(`{"allocations": {}, "project_id": "`+clProjB+`", "user_id": "`+clUserB+`"}`)),
		st("put 1.0 list with duplicates", "PUT", "/allocations/"+clNew, "1.0", j(`{"allocations": [
			{"resource_provider": {"uuid": "`+clCN1+`"}, "resources": {"VCPU": 1}},
			{"resource_provider": {"uuid": "`+clCN1+`"}, "resources": {"MEMORY_MB": 1}}]}`)),
		st("consumer new after 1.0 list", "GET", "/allocations/"+clNew, "1.39", ""),
		st("put 1.7 without project", "PUT", "/allocations/"+clNew, "1.7", j(`{"allocations": [{"resource_provider": {"uuid": "`+clCN1+`"}, "resources": {"VCPU": 1}}]}`)),
		st("put 1.8 without project", "PUT", "/allocations/"+clNew, "1.8", j(`{"allocations": [{"resource_provider": {"uuid": "`+clCN1+`"}, "resources": {"VCPU": 1}}]}`)),
		st("put 1.8 with project", "PUT", "/allocations/"+clNew, "1.8", j(`{"allocations": [{"resource_provider": {"uuid": "`+clCN1+`"}, "resources": {"VCPU": 1}}], "project_id": "`+clProjA+`", "user_id": "`+clUserA+`"}`)),
		st("put 1.0 empty list", "PUT", "/allocations/"+clNew, "1.0", j(`{"allocations": []}`)),
		st("put 1.12 empty", "PUT", "/allocations/"+clNew, "1.12", j(`{"allocations": {}, "project_id": "`+clProjA+`", "user_id": "`+clUserA+`"}`)),
		st("delete consumer new", "DELETE", "/allocations/"+clNew, "1.39", ""),
		st("delete consumer new twice", "DELETE", "/allocations/"+clNew, "1.39", ""),
		st("put amounts not in step", "PUT", "/allocations/"+clNew, "1.39", consumer(clProjA, clUserA, "null", "INSTANCE", alloc(clCN1, `{"VCPU": 17}`))),
	)

	// The reshaper.
	reshape := func(name, version, body string) corpusStep {
		return st("reshape "+name, "POST", "/reshaper", version, j(body))
	}
	steps = append(steps,
		st("generations before reshaping", "GET", "/resource_providers?in_tree="+clCN1, "1.39", ""),
		reshape("stale generation", "1.39", `{"inventories": {"`+clCN1+`": {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 16}}}}, "allocations": {}}`),
		reshape("unknown provider", "1.39", `{"inventories": {"`+cpNone+`": {"resource_provider_generation": 0, "inventories": {}}}, "allocations": {}}`),
		reshape("missing allocations", "1.39", `{"inventories": {}}`),
		reshape("empty", "1.39", `{"inventories": {}, "allocations": {}}`),
		reshape("consumer_type before 1.38", "1.37", `{"inventories": {}, "allocations": {"`+clC1+`": `+consumer(clProjB, clUserB, "3", "INSTANCE", alloc(clCN1, `{"VCPU": 3}`))+`}}`),
		reshape("no consumer_type at 1.38", "1.38", `{"inventories": {}, "allocations": {"`+clC1+`": `+consumer(clProjB, clUserB, "3", "", alloc(clCN1, `{"VCPU": 3}`))+`}}`),
		reshape("move VGPU to cn1 and the allocation with it", "1.39", fmt.Sprintf(`{"inventories": {
			"%s": {"resource_provider_generation": 3, "inventories": {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 200}, "CUSTOM_ZED": {"total": 5}, "CUSTOM_ALPHA": {"total": 5}, "VGPU": {"total": 2}}},
			"%s": {"resource_provider_generation": 3, "inventories": {}}},
			"allocations": {"%s": %s}}`, clCN1, clChild, clC1,
			consumer(clProjB, clUserB, "2", "CUSTOM_KIND", alloc(clCN1, `{"VCPU": 3, "VGPU": 1}`)))),
		st("after reshape: consumer 1", "GET", "/allocations/"+clC1, "1.39", ""),
		st("after reshape: cn1 inventories", "GET", rp(clCN1)+"/inventories", "1.39", ""),
		st("after reshape: child inventories", "GET", rp(clChild)+"/inventories", "1.39", ""),
		st("after reshape: tree", "GET", "/resource_providers?in_tree="+clCN1, "1.39", ""),
		reshape("leaves allocation without inventory", "1.39", fmt.Sprintf(`{"inventories": {
			"%s": {"resource_provider_generation": 4, "inventories": {"VCPU": {"total": 16}}}}, "allocations": {}}`, clCN1)),
		reshape("over capacity", "1.39", fmt.Sprintf(`{"inventories": {}, "allocations": {"%s": %s}}`, clC1,
			consumer(clProjB, clUserB, "3", "CUSTOM_KIND", alloc(clCN1, `{"VCPU": 300}`)))),
		reshape("at 1.30 without consumer generation", "1.30", fmt.Sprintf(`{"inventories": {}, "allocations": {"%s": {"allocations": {}, "project_id": "%s", "user_id": "%s"}}}`, clC1, clProjB, clUserB)),
	)

	// Deletes in chains.
	steps = append(steps,
		st("delete class in use", "DELETE", "/resource_classes/CUSTOM_ZED", "1.39", ""),
		st("delete class with inventory only", "DELETE", "/resource_classes/CUSTOM_ALPHA", "1.39", ""),
		st("delete standard class", "DELETE", "/resource_classes/DISK_GB", "1.39", ""),
		st("delete inventory in use", "DELETE", rp(clCN1)+"/inventories/VGPU", "1.39", ""),
		st("delete provider cn1 with child and allocations", "DELETE", rp(clCN1), "1.39", ""),
		st("delete child", "DELETE", rp(clChild), "1.39", ""),
		st("delete provider cn1 with allocations", "DELETE", rp(clCN1), "1.39", ""),
		st("delete consumer 1", "DELETE", "/allocations/"+clC1, "1.39", ""),
		st("delete provider cn1", "DELETE", rp(clCN1), "1.39", ""),
		st("delete class now", "DELETE", "/resource_classes/CUSTOM_ZED", "1.39", ""),
		st("traits after deletes", "GET", "/traits?associated=true", "1.39", ""),
		st("classes after deletes", "GET", "/resource_classes", "1.39", ""),
		st("consumer 2 still there", "GET", "/allocations/"+clC2, "1.39", ""),
		st("cn2 allocations at the end", "GET", rp(clCN2)+"/allocations", "1.39", ""),
		st("provider list at the end", "GET", "/resource_providers", "1.39", ""),
		st("usages project A at the end", "GET", "/usages?project_id="+clProjA, "1.37", ""),
		st("inventories of unknown provider", "GET", rp(cpNone)+"/inventories", "1.39", ""),
		st("inventory of unknown provider", "GET", rp(cpNone)+"/inventories/VCPU", "1.39", ""),
		st("allocations of unknown provider", "GET", rp(cpNone)+"/allocations", "1.39", ""),
		st("aggregates of unknown provider", "GET", rp(cpNone)+"/aggregates", "1.39", ""),
		st("aggregates of unknown provider at 1.1", "GET", rp(cpNone)+"/aggregates", "1.1", ""),
		st("usages of deleted provider", "GET", rp(clCN1)+"/usages", "1.39", ""),
		st("traits of deleted provider", "GET", rp(clCN1)+"/traits", "1.39", ""),
		st("inventory put on unknown provider", "PUT", rp(cpNone)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {}}`)),
		st("inventory delete on unknown provider", "DELETE", rp(cpNone)+"/inventories", "1.39", ""),
		st("inventory class put on unknown provider", "PUT", rp(cpNone)+"/inventories/VCPU", "1.39", j(`{"resource_provider_generation": 0, "total": 1}`)),
		st("inventory class delete on unknown provider", "DELETE", rp(cpNone)+"/inventories/VCPU", "1.39", ""),
		st("traits put on unknown provider", "PUT", rp(cpNone)+"/traits", "1.39", j(`{"resource_provider_generation": 0, "traits": []}`)),
		st("aggregates put on unknown provider", "PUT", rp(cpNone)+"/aggregates", "1.39", j(`{"resource_provider_generation": 0, "aggregates": []}`)),
		st("provider put on unknown provider", "PUT", rp(cpNone), "1.39", j(`{"name": "x"}`)),
	)
	return corpusSession{name: "listings", about: "classes, traits, usages, consumer types, POST /allocations, the reshaper, delete chains", steps: steps}
}
