package berthapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/scheduling"
)

// PlacementKeys serves the affinity placement keys of providers.
type PlacementKeys struct {
	Store  PlacementKeyStore
	Bodies *wire.Bodies
	// Rules answers whether the caller passes a policy rule beyond its
	// route's.
	Rules Authorizer
}

// PlacementKeyStore is what the placement key routes ask of the ledger
// (a *scheduling.Cloud).
type PlacementKeyStore interface {
	PlacementKeys(ctx context.Context, providerUUID string) ([]scheduling.PlacementKey, error)
	PlacementKeysReplace(ctx context.Context, providerUUID string, keys []scheduling.PlacementKey, p scheduling.PlacementKeysReplaceParams) error
}

// Authorizer answers whether the caller of a request passes a policy
// rule (one of authz.OperationRules), with the default target: the
// caller's own project and user.
type Authorizer interface {
	Allowed(c echo.Context, rule string) bool
}

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

// List serves GET /resource_providers/{uuid}/placement_keys.
func (h *PlacementKeys) List(c echo.Context) error {
	keys, err := h.Store.PlacementKeys(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, placementKeysJSON(keys))
}

// Put serves PUT /resource_providers/{uuid}/placement_keys:
// the provider's keys become exactly those given. 200 with the keys.
func (h *PlacementKeys) Put(c echo.Context) error {
	var b struct {
		Keys []placementKeyJSON `json:"placement_keys"`
	}
	if err := h.Bodies.Decode(c, placementKeysSchema, &b); err != nil {
		return err
	}
	keys := make([]scheduling.PlacementKey, len(b.Keys))
	for i, k := range b.Keys {
		keys[i] = scheduling.PlacementKey{Name: k.Name, Value: k.Value, Sticky: k.Sticky}
	}
	reserved := h.Rules.Allowed(c, reservedKeysRule)
	ctx := c.Request().Context()
	err := h.Store.PlacementKeysReplace(ctx, c.Param("uuid"), keys, scheduling.PlacementKeysReplaceParams{Reserved: reserved})
	var rk *scheduling.ReservedKeyError
	if errors.As(err, &rk) {
		return wire.NewError(http.StatusForbidden, "", "%s Policy does not allow %s to be performed.", rk.Error(), reservedKeysRule)
	}
	if err != nil {
		return err
	}
	stored, err := h.Store.PlacementKeys(ctx, c.Param("uuid"))
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, placementKeysJSON(stored))
}

func placementKeysJSON(keys []scheduling.PlacementKey) map[string]any {
	out := make([]placementKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = placementKeyJSON{Name: k.Name, Value: k.Value, Sticky: k.Sticky}
	}
	return map[string]any{"placement_keys": out}
}
