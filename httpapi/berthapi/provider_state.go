package berthapi

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
)

// What a provider's agent reports (Berth's extension): load averages,
// free memory and CPU utilisation, used by the load weigher, the state
// freshness filter and scriptlets; and, optionally, the rest of LXD's
// ClusterMemberState (sysinfo in bytes and seconds, storage pools),
// which get_cluster_member_state answers.

// ProviderStates serves what agents report of providers.
type ProviderStates struct {
	Store  ProviderStateStore
	Bodies *wire.Bodies
}

// ProviderStateStore is what the provider state routes ask of the
// ledger (a *scheduling.Cloud).
type ProviderStateStore interface {
	ProviderStatePut(ctx context.Context, providerUUID string, st engine.ProviderState) error
	ProviderStateGet(ctx context.Context, providerUUID string) (engine.ProviderState, error)
}

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
	SysInfo        engine.SysInfo                     `json:"sysinfo"`
	StoragePools   map[string]engine.StoragePoolState `json:"storage_pools"`
}

// Put serves PUT /resource_providers/{uuid}/state. reported_at
// is RFC 3339, default now; a time more than a minute ahead of the
// server's clock is refused (it would look fresh forever). 200 with the
// state as stored.
func (h *ProviderStates) Put(c echo.Context) error {
	var b providerStateBody
	if err := h.Bodies.Decode(c, providerStateSchema, &b); err != nil {
		return err
	}
	at := time.Now().UTC()
	if b.ReportedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, b.ReportedAt)
		if err != nil {
			return wire.BadRequest("JSON does not validate: reported_at %q is not an RFC 3339 time.", b.ReportedAt)
		}
		if t.After(at.Add(time.Minute)) {
			return wire.BadRequest("JSON does not validate: reported_at %s is in the future.", b.ReportedAt)
		}
		at = t.UTC()
	}
	st := engine.ProviderState{Load1: b.Load1, Load5: b.Load5, Load15: b.Load15,
		MemoryFreeMB: b.MemoryFreeMB, CPUUtilization: b.CPUUtilization, ReportedAt: at,
		SysInfo: b.SysInfo, StoragePools: b.StoragePools}
	if err := h.Store.ProviderStatePut(c.Request().Context(), c.Param("uuid"), st); err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, providerStateJSON(st))
}

// Show serves GET /resource_providers/{uuid}/state: 404 when
// the provider does not exist or has not reported.
func (h *ProviderStates) Show(c echo.Context) error {
	st, err := h.Store.ProviderStateGet(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	wire.SetCacheHeaders(c, st.ReportedAt)
	return wire.WriteJSON(c, http.StatusOK, providerStateJSON(st))
}

func providerStateJSON(st engine.ProviderState) map[string]any {
	si, pools := st.SysInfo, st.StoragePools
	if pools == nil {
		pools = map[string]engine.StoragePoolState{}
	}
	return map[string]any{
		"load_1":          st.Load1,
		"load_5":          st.Load5,
		"load_15":         st.Load15,
		"memory_free_mb":  st.MemoryFreeMB,
		"cpu_utilization": st.CPUUtilization,
		"reported_at":     st.ReportedAt.UTC().Format(time.RFC3339Nano),
		"sysinfo": map[string]int64{"uptime": si.Uptime, "total_ram": si.TotalRAM, "shared_ram": si.SharedRAM,
			"buffered_ram": si.BufferedRAM, "total_swap": si.TotalSwap, "free_swap": si.FreeSwap,
			"processes": si.Processes, "logical_cpus": si.LogicalCPUs},
		"storage_pools": pools,
	}
}
