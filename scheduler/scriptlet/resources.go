package scriptlet

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/berthd/berth/scheduler"
)

// What get_instance_resources answers: LXD's InstanceResources, computed
// as LXD computes it (lxd/scriptlet, instance_placement.go) from the
// instance document's limits.cpu, limits.memory and root disk size, and
// from the claim's resources where the document does not say.

// Units of the claim's resource classes: MEMORY_MB counts MiB, DISK_GB
// GiB (as Nova's flavors do).
const (
	mib = 1 << 20
	gib = 1 << 30
)

// LXD's defaults for a virtual machine that sets no limit (and the claim
// no amount): one core, 1 GiB of memory, a 10 GiB root disk.
const (
	vmDefaultCPUCores = 1
	vmDefaultMemory   = 1 * gib
	vmDefaultDiskSize = 10 * gib
)

// InstanceResources is LXD's InstanceResources: the cores, memory and
// root disk an instance will use, in bytes.
type InstanceResources struct {
	CPUCores     int64
	MemorySize   int64
	RootDiskSize int64
}

// instanceResources computes req's InstanceResources. limits.cpu is a
// count ("4") or a set of cores ("0-3,8"); limits.memory and the root
// disk's size are sizes with LXD's units ("512MiB", "1GB", "4096");
// absent, they are the claim's VCPU, MEMORY_MB (MiB) and DISK_GB (GiB),
// then LXD's defaults for a virtual machine, else 0. A value that does
// not parse is an error in LXD's words (a percentage of memory too: it
// is relative to a host, and no host is chosen yet).
func instanceResources(req *scheduler.Request) (InstanceResources, error) {
	cfg, _ := req.Instance["config"].(map[string]any)
	vm := req.Instance["type"] == InstanceTypeVM
	var r InstanceResources
	if s, _ := cfg["limits.cpu"].(string); s != "" {
		n, err := cpuCount(s, vm)
		if err != nil {
			return r, fmt.Errorf("Failed parsing instance resources limits.cpu: %w", err)
		}
		r.CPUCores = n
	} else {
		r.CPUCores = claimedOr(req, "VCPU", 1, vm, vmDefaultCPUCores)
	}
	if s, _ := cfg["limits.memory"].(string); s != "" {
		n, err := parseByteSize(s)
		if err != nil {
			return r, fmt.Errorf("Failed parsing instance resources limits.memory: %w", err)
		}
		r.MemorySize = n
	} else {
		r.MemorySize = claimedOr(req, "MEMORY_MB", mib, vm, vmDefaultMemory)
	}
	root, found := rootDisk(req.Instance["devices"])
	if s, _ := root["size"].(string); s != "" {
		n, err := parseByteSize(s)
		if err != nil {
			return r, fmt.Errorf("Failed parsing instance resources root disk size: %w", err)
		}
		r.RootDiskSize = n
	} else {
		r.RootDiskSize = claimedOr(req, "DISK_GB", gib, vm && found, vmDefaultDiskSize)
	}
	return r, nil
}

// claimedOr is what the claim asks of class, times unit; when it asks
// none, dflt if useDefault, else 0.
func claimedOr(req *scheduler.Request, class string, unit int64, useDefault bool, dflt int64) int64 {
	if n, ok := req.Resources[class]; ok && n > 0 {
		if n > math.MaxInt64/unit {
			return math.MaxInt64
		}
		return n * unit
	}
	if useDefault {
		return dflt
	}
	return 0
}

// rootDisk is LXD's root disk device among devices: the one disk
// mounted at "/" without a source. None, or more than one, is not found.
func rootDisk(devices any) (map[string]any, bool) {
	devs, _ := devices.(map[string]any)
	var root map[string]any
	for _, d := range devs {
		dev, _ := d.(map[string]any)
		if dev["type"] == "disk" && dev["path"] == "/" && (dev["source"] == nil || dev["source"] == "") {
			if root != nil {
				return nil, false // LXD: "More than one root device found"
			}
			root = dev
		}
	}
	return root, root != nil
}

// cpuCount is limits.cpu as LXD and Incus count it: a number of cores;
// for a virtual machine, Incus's topology ("sockets=2,cores=4,threads=2":
// their product); else the size of a CPU set such as "0-3,8" (each id
// counted as listed, as ParseCpuset does; ranges are counted, not
// expanded).
func cpuCount(s string, vm bool) (int64, error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return int64(min(n, math.MaxInt64)), nil
	}
	if vm && strings.Contains(s, "=") {
		return cpuTopology(s)
	}
	var total int64
	for _, chunk := range strings.Split(s, ",") {
		n, err := cpuChunk(chunk, s)
		if err != nil {
			return 0, fmt.Errorf("Invalid cpuset value %q: %w", s, err)
		}
		total = min(total+n, math.MaxInt32) // no host has more
	}
	return total, nil
}

// cpuChunk counts one element of a CPU set: an id or a range low-high.
func cpuChunk(chunk, set string) (int64, error) {
	before, after, isRange := strings.Cut(chunk, "-")
	if !isRange {
		if _, err := strconv.ParseInt(chunk, 10, 64); err != nil {
			return 0, fmt.Errorf("Invalid CPU/NUMA set value: %w", err)
		}
		return 1, nil
	}
	low, err := strconv.ParseInt(before, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Invalid CPU/NUMA set value: %w", err)
	}
	high, err := strconv.ParseInt(after, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Invalid CPU/NUMA set value: %w", err)
	}
	if high < low {
		return 0, nil
	}
	return min(high-low, math.MaxInt32) + 1, nil
}

// byteUnits are LXD's size suffixes (shared/units ParseByteSizeString).
var byteUnits = map[string]int64{
	"": 1, "B": 1, " bytes": 1,
	"kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15, "EB": 1e18,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60,
}

// parseByteSize is LXD's ParseByteSizeString: digits, then a unit, with
// LXD's error texts.
func parseByteSize(s string) (int64, error) {
	digits := 0
	for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
		digits++
	}
	if digits == 0 {
		return -1, fmt.Errorf("Invalid value: %s", s)
	}
	n, err := strconv.ParseInt(s[:digits], 10, 64)
	if err != nil {
		return -1, fmt.Errorf("Invalid integer: %s", s)
	}
	mult, ok := byteUnits[s[digits:]]
	if !ok {
		return -1, fmt.Errorf("Invalid value: %s", s)
	}
	if n > 1 && mult > 1 && n > math.MaxInt64/mult {
		return -1, fmt.Errorf("Overflow multiplying %d with %d", n, mult)
	}
	return n * mult, nil
}

// cpuTopology is Incus's CPU topology of a virtual machine
// (validate.ParseCPUTopology): comma-separated sockets=, cores= and
// threads= counts, each at least 1 and given once, 1 when absent; the
// cores are their product. Errors in Incus's words.
func cpuTopology(s string) (int64, error) {
	counts := map[string]int64{"sockets": 1, "cores": 1, "threads": 1}
	seen := map[string]bool{}
	if strings.TrimSpace(s) != "" {
		for _, chunk := range strings.Split(s, ",") {
			chunk = strings.TrimSpace(chunk)
			key, value, ok := strings.Cut(chunk, "=")
			if !ok {
				return 0, fmt.Errorf("Invalid CPU topology entry: %q", chunk)
			}
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			if seen[key] {
				return 0, fmt.Errorf("Duplicate CPU topology entry: %q", key)
			}
			seen[key] = true
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("Invalid CPU topology value for %q: %q", key, value)
			}
			if _, known := counts[key]; !known {
				return 0, fmt.Errorf("Unknown CPU topology entry: %q", key)
			}
			counts[key] = min(int64(n), math.MaxInt32)
		}
	}
	return min(counts["sockets"]*counts["cores"]*counts["threads"], math.MaxInt32), nil
}
