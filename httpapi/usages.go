package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

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

// GET /resource_providers/{uuid}/usages
func (s *Server) providerUsagesGet(c echo.Context) error {
	u, err := s.store.ProviderUsagesGet(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return caughtNotFound(err, "No resource provider with uuid %s found: %s", c.Param("uuid"))
	}
	// Usage is a question about now, so Placement answers with now.
	setCacheHeaders(c, time.Now())
	return writeJSON(c, http.StatusOK, map[string]any{
		"resource_provider_generation": u.Generation,
		"usages":                       orderedInt64s(u.Usages, u.Classes),
	})
}

// GET /usages?project_id=&user_id= (1.9 on); grouped by consumer type,
// optionally narrowed with consumer_type=, from 1.38 on.
func (s *Server) usagesGet(c echo.Context) error {
	byType := version(c).AtLeast(38)
	schema := usagesQuerySchemaV1_9
	if byType {
		schema = usagesQuerySchemaV1_38
	}
	if err := validateQuery(c, schema); err != nil {
		return err
	}
	// A repeated parameter's last value counts, as in Placement.
	project, _ := queryLastValue(c, "project_id")
	user, _ := queryLastValue(c, "user_id")
	consumerType, _ := queryLastValue(c, "consumer_type")
	groups, err := s.store.Usages(c.Request().Context(), ledger.UsagesParams{
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
		out := map[string]*jsonObject{}
		for _, g := range groups {
			m := orderedInt64s(g.Usages, g.Classes)
			m.set("consumer_count", g.ConsumerCount)
			out[g.ConsumerType] = m
		}
		usages = out
	} else {
		usages = orderedInt64s(groups[0].Usages, groups[0].Classes)
	}
	setCacheHeaders(c, time.Now())
	return writeJSON(c, http.StatusOK, map[string]any{"usages": usages})
}
