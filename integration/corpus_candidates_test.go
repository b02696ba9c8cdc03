package integration

import "fmt"

// The candidates session's cloud: two compute trees, each a root with two
// NUMA children, a GPU and an SR-IOV NIC under the NUMA nodes, a sharing
// disk provider and a sharing IP pool in aggregates with the roots.
const (
	ccCN1     = "5c000000-0000-4000-8000-000000000001"
	ccCN1N0   = "5c000000-0000-4000-8000-000000000010"
	ccCN1N1   = "5c000000-0000-4000-8000-000000000011"
	ccCN1GPU  = "5c000000-0000-4000-8000-000000000012"
	ccCN1NIC  = "5c000000-0000-4000-8000-000000000013"
	ccCN2     = "5c000000-0000-4000-8000-000000000002"
	ccCN2N0   = "5c000000-0000-4000-8000-000000000020"
	ccCN2N1   = "5c000000-0000-4000-8000-000000000021"
	ccCN2NIC  = "5c000000-0000-4000-8000-000000000023"
	ccCN3     = "5c000000-0000-4000-8000-000000000003"
	ccDisk    = "5c000000-0000-4000-8000-0000000000d1"
	ccIPPool  = "5c000000-0000-4000-8000-0000000000d2"
	ccAggA    = "5c000000-0000-4000-8000-0000000000a1"
	ccAggB    = "5c000000-0000-4000-8000-0000000000a2"
	ccAggC    = "5c000000-0000-4000-8000-0000000000a3"
	ccInst1   = "5c000000-0000-4000-8000-0000000000c1"
	ccInst2   = "5c000000-0000-4000-8000-0000000000c2"
	ccProject = "5c000000-0000-4000-8000-0000000000e1"
	ccUser    = "5c000000-0000-4000-8000-0000000000e2"
)

// candidatesSession builds nested and sharing providers and asks for
// allocation candidates with every kind of constraint, at the versions
// that changed their answer: granular groups and group_policy, required
// and forbidden traits (and any-of from 1.39), member_of (and forbidden
// aggregates), in_tree, root_required, same_subtree, limit, the
// provider summaries' layout, and the same filters on GET
// /resource_providers.
func candidatesSession() corpusSession {
	create := func(name, uuid, parent string) corpusStep {
		body := `{"name": "` + name + `", "uuid": "` + uuid + `"}`
		if parent != "" {
			body = `{"name": "` + name + `", "uuid": "` + uuid + `", "parent_provider_uuid": "` + parent + `"}`
		}
		return st("create "+name, "POST", "/resource_providers", "1.39", body)
	}
	inv := func(name, uuid string, gen int, invs string) corpusStep {
		return st("inventory "+name, "PUT", rp(uuid)+"/inventories", "1.39",
			j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": %s}`, gen, invs)))
	}
	traits := func(name, uuid string, gen int, ts string) corpusStep {
		return st("traits "+name, "PUT", rp(uuid)+"/traits", "1.39",
			j(fmt.Sprintf(`{"resource_provider_generation": %d, "traits": %s}`, gen, ts)))
	}
	aggs := func(name, uuid string, gen int, as string) corpusStep {
		return st("aggregates "+name, "PUT", rp(uuid)+"/aggregates", "1.39",
			j(fmt.Sprintf(`{"resource_provider_generation": %d, "aggregates": %s}`, gen, as)))
	}
	steps := []corpusStep{
		st("class CUSTOM_NET_BW", "PUT", "/resource_classes/CUSTOM_NET_BW", "1.39", ""),
		st("trait CUSTOM_PHYSNET_A", "PUT", "/traits/CUSTOM_PHYSNET_A", "1.39", ""),
		st("trait CUSTOM_PHYSNET_B", "PUT", "/traits/CUSTOM_PHYSNET_B", "1.39", ""),
		st("trait CUSTOM_FAST", "PUT", "/traits/CUSTOM_FAST", "1.39", ""),
		create("cn1", ccCN1, ""),
		create("cn1_numa0", ccCN1N0, ccCN1),
		create("cn1_numa1", ccCN1N1, ccCN1),
		create("cn1_gpu", ccCN1GPU, ccCN1N0),
		create("cn1_nic", ccCN1NIC, ccCN1N1),
		create("cn2", ccCN2, ""),
		create("cn2_numa0", ccCN2N0, ccCN2),
		create("cn2_numa1", ccCN2N1, ccCN2),
		create("cn2_nic", ccCN2NIC, ccCN2),
		create("cn3", ccCN3, ""),
		create("shared_disk", ccDisk, ""),
		create("ip_pool", ccIPPool, ""),
		inv("cn1", ccCN1, 0, `{"DISK_GB": {"total": 100}}`),
		inv("cn1_numa0", ccCN1N0, 0, `{"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}}`),
		inv("cn1_numa1", ccCN1N1, 0, `{"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}}`),
		inv("cn1_gpu", ccCN1GPU, 0, `{"VGPU": {"total": 4}}`),
		inv("cn1_nic", ccCN1NIC, 0, `{"SRIOV_NET_VF": {"total": 8}, "CUSTOM_NET_BW": {"total": 10000}}`),
		inv("cn2", ccCN2, 0, `{"VCPU": {"total": 16}, "MEMORY_MB": {"total": 16384}}`),
		inv("cn2_numa0", ccCN2N0, 0, `{"VCPU": {"total": 4}, "MEMORY_MB": {"total": 4096}}`),
		inv("cn2_nic", ccCN2NIC, 0, `{"SRIOV_NET_VF": {"total": 4}, "CUSTOM_NET_BW": {"total": 1000}}`),
		inv("cn3", ccCN3, 0, `{"VCPU": {"total": 4}, "MEMORY_MB": {"total": 2048}, "DISK_GB": {"total": 50}}`),
		inv("shared_disk", ccDisk, 0, `{"DISK_GB": {"total": 2000}}`),
		inv("ip_pool", ccIPPool, 0, `{"IPV4_ADDRESS": {"total": 20}}`),
		traits("cn1", ccCN1, 1, `["HW_CPU_X86_AVX2", "CUSTOM_FAST", "COMPUTE_VOLUME_MULTI_ATTACH"]`),
		traits("cn1_numa0", ccCN1N0, 1, `["HW_NUMA_ROOT"]`),
		traits("cn1_numa1", ccCN1N1, 1, `["HW_NUMA_ROOT"]`),
		traits("cn1_nic", ccCN1NIC, 1, `["CUSTOM_PHYSNET_A", "HW_NIC_SRIOV"]`),
		traits("cn2", ccCN2, 1, `["HW_CPU_X86_AVX2", "COMPUTE_STATUS_DISABLED"]`),
		traits("cn2_nic", ccCN2NIC, 1, `["CUSTOM_PHYSNET_B", "HW_NIC_SRIOV"]`),
		traits("cn3", ccCN3, 1, `["HW_CPU_X86_SSE42"]`),
		traits("shared_disk", ccDisk, 1, `["MISC_SHARES_VIA_AGGREGATE", "STORAGE_DISK_SSD"]`),
		traits("ip_pool", ccIPPool, 1, `["MISC_SHARES_VIA_AGGREGATE"]`),
		aggs("cn1", ccCN1, 2, `["`+ccAggA+`"]`),
		aggs("cn2", ccCN2, 2, `["`+ccAggA+`", "`+ccAggB+`"]`),
		aggs("cn3", ccCN3, 2, `["`+ccAggC+`"]`),
		aggs("shared_disk", ccDisk, 2, `["`+ccAggA+`"]`),
		aggs("ip_pool", ccIPPool, 2, `["`+ccAggB+`"]`),
		aggs("cn1_numa0", ccCN1N0, 2, `["`+ccAggC+`"]`),
	}

	// The same query across the versions that changed candidates' layout.
	for _, v := range []string{"1.10", "1.11", "1.12", "1.16", "1.17", "1.21", "1.24", "1.25", "1.26", "1.27", "1.28", "1.29", "1.31", "1.33", "1.34", "1.35", "1.36", "1.39"} {
		steps = append(steps, st("candidates VCPU+MEMORY+DISK at "+v, "GET", "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:10", v, ""))
	}
	queries := []struct{ name, query, version string }{
		{"single class", "resources=VCPU:1", "1.39"},
		{"shared disk only", "resources=DISK_GB:500", "1.39"},
		{"disk too big for local", "resources=DISK_GB:200", "1.39"},
		{"ip from pool", "resources=VCPU:1,IPV4_ADDRESS:1", "1.39"},
		{"vgpu nested", "resources=VGPU:1", "1.39"},
		{"vgpu nested before 1.29", "resources=VGPU:1", "1.28"},
		{"vcpu and vgpu nested", "resources=VCPU:2,VGPU:1", "1.39"},
		{"vcpu and vgpu nested before 1.29", "resources=VCPU:2,VGPU:1", "1.28"},
		{"vf and bandwidth", "resources=SRIOV_NET_VF:1,CUSTOM_NET_BW:500", "1.39"},
		{"limit 1", "resources=VCPU:1&limit=1", "1.39"},
		{"limit 2", "resources=VCPU:1,MEMORY_MB:512&limit=2", "1.39"},
		{"limit 3 with sharing", "resources=VCPU:1,DISK_GB:10&limit=3", "1.39"},
		{"required root trait", "resources=VCPU:1&required=HW_CPU_X86_AVX2", "1.39"},
		{"required two traits", "resources=VCPU:1&required=HW_CPU_X86_AVX2,CUSTOM_FAST", "1.39"},
		{"required trait of a sharing provider", "resources=DISK_GB:10&required=STORAGE_DISK_SSD", "1.39"},
		{"required in: any of", "resources=VCPU:1&required=in:CUSTOM_FAST,HW_CPU_X86_SSE42", "1.39"},
		{"required repeated", "resources=VCPU:1&required=HW_CPU_X86_AVX2&required=CUSTOM_FAST", "1.39"},
		{"required trait on nested provider (unnumbered)", "resources=VCPU:1,SRIOV_NET_VF:1&required=CUSTOM_PHYSNET_A", "1.39"},
		{"member_of A", "resources=VCPU:1&member_of=" + ccAggA, "1.39"},
		{"member_of in:A,C", "resources=VCPU:1&member_of=in:" + ccAggA + "," + ccAggC, "1.39"},
		{"member_of A and B", "resources=VCPU:1&member_of=" + ccAggA + "&member_of=" + ccAggB, "1.39"},
		{"member_of not B", "resources=VCPU:1&member_of=!" + ccAggB, "1.39"},
		{"member_of not in:A,B", "resources=VCPU:1&member_of=!in:" + ccAggA + "," + ccAggB, "1.39"},
		{"member_of unknown", "resources=VCPU:1&member_of=" + cpNone, "1.39"},
		{"member_of with sharing", "resources=VCPU:1,DISK_GB:10&member_of=" + ccAggA, "1.39"},
		{"in_tree cn1", "resources=VCPU:1&in_tree=" + ccCN1, "1.39"},
		{"in_tree by child", "resources=VCPU:1&in_tree=" + ccCN1GPU, "1.39"},
		{"in_tree unknown", "resources=VCPU:1&in_tree=" + cpNone, "1.39"},
		{"in_tree with sharing", "resources=VCPU:1,DISK_GB:10&in_tree=" + ccCN1, "1.39"},
		{"root_required", "resources=VCPU:1&root_required=HW_CPU_X86_AVX2", "1.39"},
		{"root_required forbidden", "resources=VCPU:1&root_required=!COMPUTE_STATUS_DISABLED", "1.39"},
		{"root_required two", "resources=VCPU:1&root_required=HW_CPU_X86_AVX2,CUSTOM_FAST", "1.39"},
		{"root_required nested trait (no match)", "resources=VCPU:1&root_required=HW_NUMA_ROOT", "1.39"},
		{"granular two groups", "resources1=VCPU:1&resources2=VGPU:1&group_policy=none", "1.39"},
		{"granular isolate", "resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate", "1.39"},
		{"granular none same class", "resources1=VCPU:1&resources2=VCPU:1&group_policy=none", "1.39"},
		{"granular with unnumbered", "resources=DISK_GB:10&resources1=VCPU:1,MEMORY_MB:512&group_policy=none", "1.39"},
		{"granular with required per group", "resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_A&resources2=VCPU:1&group_policy=none", "1.39"},
		{"granular with forbidden per group", "resources1=SRIOV_NET_VF:1&required1=!CUSTOM_PHYSNET_A&group_policy=none", "1.39"},
		{"granular member_of per group", "resources1=VCPU:1&member_of1=" + ccAggC + "&group_policy=none", "1.39"},
		{"granular in_tree per group", "resources1=VCPU:1&in_tree1=" + ccCN2 + "&group_policy=none", "1.39"},
		{"granular string suffixes", "resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1,CUSTOM_NET_BW:100&group_policy=none", "1.39"},
		{"granular string suffixes isolate", "resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1&group_policy=isolate", "1.39"},
		{"same_subtree", "resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1&resources_ACC=VGPU:1&same_subtree=_CPU,_ACC&group_policy=none", "1.39"},
		{"same_subtree numa and nic", "resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1&same_subtree=_CPU,_NET&group_policy=none", "1.39"},
		{"same_subtree resourceless", "required_NUMA=HW_NUMA_ROOT&resources_CPU=VCPU:1&resources_ACC=VGPU:1&same_subtree=_NUMA,_CPU,_ACC&group_policy=none", "1.39"},
		{"same_subtree unknown suffix", "resources_CPU=VCPU:1&same_subtree=_CPU,_NOPE&group_policy=none", "1.39"},
		{"resourceless group without same_subtree", "required_NUMA=HW_NUMA_ROOT&resources_CPU=VCPU:1&group_policy=none", "1.39"},
		{"group_policy missing with two groups", "resources1=VCPU:1&resources2=VGPU:1", "1.39"},
		{"group_policy missing with one group", "resources1=VCPU:1", "1.39"},
		{"granular at 1.25", "resources1=VCPU:1&resources2=VGPU:1&group_policy=none", "1.25"},
		{"granular at 1.29", "resources1=VCPU:1&resources2=VGPU:1&group_policy=none", "1.29"},
		{"granular at 1.33", "resources1=VCPU:1&resources2=VGPU:1&group_policy=isolate", "1.33"},
		{"no fit", "resources=VCPU:100", "1.39"},
		{"no fit nested", "resources=VGPU:5", "1.39"},
		{"unknown trait", "resources=VCPU:1&required=CUSTOM_UNKNOWN", "1.39"},
		{"unknown class in group", "resources1=CUSTOM_UNKNOWN:1", "1.39"},
		{"class no one has", "resources=PCI_DEVICE:1", "1.39"},
		{"summaries at 1.26 with sharing", "resources=VCPU:1,DISK_GB:10,IPV4_ADDRESS:1", "1.26"},
		{"summaries at 1.27 with sharing", "resources=VCPU:1,DISK_GB:10,IPV4_ADDRESS:1", "1.27"},
		{"many classes", "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10,IPV4_ADDRESS:1", "1.39"},
	}
	for _, q := range queries {
		steps = append(steps, st("candidates "+q.name, "GET", "/allocation_candidates?"+q.query, q.version, ""))
	}

	// Allocations change what fits, then the same questions again.
	steps = append(steps,
		st("allocate on cn1 numa0 and shared disk", "PUT", "/allocations/"+ccInst1, "1.39", j(`{"allocations": {
			"`+ccCN1N0+`": {"resources": {"VCPU": 8, "MEMORY_MB": 8000}},
			"`+ccDisk+`": {"resources": {"DISK_GB": 1900}},
			"`+ccCN1GPU+`": {"resources": {"VGPU": 3}}},
			"project_id": "`+ccProject+`", "user_id": "`+ccUser+`", "consumer_generation": null, "consumer_type": "INSTANCE"}`)),
		st("candidates after allocation: vcpu+memory", "GET", "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512", "1.39", ""),
		st("candidates after allocation: disk", "GET", "/allocation_candidates?resources=DISK_GB:200", "1.39", ""),
		st("candidates after allocation: vgpu 2", "GET", "/allocation_candidates?resources=VGPU:2", "1.39", ""),
		st("candidates after allocation: vgpu 1", "GET", "/allocation_candidates?resources=VGPU:1", "1.39", ""),
		st("candidates after allocation: summaries", "GET", "/allocation_candidates?resources=VCPU:1,DISK_GB:10", "1.39", ""),
		st("candidates after allocation: summaries 1.26", "GET", "/allocation_candidates?resources=VCPU:1,DISK_GB:10", "1.26", ""),
	)

	// The same filters on GET /resource_providers.
	for _, q := range []struct{ name, query, version string }{
		{"all", "", "1.39"},
		{"resources", "resources=VCPU:8", "1.39"},
		{"resources after allocation", "resources=VCPU:1,MEMORY_MB:500", "1.39"},
		{"resources no fit", "resources=VGPU:2", "1.39"},
		{"resources unknown class", "resources=CUSTOM_UNKNOWN:1", "1.39"},
		{"required", "required=HW_NIC_SRIOV", "1.39"},
		{"required two", "required=HW_NIC_SRIOV,CUSTOM_PHYSNET_A", "1.39"},
		{"required forbidden", "required=!HW_NUMA_ROOT", "1.39"},
		{"required in:", "required=in:CUSTOM_PHYSNET_A,CUSTOM_PHYSNET_B", "1.39"},
		{"required repeated", "required=HW_NIC_SRIOV&required=!CUSTOM_PHYSNET_A", "1.39"},
		{"required unknown", "required=CUSTOM_UNKNOWN", "1.39"},
		{"member_of", "member_of=" + ccAggA, "1.39"},
		{"member_of in:", "member_of=in:" + ccAggB + "," + ccAggC, "1.39"},
		{"member_of twice", "member_of=" + ccAggA + "&member_of=" + ccAggB, "1.39"},
		{"member_of forbidden", "member_of=!" + ccAggA, "1.39"},
		{"member_of forbidden in:", "member_of=!in:" + ccAggA + "," + ccAggC, "1.39"},
		{"in_tree", "in_tree=" + ccCN1, "1.39"},
		{"in_tree by child", "in_tree=" + ccCN2NIC, "1.39"},
		{"in_tree unknown", "in_tree=" + cpNone, "1.39"},
		{"in_tree and resources", "in_tree=" + ccCN1 + "&resources=VCPU:1", "1.39"},
		{"name", "name=cn1_gpu", "1.39"},
		{"uuid", "uuid=" + ccCN2N1, "1.39"},
		{"name and in_tree", "name=cn2_nic&in_tree=" + ccCN2, "1.39"},
		{"all at 1.13", "", "1.13"},
		{"all at 1.14", "", "1.14"},
	} {
		path := "/resource_providers"
		if q.query != "" {
			path += "?" + q.query
		}
		steps = append(steps, st("providers "+q.name+" at "+q.version, "GET", path, q.version, ""))
	}

	// Usages and allocations of the trees.
	steps = append(steps,
		st("usages cn1 numa0", "GET", rp(ccCN1N0)+"/usages", "1.39", ""),
		st("usages shared disk", "GET", rp(ccDisk)+"/usages", "1.39", ""),
		st("allocations shared disk", "GET", rp(ccDisk)+"/allocations", "1.39", ""),
		st("allocations of the instance", "GET", "/allocations/"+ccInst1, "1.39", ""),
		st("second allocation, classes in another order", "PUT", "/allocations/"+ccInst2, "1.39", j(`{"allocations": {
			"`+ccCN2+`": {"resources": {"MEMORY_MB": 512, "VCPU": 1}},
			"`+ccIPPool+`": {"resources": {"IPV4_ADDRESS": 2}},
			"`+ccCN2NIC+`": {"resources": {"CUSTOM_NET_BW": 100, "SRIOV_NET_VF": 1}}},
			"project_id": "`+ccProject+`", "user_id": "`+ccUser+`", "consumer_generation": null, "consumer_type": "INSTANCE"}`)),
		st("allocations of the second instance", "GET", "/allocations/"+ccInst2, "1.39", ""),
		st("allocations of the second instance at 1.0", "GET", "/allocations/"+ccInst2, "1.0", ""),
		st("usages by project at 1.9", "GET", "/usages?project_id="+ccProject, "1.9", ""),
		st("usages by project and user at 1.37", "GET", "/usages?project_id="+ccProject+"&user_id="+ccUser, "1.37", ""),
		st("candidates after both", "GET", "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,IPV4_ADDRESS:1", "1.39", ""),
		st("candidates isolate after both", "GET", "/allocation_candidates?resources_A=SRIOV_NET_VF:1&resources_B=SRIOV_NET_VF:1&group_policy=isolate", "1.39", ""),
		st("delete a leaf with allocations", "DELETE", rp(ccCN2NIC), "1.39", ""),
		st("delete a parent", "DELETE", rp(ccCN1N1), "1.39", ""),
		st("delete allocations", "DELETE", "/allocations/"+ccInst2, "1.39", ""),
		st("delete the leaf now", "DELETE", rp(ccCN2NIC), "1.39", ""),
		st("tree after delete", "GET", "/resource_providers?in_tree="+ccCN2, "1.39", ""),
		st("candidates after delete", "GET", "/allocation_candidates?resources=SRIOV_NET_VF:1", "1.39", ""),
	)
	return corpusSession{name: "candidates", about: "nested and sharing providers, allocation candidates and provider filters", steps: steps}
}
