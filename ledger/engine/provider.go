package engine

import "time"

// The domain types every layer shares: a provider, an inventory (and an
// inventory with its usage), and what a provider's agent reports. Each
// is defined here once; a layer that needs more of one (the scheduler's
// view of a provider, a console row) embeds it under a name of its own.

// Provider is a resource provider: a compute node, a NUMA cell, a shared
// storage pool, a NIC. Providers form trees through ParentUUID.
type Provider struct {
	ID         int64
	UUID       string
	Name       string
	Generation int64
	// ParentUUID is empty for a root provider.
	ParentUUID string
	RootUUID   string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Inventory is the amount of one resource class a provider offers, as
// Placement's inventories API reads and writes it, and when it last
// changed.
type Inventory struct {
	ResourceClass   string
	Total           int64
	Reserved        int64
	MinUnit         int64
	MaxUnit         int64
	StepSize        int64
	AllocationRatio float64
	// UpdatedAt is when the inventory was last written; zero where it is
	// not read (the snapshot does not hold it).
	UpdatedAt time.Time
}

// Capacity is what can be allocated in all: (total - reserved) *
// allocation_ratio, in floating point, as PostgreSQL and Placement
// compute it.
func (inv Inventory) Capacity() float64 {
	return float64(inv.Total-inv.Reserved) * inv.AllocationRatio
}

// Fits reports whether used units plus amount more stay within capacity.
func (inv Inventory) Fits(used, amount int64) bool {
	return float64(used+amount) <= inv.Capacity()
}

// InventoryUsage is an inventory with what is allocated against it: one
// class of a provider as a provider summary, the scheduler and the
// console see it.
type InventoryUsage struct {
	Inventory
	// Capacity is Inventory.Capacity in whole units (rounded down), as
	// the snapshot computes it.
	Capacity int64
	// Used is what the provider's consumers hold of the class.
	Used int64
}

// ProviderState is what a provider's agent last reported: load averages,
// free memory in MiB, CPU utilisation (0 to 1) and when it was measured;
// and, optionally (zero when not reported), the rest of LXD's
// ClusterMemberState: the rest of its sysinfo, and storage pools.
type ProviderState struct {
	Load1          float64   `json:"load_1"`
	Load5          float64   `json:"load_5"`
	Load15         float64   `json:"load_15"`
	MemoryFreeMB   int64     `json:"memory_free_mb"`
	CPUUtilization float64   `json:"cpu_utilization"`
	ReportedAt     time.Time `json:"reported_at"`
	SysInfo        SysInfo   `json:"sysinfo"`
	// StoragePools are by pool name; nil or empty when none was
	// reported.
	StoragePools map[string]StoragePoolState `json:"storage_pools"`
}

// PreemptibleUsage is what preemptible consumers (docs/preemption.md)
// hold of one resource class on one provider: the amount, and the
// lowest priority among them (a claim of higher priority may take the
// room of those below it).
type PreemptibleUsage struct {
	ResourceClass  string `json:"resource_class"`
	Used           int64  `json:"used"`
	LowestPriority int64  `json:"lowest_priority"`
}

// SysInfo is what a report may add to LXD's ClusterMemberSysInfo beyond
// the load averages and free memory ProviderState's own fields carry:
// uptime in seconds, sizes in bytes.
type SysInfo struct {
	Uptime      int64 `json:"uptime"`
	TotalRAM    int64 `json:"total_ram"`
	SharedRAM   int64 `json:"shared_ram"`
	BufferedRAM int64 `json:"buffered_ram"`
	TotalSwap   int64 `json:"total_swap"`
	FreeSwap    int64 `json:"free_swap"`
	Processes   int64 `json:"processes"`
	LogicalCPUs int64 `json:"logical_cpus"`
}

// StoragePoolState is one storage pool of a report, as LXD's
// StoragePoolState: space used and total in bytes, inodes used and
// total.
type StoragePoolState struct {
	Space  UsedTotal `json:"space"`
	Inodes UsedTotal `json:"inodes"`
}

// UsedTotal is a quantity's use and total.
type UsedTotal struct {
	Used  int64 `json:"used"`
	Total int64 `json:"total"`
}
