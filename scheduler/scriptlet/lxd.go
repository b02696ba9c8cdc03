package scriptlet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// LXD's and Incus's object model over Berth's: what a cluster member,
// its state and its resources are to a scriptlet written for LXD
// (api.ClusterMember, api.ClusterMemberState, api.Resources), mapped
// from what Berth knows of a root provider. See docs/scheduling.md,
// "Coming from LXD or Incus".

// Member statuses, as LXD's api.ClusterMember.Status.
const (
	MemberOnline    = "Online"
	MemberOffline   = "Offline"
	MemberEvacuated = "Evacuated"
)

// MemberOfflineAfter is how old a member's last state report may be
// before the member is "Offline" (the state_freshness filter's default
// max_age). A member that never reported is "Online": Berth does not
// require agents to report.
const MemberOfflineAfter = 5 * time.Minute

// DefaultFailureDomain and DefaultGroup are LXD's: every member is in
// the group "default", and in the failure domain "default" unless set.
const (
	DefaultFailureDomain = "default"
	DefaultGroup         = "default"
)

// failureDomainTraitPrefix marks a provider's failure domain: the trait
// CUSTOM_FAILURE_DOMAIN_RACK1 puts it in failure domain "rack1".
const failureDomainTraitPrefix = "CUSTOM_FAILURE_DOMAIN_"

// lxdMemberAttrs are api.ClusterMember's fields.
var lxdMemberAttrs = []string{"architecture", "config", "database", "description", "failure_domain", "groups",
	"message", "roles", "server_name", "status", "url"}

// lxdMemberField is field name of LXD's ClusterMember for p whose state
// is st (nil: never reported); nil when name is not one of its fields.
func lxdMemberField(p *scheduler.ProviderView, st *engine.ProviderState, name string) starlark.Value {
	switch name {
	case "server_name":
		return starlark.String(p.Name)
	case "url", "description":
		return starlark.String("")
	case "database":
		return starlark.False
	case "status", "message":
		status, msg := memberStatus(p, st, time.Now())
		if name == "status" {
			return starlark.String(status)
		}
		return starlark.String(msg)
	case "architecture":
		return starlark.String(architecture(p.Traits))
	case "failure_domain":
		return starlark.String(failureDomain(p.Traits))
	case "roles":
		return frozenList(nil)
	case "config":
		return emptyDict()
	case "groups":
		return stringList(append([]string{DefaultGroup}, p.Aggregates...))
	}
	return nil
}

// memberStatus is LXD's status and message of p at now.
func memberStatus(p *scheduler.ProviderView, st *engine.ProviderState, now time.Time) (string, string) {
	switch {
	case p.Evacuated:
		return MemberEvacuated, "Unavailable due to maintenance"
	case st != nil && now.Sub(st.ReportedAt) > MemberOfflineAfter:
		return MemberOffline, fmt.Sprintf("No state reported for %s (%s)",
			now.Sub(st.ReportedAt).Round(time.Second), st.ReportedAt.UTC().Format(time.RFC3339))
	}
	return MemberOnline, "Fully operational"
}

// archNames are LXD's names of the HW_ARCH_* traits that differ from
// the trait's lower-cased suffix.
var archNames = map[string]string{"ARMV6": "armv6l", "ARMV7": "armv7l"}

// architecture is LXD's architecture name from the first HW_ARCH_*
// trait ("HW_ARCH_X86_64" is "x86_64"), "" without one.
func architecture(traits []string) string {
	for _, t := range traits {
		if a, ok := strings.CutPrefix(t, "HW_ARCH_"); ok {
			if n, ok := archNames[a]; ok {
				return n
			}
			return strings.ToLower(a)
		}
	}
	return ""
}

// failureDomain is the failure domain a CUSTOM_FAILURE_DOMAIN_* trait
// names, lower-cased; DefaultFailureDomain without one.
func failureDomain(traits []string) string {
	for _, t := range traits {
		if d, ok := strings.CutPrefix(t, failureDomainTraitPrefix); ok && d != "" {
			return strings.ToLower(d)
		}
	}
	return DefaultFailureDomain
}

// memberStateValue is get_cluster_member_state's answer: LXD's
// ClusterMemberState (sysinfo, storage_pools) and Berth's state fields
// (load_1, ..., reported_at). A member that never reported has zeros
// everywhere, reported_at None, and is false in a condition.
func memberStateValue(st *engine.ProviderState) starlark.Value {
	never := st == nil
	if never {
		st = &engine.ProviderState{}
	}
	names := fieldNames(append(slices.Clone(stateAttrs), "sysinfo", "storage_pools")...)
	o := lazyObject("ClusterMemberState", names, func(name string) starlark.Value {
		switch name {
		case "sysinfo":
			return sysInfoValue(st)
		case "storage_pools":
			return storagePoolsValue(st.StoragePools)
		case "reported_at":
			if never {
				return starlark.None
			}
		}
		v, _ := (*stateStruct)(st).Attr(name)
		return v
	})
	o.falsy = never
	return o
}

// sysInfoValue is LXD's ClusterMemberSysInfo of st: load_averages from
// load_1, load_5, load_15 and free_ram from memory_free_mb (bytes).
func sysInfoValue(st *engine.ProviderState) starlark.Value {
	si := st.SysInfo
	return newObject("ClusterMemberSysInfo", starlark.StringDict{
		"uptime":        starlark.MakeInt64(si.Uptime),
		"load_averages": frozenList([]starlark.Value{starlark.Float(st.Load1), starlark.Float(st.Load5), starlark.Float(st.Load15)}),
		"total_ram":     starlark.MakeInt64(si.TotalRAM),
		"free_ram":      starlark.MakeInt64(max(st.MemoryFreeMB, 0) * mib),
		"shared_ram":    starlark.MakeInt64(si.SharedRAM),
		"buffered_ram":  starlark.MakeInt64(si.BufferedRAM),
		"total_swap":    starlark.MakeInt64(si.TotalSwap),
		"free_swap":     starlark.MakeInt64(si.FreeSwap),
		"processes":     starlark.MakeInt64(si.Processes),
		"logical_cpus":  starlark.MakeInt64(si.LogicalCPUs),
	})
}

// storagePoolsValue is LXD's storage_pools: pool name -> {space: {used,
// total}, inodes: {used, total}}, a frozen dict.
func storagePoolsValue(pools map[string]engine.StoragePoolState) starlark.Value {
	d := starlark.NewDict(len(pools))
	for _, name := range sortedKeys(pools) {
		sp := pools[name]
		_ = d.SetKey(starlark.String(name), newObject("StoragePoolState", starlark.StringDict{
			"space": newObject("ResourcesStoragePoolSpace", starlark.StringDict{
				"used": starlark.MakeInt64(sp.Space.Used), "total": starlark.MakeInt64(sp.Space.Total)}),
			"inodes": newObject("ResourcesStoragePoolInodes", starlark.StringDict{
				"used": starlark.MakeInt64(sp.Inodes.Used), "total": starlark.MakeInt64(sp.Inodes.Total)}),
		}))
	}
	d.Freeze()
	return d
}

// memberResourcesValue is get_cluster_member_resources's answer: LXD's
// and Incus's api.Resources (cpu: architecture, total threads from the
// VCPU inventory's total; memory: total and used in bytes from
// MEMORY_MB; Incus's load from the reported state; system's uuid the
// provider's; the device sections empty: Berth does not know a host's
// devices) over Berth's mapping class -> inventory.
func memberResourcesValue(p *scheduler.ProviderView) starlark.Value {
	names := fieldNames("cpu", "gpu", "load", "memory", "network", "pci", "serial", "storage", "system", "usb")
	o := lazyObject("Resources", names, func(name string) starlark.Value {
		switch name {
		case "cpu":
			return newObject("ResourcesCPU", starlark.StringDict{
				"architecture": starlark.String(architecture(p.Traits)),
				"sockets":      emptyList(),
				"total":        starlark.MakeInt64(p.Resources.Of("VCPU").Total),
			})
		case "memory":
			mem := p.Resources.Of("MEMORY_MB")
			return newObject("ResourcesMemory", starlark.StringDict{
				"nodes": emptyList(), "hugepages_total": zeroInt(), "hugepages_used": zeroInt(),
				"hugepages_size": zeroInt(), "total": starlark.MakeInt64(mem.Total * mib), "used": starlark.MakeInt64(mem.Used * mib),
			})
		case "load":
			return loadValue(p.State)
		case "system":
			return systemValue(p.UUID)
		}
		return emptyDeviceSection(name)
	})
	o.entries = inventoriesMap(p)
	return o
}

// deviceSections are api.Resources' device sections: Go type name and
// the name of their list.
var deviceSections = map[string][2]string{
	"gpu": {"ResourcesGPU", "cards"}, "network": {"ResourcesNetwork", "cards"},
	"storage": {"ResourcesStorage", "disks"}, "usb": {"ResourcesUSB", "devices"},
	"pci": {"ResourcesPCI", "devices"}, "serial": {"ResourcesSerial", "devices"},
}

// emptyDeviceSection is section name of api.Resources with no device.
func emptyDeviceSection(name string) starlark.Value {
	ds := deviceSections[name]
	return newObject(ds[0], starlark.StringDict{ds[1]: emptyList(), "total": zeroInt()})
}

// loadValue is Incus's ResourcesLoad (its fields have no JSON names, so
// a scriptlet reads them by their Go names) from the reported state:
// load_1, load_5 and load_15 (Incus's third figure is the 15-minute one
// of /proc/loadavg despite its name), and the process count.
func loadValue(st *engine.ProviderState) starlark.Value {
	if st == nil {
		st = &engine.ProviderState{}
	}
	return newObject("ResourcesLoad", starlark.StringDict{
		"Average1Min":  starlark.Float(st.Load1),
		"Average5Min":  starlark.Float(st.Load5),
		"Average10Min": starlark.Float(st.Load15),
		"Processes":    starlark.MakeInt64(st.SysInfo.Processes),
	})
}

// systemValue is api.ResourcesSystem: Berth knows the provider's uuid;
// the rest is empty, the firmware, chassis and motherboard None.
func systemValue(uuid string) starlark.Value {
	return newObject("ResourcesSystem", starlark.StringDict{
		"uuid": starlark.String(uuid), "vendor": emptyString(), "product": emptyString(), "family": emptyString(),
		"version": emptyString(), "sku": emptyString(), "serial": emptyString(), "type": emptyString(),
		"firmware": starlark.None, "chassis": starlark.None, "motherboard": starlark.None,
	})
}

// instanceResourcesValue is get_instance_resources's answer: LXD's
// InstanceResources (cpu_cores, memory_size, root_disk_size) over
// Berth's mapping class -> amount the claim asks for.
func instanceResourcesValue(r InstanceResources, claimed map[string]int64) starlark.Value {
	o := newObject("InstanceResources", starlark.StringDict{
		"cpu_cores":      starlark.MakeInt64(r.CPUCores),
		"memory_size":    starlark.MakeInt64(r.MemorySize),
		"root_disk_size": starlark.MakeInt64(r.RootDiskSize),
	})
	o.entries = intDict(claimed)
	return o
}

// Incus's instance status for a consumer that holds allocations: Berth
// knows what an instance holds, not whether it runs, and one that holds
// its resources counts as running for placement.
const (
	instanceStatus     = "Running"
	instanceStatusCode = 103 // api.Running
)

// instanceValue is get_instances' element: Incus's api.Instance (the
// fields of the claim's instance document, LXD's zero values where it
// has none; status Running; created_at and last_used_at the consumer's
// times, RFC 3339) with Berth's fields (uuid, user, consumer_type,
// resources).
func instanceValue(in *scheduler.Instance) starlark.Value {
	doc := in.Instance
	field := func(name string, dflt func() starlark.Value) starlark.Value {
		if v, ok := doc[name]; ok && v != nil {
			return thawedStarlark(v)
		}
		return thawIf(dflt(), thawedStarlark)
	}
	typ := field("type", func() starlark.Value { return starlark.String(InstanceTypeContainer) })
	name := starlark.Value(starlark.String(in.Name))
	if s, ok := doc["name"].(string); ok && s != "" && in.Name == "" {
		name = starlark.String(s)
	}
	return newObject("Instance", starlark.StringDict{
		"architecture":     field("architecture", emptyString),
		"config":           field("config", emptyDict),
		"created_at":       starlark.String(in.CreatedAt.UTC().Format(time.RFC3339)),
		"description":      field("description", emptyString),
		"devices":          field("devices", emptyDict),
		"disk_only":        field("disk_only", falseValue),
		"ephemeral":        field("ephemeral", falseValue),
		"expanded_config":  field("config", emptyDict),
		"expanded_devices": field("devices", emptyDict),
		"last_used_at":     starlark.String(in.UpdatedAt.UTC().Format(time.RFC3339)),
		"location":         starlark.String(in.Location),
		"name":             name,
		"profiles":         field("profiles", emptyList),
		"project":          starlark.String(in.ProjectID),
		"restore":          field("restore", emptyString),
		"stateful":         field("stateful", falseValue),
		"status":           starlark.String(instanceStatus),
		"status_code":      starlark.MakeInt(instanceStatusCode),
		"type":             typ,
		// Berth's.
		"consumer_type": starlark.String(in.Type),
		"resources":     intDict(in.Resources),
		"user":          starlark.String(in.UserID),
		"uuid":          starlark.String(in.UUID),
	})
}

// projectValue is Incus's api.Project for get_project(name): Berth knows
// a project only by its consumers, so its description is empty, its
// config empty, and used_by the allocations of its consumers
// (/allocations/<consumer_uuid>).
func projectValue(name string, consumers []scheduler.Instance) starlark.Value {
	usedBy := make([]starlark.Value, len(consumers))
	for i, in := range consumers {
		usedBy[i] = starlark.String("/allocations/" + in.UUID)
	}
	return newObject("Project", starlark.StringDict{
		"name":        starlark.String(name),
		"description": starlark.String(""),
		"config":      emptyDict(),
		"used_by":     frozenList(usedBy),
	})
}
