package migrate

import "fmt"

// The workload's names.
const (
	storageUUID = "5702a6e0-0000-4000-8000-000000000001"
	agg1        = "a991a991-0000-4000-8000-000000000001"
	agg2        = "a991a991-0000-4000-8000-000000000002"
	// aggUpper is spelled in upper case: Placement keeps the spelling, and
	// so must the move to Berth and back.
	aggUpper   = "A991A991-0000-4000-8000-00000000000C"
	projectA   = "6f70656e-7374-6163-6b00-00000000000a"
	projectB   = "6f70656e-7374-6163-6b00-00000000000b"
	userA      = "75736572-0000-4000-8000-00000000000a"
	userB      = "75736572-0000-4000-8000-00000000000b"
	migration1 = "0191a710-0000-4000-8000-000000000001"
	legacyInst = "1e9ac700-0000-4000-8000-000000000001"
)

// Provider uuids of compute node i: the root and its children.
func cn(i int) string       { return uuidN(0xc0, i) }
func numa(i, n int) string  { return uuidN(0x40+n, i) }
func pgpu(i int) string     { return uuidN(0x6b, i) }
func pf(i int) string       { return uuidN(0x5f, i) }
func instance(k int) string { return uuidN(0x1a, k) }

const nodes = 4

type inv map[string]any

func inventory(total, reserved, maxUnit int, ratio float64) inv {
	return inv{"total": total, "reserved": reserved, "min_unit": 1, "max_unit": maxUnit, "step_size": 1, "allocation_ratio": ratio}
}

// populate builds, through Placement's own API, what a small cloud's
// Placement holds: compute nodes with NUMA, vGPU and SR-IOV children, a
// sharing storage provider in an aggregate, custom classes and traits,
// instances of two projects, an instance written before consumer types, a
// migration holding the source half of a move, reserved amounts and
// allocation ratios (1.1 among them, which MySQL stores as FLOAT), and a
// provider whose usage exceeds its lowered inventory.
func populate(a api) {
	a.t.Helper()
	a.must(201, "PUT", "/resource_classes/CUSTOM_FPGA_X", nil, nil)
	for _, tr := range []string{"CUSTOM_RACK_A", "CUSTOM_GOLD", "CUSTOM_PHYSNET_A", "CUSTOM_UNUSED_TRAIT"} {
		a.must(201, "PUT", "/traits/"+tr, nil, nil)
	}
	a.must(201, "PUT", "/resource_classes/CUSTOM_UNUSED_CLASS", nil, nil)

	provider := func(uuid, name, parent string, invs map[string]inv, traits []string) {
		body := map[string]any{"uuid": uuid, "name": name}
		if parent != "" {
			body["parent_provider_uuid"] = parent
		}
		a.must(200, "POST", "/resource_providers", body, nil)
		if invs != nil {
			a.must(200, "PUT", "/resource_providers/"+uuid+"/inventories",
				map[string]any{"resource_provider_generation": a.generation(uuid), "inventories": invs}, nil)
		}
		if traits != nil {
			a.must(200, "PUT", "/resource_providers/"+uuid+"/traits",
				map[string]any{"resource_provider_generation": a.generation(uuid), "traits": traits}, nil)
		}
	}
	provider(storageUUID, "shared-storage-1", "", map[string]inv{"DISK_GB": inventory(20000, 100, 2000, 1.0)},
		[]string{"MISC_SHARES_VIA_AGGREGATE", "STORAGE_DISK_SSD"})
	a.must(200, "PUT", "/resource_providers/"+storageUUID+"/aggregates",
		map[string]any{"resource_provider_generation": a.generation(storageUUID), "aggregates": []string{agg1}}, nil)
	for i := 1; i <= nodes; i++ {
		rootInv := map[string]inv{"MEMORY_MB": inventory(1024, 0, 1024, 1.0)}
		if i == 1 {
			rootInv["CUSTOM_FPGA_X"] = inventory(2, 0, 1, 1.0)
		}
		traits := []string{"HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH"}
		if i%2 == 1 {
			traits = append(traits, "CUSTOM_RACK_A")
		}
		provider(cn(i), fmt.Sprintf("compute-%d.example.org", i), "", rootInv, traits)
		aggs := []string{agg1}
		if i <= 2 {
			aggs = append(aggs, agg2)
		}
		if i == 3 {
			aggs = append(aggs, aggUpper)
		}
		a.must(200, "PUT", "/resource_providers/"+cn(i)+"/aggregates",
			map[string]any{"resource_provider_generation": a.generation(cn(i)), "aggregates": aggs}, nil)
		for n := 0; n < 2; n++ {
			provider(numa(i, n), fmt.Sprintf("compute-%d.example.org_NUMA%d", i, n), cn(i), map[string]inv{
				"VCPU":      inventory(16, 2, 16, 4.0),
				"MEMORY_MB": inventory(32768, 512, 32768, 1.1),
			}, []string{"HW_NUMA_ROOT"})
		}
		provider(pgpu(i), fmt.Sprintf("compute-%d.example.org_pci_0000_81_00_0", i), numa(i, 0),
			map[string]inv{"VGPU": inventory(4, 0, 4, 1.0)}, []string{"CUSTOM_GOLD"})
		provider(pf(i), fmt.Sprintf("compute-%d.example.org:ens1f0", i), numa(i, 1),
			map[string]inv{"SRIOV_NET_VF": inventory(8, 1, 8, 1.0)}, []string{"CUSTOM_PHYSNET_A", "HW_NIC_SRIOV"})
	}

	alloc := func(consumer, project, user, ctype string, res map[string]map[string]int) {
		allocs := map[string]any{}
		for rp, r := range res {
			allocs[rp] = map[string]any{"resources": r}
		}
		a.must(204, "PUT", "/allocations/"+consumer, map[string]any{
			"allocations": allocs, "project_id": project, "user_id": user,
			"consumer_generation": nil, "consumer_type": ctype,
		}, nil)
	}
	for k := 1; k <= 8; k++ {
		i := (k-1)%nodes + 1
		res := map[string]map[string]int{
			numa(i, k%2): {"VCPU": 2, "MEMORY_MB": 4096},
			storageUUID:  {"DISK_GB": 40},
		}
		if k%3 == 0 {
			res[pgpu(i)] = map[string]int{"VGPU": 1}
		}
		if k%4 == 0 {
			res[pf(i)] = map[string]int{"SRIOV_NET_VF": 2}
		}
		if k == 1 {
			res[cn(1)] = map[string]int{"CUSTOM_FPGA_X": 1}
		}
		project, user := projectA, userA
		if k > 5 {
			project, user = projectB, userB
		}
		alloc(instance(k), project, user, "INSTANCE", res)
	}
	// Written by an older client: no consumer type.
	a.mustV(204, "PUT", "/allocations/"+legacyInst, "1.28", map[string]any{
		"allocations": map[string]any{numa(3, 1): map[string]any{"resources": map[string]int{"VCPU": 1, "MEMORY_MB": 512}}},
		"project_id":  projectB, "user_id": userA, "consumer_generation": nil,
	}, nil)

	// A cold migration of instance 2 from compute 2 to compute 3 in
	// progress: the migration consumer holds the source half.
	var cur struct {
		Allocations map[string]struct {
			Resources map[string]int `json:"resources"`
		} `json:"allocations"`
		Generation int `json:"consumer_generation"`
	}
	a.must(200, "GET", "/allocations/"+instance(2), nil, &cur)
	source := map[string]any{}
	for rp, al := range cur.Allocations {
		source[rp] = map[string]any{"resources": al.Resources}
	}
	a.must(204, "POST", "/allocations", map[string]any{
		migration1: map[string]any{"allocations": source, "project_id": projectA, "user_id": userA,
			"consumer_generation": nil, "consumer_type": "MIGRATION"},
		instance(2): map[string]any{"allocations": map[string]any{
			numa(3, 0):  map[string]any{"resources": map[string]int{"VCPU": 2, "MEMORY_MB": 4096}},
			storageUUID: map[string]any{"resources": map[string]int{"DISK_GB": 40}},
		}, "project_id": projectA, "user_id": userA, "consumer_generation": cur.Generation, "consumer_type": "INSTANCE"},
	}, nil)

	// Compute 4's NUMA1 loses most of its CPUs (a hardware fault, a
	// changed cpu_dedicated_set): usage now exceeds capacity, which
	// Placement allows and reports.
	alloc(uuidN(0x1b, 1), projectB, userB, "INSTANCE", map[string]map[string]int{numa(4, 1): {"VCPU": 16}})
	a.must(200, "PUT", "/resource_providers/"+numa(4, 1)+"/inventories/VCPU", map[string]any{
		"resource_provider_generation": a.generation(numa(4, 1)), "total": 4, "reserved": 0, "allocation_ratio": 2.0,
	}, nil)
}
