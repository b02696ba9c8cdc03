package daemon

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Memory limit.
//
// berthd's live heap grows with the cluster (the provider snapshot: see
// docs/performance.md, "Memory per provider"), and it runs with GOGC 400
// (cmd/berthd), which lets the heap grow to five times the live one
// between collections. A soft memory limit (GOMEMLIMIT) bounds that
// growth: the collector runs more often as the heap nears the limit, so
// small clusters keep GOGC 400's cheap collections and large ones stay
// under the container's limit instead of being killed.

// cgroupMemoryFiles are where the container's memory limit is read from:
// cgroup v2, then v1. v1 writes a huge number when there is no limit.
var cgroupMemoryFiles = []string{
	"/sys/fs/cgroup/memory.max",
	"/sys/fs/cgroup/memory/memory.limit_in_bytes",
}

// memoryLimitShare is the share of the cgroup's limit given to the Go heap
// when GOMEMLIMIT is not set: the rest is for memory the runtime does not
// count (goroutine stacks are counted; cgo, the binary's text, page cache
// charged to the cgroup are not).
const memoryLimitShare = 0.9

// noCgroupLimit is the value from which a cgroup v1 limit means none
// (the kernel writes PAGE_COUNTER_MAX pages, about 2^63 bytes).
const noCgroupLimit = 1 << 60

// MemoryLimitParams says where ApplyMemoryLimit looks; tests fill it in.
type MemoryLimitParams struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
	Files    []string // default: cgroupMemoryFiles
	// Set applies the limit in bytes (default: debug.SetMemoryLimit).
	Set func(int64) int64
}

// ApplyMemoryLimit sets the Go runtime's soft memory limit, once, at
// startup: when GOMEMLIMIT is set, the runtime has already applied it and
// it is only logged; otherwise memoryLimitShare of the cgroup memory
// limit (v2, else v1), when there is one. It returns the limit applied or
// found, 0 for none, and logs it once.
func ApplyMemoryLimit(p MemoryLimitParams, log *slog.Logger) int64 {
	if p.Getenv == nil {
		p.Getenv = os.Getenv
	}
	if p.ReadFile == nil {
		p.ReadFile = os.ReadFile
	}
	if p.Files == nil {
		p.Files = cgroupMemoryFiles
	}
	if p.Set == nil {
		p.Set = debug.SetMemoryLimit
	}
	if env := p.Getenv("GOMEMLIMIT"); env != "" {
		limit := p.Set(-1) // reads the limit without changing it
		log.Info("memory limit from GOMEMLIMIT", "GOMEMLIMIT", env, "bytes", limit)
		return limit
	}
	for _, f := range p.Files {
		b, err := p.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			break
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= noCgroupLimit {
			break
		}
		limit := int64(math.Floor(float64(n) * memoryLimitShare))
		p.Set(limit)
		log.Info("memory limit from the cgroup", "file", f, "cgroup_bytes", n, "limit_bytes", limit)
		return limit
	}
	log.Info("no memory limit: set GOMEMLIMIT or run in a cgroup with a memory limit to bound the heap")
	return 0
}
