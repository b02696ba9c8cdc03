package httpapi

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

// Affinity placement keys of providers (Berth's extension). Names
// starting "_" are reserved: writing them (adding, changing or removing
// one) also needs the rule berth:resource_providers:placement_keys:reserved.

// reservedKeysRule guards writes of reserved placement keys.
const reservedKeysRule = "berth:resource_providers:placement_keys:reserved"

var placementKeysSchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"placement_keys": {
			"type": "array",
			"maxItems": 1000,
			"items": {
				"type": "object",
				"properties": {
					"name": {"type": "string", "minLength": 1, "maxLength": 255},
					"value": {"type": "number"},
					"sticky": {"type": "boolean"}
				},
				"required": ["name", "value"],
				"additionalProperties": false
			}
		}
	},
	"required": ["placement_keys"],
	"additionalProperties": false
}`)

type placementKeyJSON struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Sticky bool    `json:"sticky"`
}

func (s *Server) placementKeysList(c echo.Context) error {
	keys, err := s.store.PlacementKeys(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, placementKeysJSON(keys))
}

// placementKeysPut serves PUT /resource_providers/{uuid}/placement_keys:
// the provider's keys become exactly those given. 200 with the keys.
func (s *Server) placementKeysPut(c echo.Context) error {
	var b struct {
		Keys []placementKeyJSON `json:"placement_keys"`
	}
	if err := s.decodeBody(c, placementKeysSchema, &b); err != nil {
		return err
	}
	keys := make([]ledger.PlacementKey, len(b.Keys))
	for i, k := range b.Keys {
		keys[i] = ledger.PlacementKey{Name: k.Name, Value: k.Value, Sticky: k.Sticky}
	}
	p, _ := c.Get(ctxCredentials).(authz.Credentials)
	reserved := s.authz.Allowed(reservedKeysRule, p, policyTarget(p))
	ctx := c.Request().Context()
	err := s.store.PlacementKeysReplace(ctx, c.Param("uuid"), keys, ledger.PlacementKeysReplaceParams{Reserved: reserved})
	var rk *ledger.ReservedKeyError
	if errors.As(err, &rk) {
		return newError(http.StatusForbidden, "", "%s Policy does not allow %s to be performed.", rk.Error(), reservedKeysRule)
	}
	if err != nil {
		return err
	}
	stored, err := s.store.PlacementKeys(ctx, c.Param("uuid"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, placementKeysJSON(stored))
}

func placementKeysJSON(keys []ledger.PlacementKey) map[string]any {
	out := make([]placementKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = placementKeyJSON{Name: k.Name, Value: k.Value, Sticky: k.Sticky}
	}
	return map[string]any{"placement_keys": out}
}

// policyTarget is the default policy target: the caller's own project and
// user, as authorize uses for route rules.
func policyTarget(p authz.Credentials) authz.Target {
	return authz.Target{"project_id": p.ProjectID, "user_id": p.UserID}
}
