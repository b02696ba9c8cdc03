package berthapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
)

// Settings serves the server-wide settings.
type Settings struct {
	Store   SettingsStore
	Catalog SettingsCatalog
	Bodies  *wire.Bodies
}

// SettingsStore reads the stored settings (a *scheduling.Catalogue).
type SettingsStore interface {
	Config(ctx context.Context) (map[string]json.RawMessage, error)
}

// SettingsCatalog checks and writes settings (a *catalog.Catalog).
type SettingsCatalog interface {
	ConfigPatch(ctx context.Context, changes map[string]json.RawMessage) error
}

// Server-wide settings (Berth's extension), as LXD's /1.0 config: GET
// answers the stored keys as a JSON object; PATCH takes an object of key
// -> value, null removing a key. The keys are catalog.ConfigKeys.

var configPatchSchema = jsonschema.Must(`{"type": "object", "maxProperties": 100}`)

// Show serves GET /config.
func (h *Settings) Show(c echo.Context) error {
	cfg, err := h.Store.Config(c.Request().Context())
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, cfg)
}

// Patch serves PATCH /config: unknown keys and values of the wrong
// type are 400, and instances.placement.scriptlet must compile (400 with
// line and column); nothing is stored unless every key is valid. 200 with
// the whole config as stored.
func (h *Settings) Patch(c echo.Context) error {
	var changes map[string]json.RawMessage
	if err := h.Bodies.Decode(c, configPatchSchema, &changes); err != nil {
		return err
	}
	for k, v := range changes {
		if string(v) == "null" {
			changes[k] = nil
		}
	}
	if err := h.Catalog.ConfigPatch(c.Request().Context(), changes); err != nil {
		return err
	}
	return h.Show(c)
}
