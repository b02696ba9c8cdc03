package integration

const (
	cbCN    = "5f200000-0000-4000-8000-000000000001"
	cbOVS   = "5f200000-0000-4000-8000-000000000010"
	cbSRIOV = "5f200000-0000-4000-8000-000000000011"
	cbPF1   = "5f200000-0000-4000-8000-000000000012"
	cbPF2   = "5f200000-0000-4000-8000-000000000013"
	cbCN2   = "5f200000-0000-4000-8000-000000000002"
	cbPF3   = "5f200000-0000-4000-8000-000000000023"
	cbInst  = "5f200000-0000-4000-8000-0000000000c1"
)

// bandwidthSession is Nova and Neutron's QoS ports: network agents and
// their bridges or PFs as nested providers with bandwidth and packet-rate
// inventories and physnet and vnic type traits, and the request groups
// Nova builds for a port (string suffixes, same_subtree, root_required).
func bandwidthSession() corpusSession {
	create := func(name, uuid, parent string) corpusStep {
		body := `{"name": "` + name + `", "uuid": "` + uuid + `"}`
		if parent != "" {
			body = `{"name": "` + name + `", "uuid": "` + uuid + `", "parent_provider_uuid": "` + parent + `"}`
		}
		return st("create "+name, "POST", "/resource_providers", "1.39", body)
	}
	inv := func(name, uuid, body string) corpusStep {
		return st("inventory "+name, "PUT", rp(uuid)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": `+body+`}`))
	}
	traits := func(name, uuid, gen, list string) corpusStep {
		return st("traits "+name, "PUT", rp(uuid)+"/traits", "1.39", j(`{"resource_provider_generation": `+gen+`, "traits": `+list+`}`))
	}
	q := func(name, query, version string) corpusStep {
		return st("candidates "+name, "GET", "/allocation_candidates?"+query, version, "")
	}
	return corpusSession{name: "bandwidth", about: "QoS ports: nested network providers and the groups Nova asks with", steps: []corpusStep{
		st("trait physnet0", "PUT", "/traits/CUSTOM_PHYSNET_PHYSNET0", "1.39", ""),
		st("trait physnet1", "PUT", "/traits/CUSTOM_PHYSNET_PHYSNET1", "1.39", ""),
		st("trait vnic normal", "PUT", "/traits/CUSTOM_VNIC_TYPE_NORMAL", "1.39", ""),
		st("trait vnic direct", "PUT", "/traits/CUSTOM_VNIC_TYPE_DIRECT", "1.39", ""),
		create("cn", cbCN, ""),
		create("cn:Open vSwitch agent", cbOVS, cbCN),
		create("cn:NIC Switch agent", cbSRIOV, cbCN),
		create("cn:NIC Switch agent:ens1", cbPF1, cbSRIOV),
		create("cn:NIC Switch agent:ens2", cbPF2, cbSRIOV),
		create("cn2", cbCN2, ""),
		create("cn2:NIC Switch agent:ens1", cbPF3, cbCN2),
		inv("cn", cbCN, `{"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 100}}`),
		inv("cn2", cbCN2, `{"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 100}}`),
		inv("ovs", cbOVS, `{"NET_PACKET_RATE_KILOPACKET_PER_SEC": {"total": 1000}}`),
		inv("pf1", cbPF1, `{"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 10000}, "NET_BW_IGR_KILOBIT_PER_SEC": {"total": 10000}}`),
		inv("pf2", cbPF2, `{"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 5000}, "NET_BW_IGR_KILOBIT_PER_SEC": {"total": 5000}}`),
		inv("pf3", cbPF3, `{"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 20000}}`),
		traits("ovs", cbOVS, "1", `["CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_PHYSNET_PHYSNET0"]`),
		traits("pf1", cbPF1, "1", `["CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_PHYSNET_PHYSNET0"]`),
		traits("pf2", cbPF2, "1", `["CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_PHYSNET_PHYSNET1"]`),
		traits("pf3", cbPF3, "1", `["CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_PHYSNET_PHYSNET1"]`),
		traits("cn2", cbCN2, "1", `["COMPUTE_STATUS_DISABLED"]`),
		st("tree", "GET", "/resource_providers?in_tree="+cbCN, "1.39", ""),
		q("port on physnet0, direct", "resources=VCPU:1,MEMORY_MB:512&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000,NET_BW_IGR_KILOBIT_PER_SEC:1000&required_PORT=CUSTOM_PHYSNET_PHYSNET0,CUSTOM_VNIC_TYPE_DIRECT&group_policy=none", "1.36"),
		q("port on physnet1, direct", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000&required_PORT=CUSTOM_PHYSNET_PHYSNET1,CUSTOM_VNIC_TYPE_DIRECT&group_policy=none", "1.36"),
		q("port on physnet1, root enabled", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000&required_PORT=CUSTOM_PHYSNET_PHYSNET1&root_required=!COMPUTE_STATUS_DISABLED&group_policy=none", "1.36"),
		q("port any physnet", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000&required_PORT=in:CUSTOM_PHYSNET_PHYSNET0,CUSTOM_PHYSNET_PHYSNET1&group_policy=none", "1.39"),
		q("two ports isolated", "resources=VCPU:1&resources_P1=NET_BW_EGR_KILOBIT_PER_SEC:1000&resources_P2=NET_BW_EGR_KILOBIT_PER_SEC:1000&required_P1=CUSTOM_VNIC_TYPE_DIRECT&required_P2=CUSTOM_VNIC_TYPE_DIRECT&group_policy=isolate", "1.36"),
		q("two ports same PF allowed", "resources=VCPU:1&resources_P1=NET_BW_EGR_KILOBIT_PER_SEC:1000&resources_P2=NET_BW_EGR_KILOBIT_PER_SEC:1000&group_policy=none", "1.36"),
		q("packet rate and bandwidth in one subtree", "resources=VCPU:1&resources_PR=NET_PACKET_RATE_KILOPACKET_PER_SEC:10&resources_BW=NET_BW_EGR_KILOBIT_PER_SEC:100&required_BW=CUSTOM_VNIC_TYPE_NORMAL&same_subtree=_PR,_BW&group_policy=none", "1.36"),
		q("packet rate on ovs", "resources=VCPU:1&resources_PR=NET_PACKET_RATE_KILOPACKET_PER_SEC:10&required_PR=CUSTOM_VNIC_TYPE_NORMAL&group_policy=none", "1.36"),
		q("port too big", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:30000&group_policy=none", "1.36"),
		q("port forbidden trait", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000&required_PORT=!CUSTOM_PHYSNET_PHYSNET0&group_policy=none", "1.36"),
		q("numbered groups at 1.25", "resources=VCPU:1&resources1=NET_BW_EGR_KILOBIT_PER_SEC:1000&required1=CUSTOM_PHYSNET_PHYSNET0&group_policy=none", "1.25"),
		q("numbered groups at 1.29", "resources=VCPU:1&resources1=NET_BW_EGR_KILOBIT_PER_SEC:1000&required1=CUSTOM_PHYSNET_PHYSNET0&group_policy=none", "1.29"),
		q("string suffix at 1.33", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000&group_policy=none", "1.33"),
		q("port with limit", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000&group_policy=none&limit=1", "1.36"),
		q("required on unnumbered reaching nested", "resources=VCPU:1,NET_BW_EGR_KILOBIT_PER_SEC:1000&required=CUSTOM_PHYSNET_PHYSNET1", "1.36"),
		q("required on unnumbered, root trait only", "resources=VCPU:1,NET_BW_EGR_KILOBIT_PER_SEC:1000&required=COMPUTE_STATUS_DISABLED", "1.36"),
		st("claim with a port", "PUT", "/allocations/"+cbInst, "1.36", j(`{"allocations": {
			"`+cbCN+`": {"resources": {"VCPU": 1, "MEMORY_MB": 512}},
			"`+cbPF1+`": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 9500, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}}},
			"project_id": "p", "user_id": "u", "consumer_generation": null}`)),
		st("claim shown", "GET", "/allocations/"+cbInst, "1.36", ""),
		q("after claim: physnet0 direct", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000&required_PORT=CUSTOM_PHYSNET_PHYSNET0,CUSTOM_VNIC_TYPE_DIRECT&group_policy=none", "1.36"),
		q("after claim: summaries", "resources=VCPU:1&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:100&group_policy=none", "1.36"),
		st("pf1 usages", "GET", rp(cbPF1)+"/usages", "1.36", ""),
		st("tree with usage", "GET", "/resource_providers?in_tree="+cbCN+"&resources=NET_BW_EGR_KILOBIT_PER_SEC:1000", "1.36", ""),
		st("providers with bandwidth left", "GET", "/resource_providers?resources=NET_BW_EGR_KILOBIT_PER_SEC:1000&required=CUSTOM_VNIC_TYPE_DIRECT", "1.36", ""),
		st("move the port's bandwidth (reshape to pf2)", "POST", "/reshaper", "1.36", j(`{"inventories": {
			"`+cbPF1+`": {"resource_provider_generation": 3, "inventories": {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 10000}, "NET_BW_IGR_KILOBIT_PER_SEC": {"total": 10000}}}},
			"allocations": {"`+cbInst+`": {"allocations": {
				"`+cbCN+`": {"resources": {"VCPU": 1, "MEMORY_MB": 512}},
				"`+cbPF2+`": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 4000}}},
				"project_id": "p", "user_id": "u", "consumer_generation": 1}}}`)),
		st("claim after reshape", "GET", "/allocations/"+cbInst, "1.36", ""),
		st("pf2 allocations", "GET", rp(cbPF2)+"/allocations", "1.36", ""),
		st("delete the agent with a PF in use", "DELETE", rp(cbSRIOV), "1.36", ""),
		st("delete the instance", "DELETE", "/allocations/"+cbInst, "1.36", ""),
		st("delete pf1", "DELETE", rp(cbPF1), "1.36", ""),
		st("tree at the end", "GET", "/resource_providers?in_tree="+cbCN, "1.36", ""),
	}}
}
