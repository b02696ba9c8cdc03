package placement

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/resources"
)

// Usages serves what providers and projects use.
type Usages struct {
	Store UsageStore
}

// UsageStore is what the usage routes ask of the ledger (a
// *resources.Providers).
type UsageStore interface {
	ProviderUsagesGet(ctx context.Context, providerUUID string) (resources.ProviderUsages, error)
	Usages(ctx context.Context, p resources.UsagesParams) ([]resources.UsageGroup, error)
}

// The query schemas of GET /usages, as Placement's placement/schemas/usage.py
// (consumer_type's pattern is Placement's CONSUMER_TYPE_GET_PATTERN, whose
// "^all" branch is unanchored at the end: "allx" passes and, like any other
// type name no consumer has, finds nothing).
const usagesQueryFields = `
	"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
	"user_id": {"type": "string", "minLength": 1, "maxLength": 255}`

var (
	usagesQuerySchemaV1_9 = jsonschema.Must(`{
		"type": "object",
		"properties": {` + usagesQueryFields + `},
		"required": ["project_id"],
		"additionalProperties": false
	}`)
	usagesQuerySchemaV1_38 = jsonschema.Must(`{
		"type": "object",
		"properties": {` + usagesQueryFields + `,
			"consumer_type": {"type": "string", "pattern": "^[A-Z0-9_]+$|^all|^unknown$",
			                  "minLength": 1, "maxLength": 255}
		},
		"required": ["project_id"],
		"additionalProperties": false
	}`)
)

// Provider serves GET /resource_providers/{uuid}/usages.
func (h *Usages) Provider(c echo.Context) error {
	u, err := h.Store.ProviderUsagesGet(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return wire.CaughtNotFound(err, "No resource provider with uuid %s found: %s", c.Param("uuid"))
	}
	// Usage is a question about now, so Placement answers with now.
	wire.SetCacheHeaders(c, time.Now())
	return wire.WriteJSON(c, http.StatusOK, map[string]any{
		"resource_provider_generation": u.Generation,
		"usages":                       wire.OrderedInt64s(u.Usages, u.Classes),
	})
}

// Project serves GET /usages?project_id=&user_id= (1.9 on); grouped by
// consumer type, optionally narrowed with consumer_type=, from 1.38 on.
func (h *Usages) Project(c echo.Context) error {
	byType := wire.VersionOf(c).AtLeast(38)
	schema := usagesQuerySchemaV1_9
	if byType {
		schema = usagesQuerySchemaV1_38
	}
	if err := wire.ValidateQuery(c, schema); err != nil {
		return err
	}
	// A repeated parameter's last value counts, as in Placement.
	project, _ := wire.QueryLast(c, "project_id")
	user, _ := wire.QueryLast(c, "user_id")
	consumerType, _ := wire.QueryLast(c, "consumer_type")
	groups, err := h.Store.Usages(c.Request().Context(), resources.UsagesParams{
		ProjectID:    project,
		UserID:       user,
		ByType:       byType,
		ConsumerType: consumerType,
	})
	if err != nil {
		return err
	}
	var usages any
	if byType {
		out := map[string]*wire.Object{}
		for _, g := range groups {
			m := wire.OrderedInt64s(g.Usages, g.Classes)
			m.Set("consumer_count", g.ConsumerCount)
			out[g.ConsumerType] = m
		}
		usages = out
	} else {
		usages = wire.OrderedInt64s(groups[0].Usages, groups[0].Classes)
	}
	wire.SetCacheHeaders(c, time.Now())
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"usages": usages})
}
