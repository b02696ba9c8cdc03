package integration

import "fmt"

const (
	cnRP1  = "5e000000-0000-4000-8000-000000000001"
	cnRP2  = "5e000000-0000-4000-8000-000000000002"
	cnRP3  = "5e000000-0000-4000-8000-000000000003"
	cnRP4  = "5e000000-0000-4000-8000-000000000004"
	cnCons = "5e000000-0000-4000-8000-0000000000c"
	cnProj = "5e000000-0000-4000-8000-0000000000e1"
	cnUser = "5e000000-0000-4000-8000-0000000000e2"
)

// numbersSession is about numbers as clients read them: allocation
// ratios and how they are printed, capacity ((total - reserved) * ratio,
// truncated), the limits of min_unit, max_unit and step_size, and amounts
// at the edges of what fits, in inventories, usages, provider summaries
// and refusals.
func numbersSession() corpusSession {
	steps := []corpusStep{
		st("create rp1", "POST", "/resource_providers", "1.39", j(`{"name": "rp1", "uuid": "`+cnRP1+`"}`)),
		st("create rp2", "POST", "/resource_providers", "1.39", j(`{"name": "rp2", "uuid": "`+cnRP2+`"}`)),
		st("create rp3", "POST", "/resource_providers", "1.39", j(`{"name": "rp3", "uuid": "`+cnRP3+`"}`)),
	}
	gen := 0
	for i, ratio := range []string{"1", "1.0", "0.1", "1.1", "16", "3.3333333", "1e20", "2.5e-05", "0.9999999", "1.5", "3.40282e+38", "100000000.5", "0.0001"} {
		steps = append(steps,
			st("ratio "+ratio, "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {
				"VCPU": {"total": 7, "reserved": 1, "allocation_ratio": %s}, "MEMORY_MB": {"total": 1000, "allocation_ratio": %s}}}`, gen, ratio, ratio))),
			st(fmt.Sprintf("ratio %s shown", ratio), "GET", rp(cnRP1)+"/inventories", "1.39", ""),
			st(fmt.Sprintf("ratio %s in candidates", ratio), "GET", "/allocation_candidates?resources=VCPU:1", "1.39", ""),
		)
		if i == 0 {
			steps = append(steps, st("ratio 1 in candidates 1.10", "GET", "/allocation_candidates?resources=VCPU:1", "1.10", ""))
		}
		gen++
	}
	steps = append(steps,
		st("ratio zero", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 7, "allocation_ratio": 0}}}`, gen))),
		st("ratio negative", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 7, "allocation_ratio": -1}}}`, gen))),
		st("ratio string", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 7, "allocation_ratio": "2"}}}`, gen))),
		st("ratio too big", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 7, "allocation_ratio": 3.5e+38}}}`, gen))),
		st("total max", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 2147483647, "max_unit": 2147483647}}}`, gen))),
		st("total above max", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 2147483648}}}`, gen+1))),
		// Python's jsonschema takes 4.0 for an integer; on a provider of its
		// own, so that the rest does not depend on it.
		st("create rp4", "POST", "/resource_providers", "1.39", j(`{"name": "rp4", "uuid": "`+cnRP4+`"}`)),
		st("total float", "PUT", rp(cnRP4)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {"DISK_GB": {"total": 4.0}}}`)),
		st("total float shown", "GET", rp(cnRP4)+"/inventories", "1.39", ""),
		st("total zero", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 0}}}`, gen+1))),
		st("max_unit zero", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 4, "max_unit": 0}}}`, gen+1))),
		st("step_size zero", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 4, "step_size": 0}}}`, gen+1))),
		st("reserved negative", "PUT", rp(cnRP1)+"/inventories", "1.39", j(fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 4, "reserved": -1}}}`, gen+1))),
		st("shown after max", "GET", rp(cnRP1)+"/inventories", "1.39", ""),
		st("capacity of max in candidates", "GET", "/allocation_candidates?resources=VCPU:2147483647", "1.39", ""),
		st("max_unit exceeded in candidates", "GET", "/allocation_candidates?resources=VCPU:2147483648", "1.39", ""),
	)
	gen++
	// rp2: units and steps.
	steps = append(steps,
		st("units rp2", "PUT", rp(cnRP2)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {
			"VCPU": {"total": 10, "reserved": 2, "min_unit": 2, "max_unit": 6, "step_size": 2, "allocation_ratio": 1.5},
			"DISK_GB": {"total": 100, "reserved": 100, "min_unit": 1}}}`)),
		st("units rp2 shown", "GET", rp(cnRP2)+"/inventories", "1.39", ""),
		st("units rp2 usages", "GET", rp(cnRP2)+"/usages", "1.39", ""),
	)
	for _, amount := range []int{1, 2, 3, 4, 6, 7, 8, 12, 13} {
		steps = append(steps,
			st(fmt.Sprintf("candidates VCPU %d", amount), "GET", fmt.Sprintf("/allocation_candidates?resources=VCPU:%d", amount), "1.39", ""),
			st(fmt.Sprintf("providers VCPU %d", amount), "GET", fmt.Sprintf("/resource_providers?resources=VCPU:%d", amount), "1.39", ""),
		)
	}
	cons := func(n int) string { return fmt.Sprintf("%s%d", cnCons, n) }
	alloc := func(name string, n int, prov, res string) corpusStep {
		return st(name, "PUT", "/allocations/"+cons(n), "1.39", j(`{"allocations": {"`+prov+`": {"resources": `+res+`}},
			"project_id": "`+cnProj+`", "user_id": "`+cnUser+`", "consumer_generation": null, "consumer_type": "INSTANCE"}`))
	}
	steps = append(steps,
		alloc("alloc below min_unit", 1, cnRP2, `{"VCPU": 1}`),
		alloc("alloc not a step", 2, cnRP2, `{"VCPU": 3}`),
		alloc("alloc above max_unit", 3, cnRP2, `{"VCPU": 8}`),
		alloc("alloc reserved-only class", 4, cnRP2, `{"DISK_GB": 1}`),
		alloc("alloc 6", 5, cnRP2, `{"VCPU": 6}`),
		alloc("alloc 6 more (12 = capacity)", 6, cnRP2, `{"VCPU": 6}`),
		alloc("alloc 2 more (over)", 7, cnRP2, `{"VCPU": 2}`),
		alloc("alloc several refusals at once", 8, cnRP2, `{"VCPU": 3, "DISK_GB": 1}`),
		st("usages rp2 full", "GET", rp(cnRP2)+"/usages", "1.39", ""),
		st("candidates with rp2 full", "GET", "/allocation_candidates?resources=VCPU:2", "1.39", ""),
		st("summaries 1.26 with rp2 full", "GET", "/allocation_candidates?resources=VCPU:2", "1.26", ""),
		st("providers rp2 full", "GET", "/resource_providers?resources=VCPU:2", "1.39", ""),
		st("usages by project", "GET", "/usages?project_id="+cnProj, "1.37", ""),
		st("lower reserved frees room", "PUT", rp(cnRP2)+"/inventories", "1.39", j(`{"resource_provider_generation": 3, "inventories": {
			"VCPU": {"total": 10, "reserved": 0, "min_unit": 2, "max_unit": 6, "step_size": 2, "allocation_ratio": 1.5},
			"DISK_GB": {"total": 100, "reserved": 100, "min_unit": 1}}}`)),
		alloc("alloc 2 more (fits now)", 7, cnRP2, `{"VCPU": 2}`),
		st("ratio below usage", "PUT", rp(cnRP2)+"/inventories", "1.39", j(`{"resource_provider_generation": 5, "inventories": {
			"VCPU": {"total": 10, "reserved": 0, "min_unit": 2, "max_unit": 6, "step_size": 2, "allocation_ratio": 1.0},
			"DISK_GB": {"total": 100, "reserved": 100, "min_unit": 1}}}`)),
		st("usages after ratio below usage", "GET", rp(cnRP2)+"/usages", "1.39", ""),
		st("candidates after ratio below usage", "GET", "/allocation_candidates?resources=VCPU:2", "1.39", ""),
		st("summaries after ratio below usage", "GET", "/allocation_candidates?resources=DISK_GB:1", "1.39", ""),
		st("single inventory PUT keeps others", "PUT", rp(cnRP2)+"/inventories/DISK_GB", "1.39", j(`{"resource_provider_generation": 6, "total": 50, "reserved": 10, "allocation_ratio": 2.5}`)),
		st("single inventory shown", "GET", rp(cnRP2)+"/inventories/DISK_GB", "1.39", ""),
		st("single inventory 1.0", "GET", rp(cnRP2)+"/inventories/DISK_GB", "1.0", ""),
		st("inventories 1.0", "GET", rp(cnRP2)+"/inventories", "1.0", ""),
		alloc("alloc disk", 9, cnRP2, `{"DISK_GB": 80}`),
		alloc("alloc disk over", 10, cnRP2, `{"DISK_GB": 1}`),
		st("provider allocations rp2", "GET", rp(cnRP2)+"/allocations", "1.39", ""),
		st("provider allocations rp2 1.0", "GET", rp(cnRP2)+"/allocations", "1.0", ""),
		st("usages rp2 at end", "GET", rp(cnRP2)+"/usages", "1.39", ""),
		// rp3: many classes, to see the class order everywhere.
		st("classes for order", "PUT", "/resource_classes/CUSTOM_B_FIRST", "1.39", ""),
		st("classes for order 2", "PUT", "/resource_classes/CUSTOM_A_SECOND", "1.39", ""),
		st("rp3 many classes", "PUT", rp(cnRP3)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {
			"CUSTOM_A_SECOND": {"total": 5}, "SRIOV_NET_VF": {"total": 5}, "IPV4_ADDRESS": {"total": 5}, "CUSTOM_B_FIRST": {"total": 5},
			"DISK_GB": {"total": 5}, "VGPU": {"total": 5}, "MEMORY_MB": {"total": 5}, "VCPU": {"total": 5}, "PCI_DEVICE": {"total": 5}}}`)),
		st("rp3 inventories", "GET", rp(cnRP3)+"/inventories", "1.39", ""),
		st("rp3 usages", "GET", rp(cnRP3)+"/usages", "1.39", ""),
		alloc("rp3 allocation in another order", 11, cnRP3, `{"VGPU": 1, "CUSTOM_A_SECOND": 1, "VCPU": 1, "CUSTOM_B_FIRST": 1, "DISK_GB": 1}`),
		st("rp3 allocation shown", "GET", "/allocations/"+cons(11), "1.39", ""),
		st("rp3 allocation 1.0", "GET", "/allocations/"+cons(11), "1.0", ""),
		st("rp3 usages after", "GET", rp(cnRP3)+"/usages", "1.39", ""),
		st("rp3 provider allocations", "GET", rp(cnRP3)+"/allocations", "1.39", ""),
		st("rp3 candidates, classes in another order", "GET", "/allocation_candidates?resources=PCI_DEVICE:1,CUSTOM_B_FIRST:1,VCPU:1,CUSTOM_A_SECOND:1", "1.39", ""),
		st("rp3 candidates 1.26", "GET", "/allocation_candidates?resources=PCI_DEVICE:1,CUSTOM_B_FIRST:1,VCPU:1", "1.26", ""),
		st("rp3 over two classes", "PUT", "/allocations/"+cons(12), "1.39", j(`{"allocations": {"`+cnRP3+`": {"resources": {"VGPU": 10, "CUSTOM_B_FIRST": 10, "VCPU": 10}}},
			"project_id": "`+cnProj+`", "user_id": "`+cnUser+`", "consumer_generation": null, "consumer_type": "INSTANCE"}`)),
		st("rp3 delete classes in use", "PUT", rp(cnRP3)+"/inventories", "1.39", j(`{"resource_provider_generation": 2, "inventories": {"PCI_DEVICE": {"total": 5}}}`)),
		st("rp3 delete all in use", "DELETE", rp(cnRP3)+"/inventories", "1.39", ""),
		st("usages by project at end", "GET", "/usages?project_id="+cnProj, "1.37", ""),
	)
	return corpusSession{name: "numbers", about: "allocation ratios, capacity, units and steps, class order", steps: steps}
}
