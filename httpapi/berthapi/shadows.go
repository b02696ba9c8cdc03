package berthapi

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/labstack/echo/v4"
)

// Shadows serves the shadows of scriptlets and scheduling policies.
type Shadows struct {
	Catalog ShadowCatalog
	Bodies  *wire.Bodies
}

// ShadowCatalog starts, reports and stops shadows (a *catalog.Catalog).
type ShadowCatalog interface {
	ShadowStart(ctx context.Context, kind, name string) (scheduling.Shadow, error)
	ShadowReport(ctx context.Context, kind, name string) (scheduling.Shadow, error)
	ShadowStop(ctx context.Context, kind, name string) error
}

// Shadows (Berth's extension): a stored scriptlet or scheduling policy run
// beside every real claim the default policy ranks, without affecting it
// (catalog.Catalog.ShadowStart, claims/shadow). PUT starts one (201 with
// its empty report), GET reports what it counted on every replica, DELETE
// stops it (204). The path's name is the scriptlet's or policy's.

// Start serves PUT /scriptlets/{name}/shadow and PUT
// /scheduling_policies/{name}/shadow: 201 with the report; 404 when there
// is no such scriptlet or policy, 400 when it cannot run in shadow, 409
// when its shadow already runs (berth.shadow.* codes). The body is
// optional: none, or an empty object ({"x": 1} is a 400, nothing
// started).
func (h *Shadows) Start(kind string) echo.HandlerFunc {
	return func(c echo.Context) error {
		if req := c.Request(); req.ContentLength != 0 || req.Header.Get(echo.HeaderContentType) != "" {
			body, err := h.Bodies.Read(c)
			if err != nil {
				return err
			}
			if len(strings.TrimSpace(string(body))) > 0 {
				if err := wire.DecodeJSON(body, shadowStartSchema, nil); err != nil {
					return err
				}
			}
		}
		sh, err := h.Catalog.ShadowStart(c.Request().Context(), kind, c.Param("name"))
		if err != nil {
			return err
		}
		return wire.WriteJSON(c, http.StatusCreated, shadowJSON(sh))
	}
}

// shadowStartSchema is the optional body of PUT .../shadow: an empty
// object, as other routes refuse members they do not know.
var shadowStartSchema = jsonschema.Must(`{"type": "object", "properties": {}, "additionalProperties": false}`)

// Show serves GET /scriptlets/{name}/shadow and GET
// /scheduling_policies/{name}/shadow: the report; 404 when none runs.
func (h *Shadows) Show(kind string) echo.HandlerFunc {
	return func(c echo.Context) error {
		sh, err := h.Catalog.ShadowReport(c.Request().Context(), kind, c.Param("name"))
		if err != nil {
			return err
		}
		return wire.WriteJSON(c, http.StatusOK, shadowJSON(sh))
	}
}

// Stop serves DELETE /scriptlets/{name}/shadow and DELETE
// /scheduling_policies/{name}/shadow: 204; 404 when none runs.
func (h *Shadows) Stop(kind string) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := h.Catalog.ShadowStop(c.Request().Context(), kind, c.Param("name")); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}
}

// shadowJSON is a shadow's report.
func shadowJSON(sh scheduling.Shadow) map[string]any {
	n := sh.Counts
	refusals := make([]any, 0, len(sh.Refusals))
	// Most frequent first, then by message.
	msgs := slices.SortedFunc(maps.Keys(sh.Refusals), func(a, b string) int {
		if d := sh.Refusals[b] - sh.Refusals[a]; d != 0 {
			return int(max(-1, min(1, d)))
		}
		if a < b {
			return -1
		}
		return 1
	})
	for _, m := range msgs {
		refusals = append(refusals, map[string]any{"message": m, "count": sh.Refusals[m]})
	}
	disagreements := make([]any, 0, len(sh.Disagreements))
	// Newest first.
	for _, d := range slices.Backward(sh.Disagreements) {
		disagreements = append(disagreements, map[string]any{
			"seen_at":       d.At.UTC().Format(time.RFC3339Nano),
			"consumer_uuid": d.ConsumerUUID,
			"name":          nullIfEmpty(d.Name),
			"project_id":    d.ProjectID,
			"claim": map[string]any{"root_provider_uuid": nullIfEmpty(d.ClaimRoot),
				"root_provider_name": nullIfEmpty(d.ClaimRootName), "refused": nullIfEmpty(d.ClaimRefusal)},
			"shadow": map[string]any{"root_provider_uuid": nullIfEmpty(d.ShadowRoot),
				"root_provider_name": nullIfEmpty(d.ShadowRootName)},
		})
	}
	meanMS := 0.0
	if n.ClaimsSeen > 0 {
		meanMS = float64(n.Nanoseconds) / float64(n.ClaimsSeen) / 1e6
	}
	return map[string]any{
		"kind":          sh.Kind,
		"name":          sh.Name,
		"started_at":    sh.StartedAt.UTC().Format(time.RFC3339Nano),
		"claims_seen":   n.ClaimsSeen,
		"agreed":        n.Agreed,
		"disagreed":     n.Disagreed,
		"would_refuse":  n.WouldRefuse,
		"would_preempt": map[string]any{"claims": n.WouldPreempt, "victims": n.WouldPreemptVictims},
		"refusals":      refusals,
		"failures": map[string]any{"steps": n.FailedSteps, "memory": n.FailedMemory,
			"deadline": n.FailedDeadline, "runtime_error": n.FailedError},
		"dropped":       n.Dropped,
		"cost":          map[string]any{"total_ms": float64(n.Nanoseconds) / 1e6, "mean_ms": meanMS},
		"disagreements": disagreements,
	}
}

// nullIfEmpty is s, or JSON null when it is empty.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
