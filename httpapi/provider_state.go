package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// What a provider's agent reports (Berth's extension): load averages,
// free memory and CPU utilisation, used by the load weigher, the state
// freshness filter and scriptlets; and, optionally, the rest of LXD's
// ClusterMemberState (sysinfo in bytes and seconds, storage pools),
// which get_cluster_member_state answers.

// maxCount bounds the counts and sizes of a report: what PostgreSQL's
// bigint holds.
const maxCount = `{"type": "integer", "minimum": 0, "maximum": 9223372036854775807}`

var providerStateSchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"load_1": {"type": "number", "minimum": 0},
		"load_5": {"type": "number", "minimum": 0},
		"load_15": {"type": "number", "minimum": 0},
		"memory_free_mb": {"type": "integer", "minimum": 0},
		"cpu_utilization": {"type": "number", "minimum": 0, "maximum": 1},
		"reported_at": {"type": "string", "minLength": 1},
		"sysinfo": {
			"type": "object",
			"properties": {
				"uptime": ` + maxCount + `, "total_ram": ` + maxCount + `, "shared_ram": ` + maxCount + `,
				"buffered_ram": ` + maxCount + `, "total_swap": ` + maxCount + `, "free_swap": ` + maxCount + `,
				"processes": ` + maxCount + `, "logical_cpus": ` + maxCount + `
			},
			"additionalProperties": false
		},
		"storage_pools": {
			"type": "object",
			"maxProperties": 256,
			"additionalProperties": {
				"type": "object",
				"properties": {
					"space": {"type": "object", "properties": {"used": ` + maxCount + `, "total": ` + maxCount + `}, "additionalProperties": false},
					"inodes": {"type": "object", "properties": {"used": ` + maxCount + `, "total": ` + maxCount + `}, "additionalProperties": false}
				},
				"additionalProperties": false
			}
		}
	},
	"required": ["load_1", "load_5", "load_15", "memory_free_mb", "cpu_utilization"],
	"additionalProperties": false
}`)

type providerStateBody struct {
	Load1          float64                            `json:"load_1"`
	Load5          float64                            `json:"load_5"`
	Load15         float64                            `json:"load_15"`
	MemoryFreeMB   int64                              `json:"memory_free_mb"`
	CPUUtilization float64                            `json:"cpu_utilization"`
	ReportedAt     string                             `json:"reported_at"`
	SysInfo        scheduler.SysInfo                  `json:"sysinfo"`
	StoragePools   map[string]ledger.StoragePoolState `json:"storage_pools"`
}

// providerStatePut serves PUT /resource_providers/{uuid}/state. reported_at
// is RFC 3339, default now; a time more than a minute ahead of the
// server's clock is refused (it would look fresh forever). 200 with the
// state as stored.
func (s *Server) providerStatePut(c echo.Context) error {
	var b providerStateBody
	if err := s.decodeBody(c, providerStateSchema, &b); err != nil {
		return err
	}
	at := time.Now().UTC()
	if b.ReportedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, b.ReportedAt)
		if err != nil {
			return badRequest("JSON does not validate: reported_at %q is not an RFC 3339 time.", b.ReportedAt)
		}
		if t.After(at.Add(time.Minute)) {
			return badRequest("JSON does not validate: reported_at %s is in the future.", b.ReportedAt)
		}
		at = t.UTC()
	}
	si := b.SysInfo
	st := ledger.ProviderState{Load1: b.Load1, Load5: b.Load5, Load15: b.Load15,
		MemoryFreeMB: b.MemoryFreeMB, CPUUtilization: b.CPUUtilization, ReportedAt: at,
		Uptime: si.Uptime, TotalRAM: si.TotalRAM, SharedRAM: si.SharedRAM, BufferedRAM: si.BufferedRAM,
		TotalSwap: si.TotalSwap, FreeSwap: si.FreeSwap, Processes: si.Processes, LogicalCPUs: si.LogicalCPUs,
		StoragePools: b.StoragePools}
	if err := s.store.ProviderStatePut(c.Request().Context(), c.Param("uuid"), st); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, providerStateJSON(st))
}

// providerStateShow serves GET /resource_providers/{uuid}/state: 404 when
// the provider does not exist or has not reported.
func (s *Server) providerStateShow(c echo.Context) error {
	st, err := s.store.ProviderStateGet(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	setCacheHeaders(c, st.ReportedAt)
	return writeJSON(c, http.StatusOK, providerStateJSON(st))
}

func providerStateJSON(st ledger.ProviderState) map[string]any {
	pools := st.StoragePools
	if pools == nil {
		pools = map[string]ledger.StoragePoolState{}
	}
	return map[string]any{
		"load_1":          st.Load1,
		"load_5":          st.Load5,
		"load_15":         st.Load15,
		"memory_free_mb":  st.MemoryFreeMB,
		"cpu_utilization": st.CPUUtilization,
		"reported_at":     st.ReportedAt.UTC().Format(time.RFC3339Nano),
		"sysinfo": map[string]int64{"uptime": st.Uptime, "total_ram": st.TotalRAM, "shared_ram": st.SharedRAM,
			"buffered_ram": st.BufferedRAM, "total_swap": st.TotalSwap, "free_swap": st.FreeSwap,
			"processes": st.Processes, "logical_cpus": st.LogicalCPUs},
		"storage_pools": pools,
	}
}
