package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
)

// Server-wide settings (Berth's extension), as LXD's /1.0 config: GET
// answers the stored keys as a JSON object; PATCH takes an object of key
// -> value, null removing a key. The keys are catalog.ConfigKeys.

var configPatchSchema = jsonschema.Must(`{"type": "object", "maxProperties": 100}`)

func (s *Server) configShow(c echo.Context) error {
	cfg, err := s.store.Config(c.Request().Context())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, cfg)
}

// configPatch serves PATCH /config: unknown keys and values of the wrong
// type are 400, and instances.placement.scriptlet must compile (400 with
// line and column); nothing is stored unless every key is valid. 200 with
// the whole config as stored.
func (s *Server) configPatch(c echo.Context) error {
	var changes map[string]json.RawMessage
	if err := s.decodeBody(c, configPatchSchema, &changes); err != nil {
		return err
	}
	for k, v := range changes {
		if string(v) == "null" {
			changes[k] = nil
		}
	}
	if err := s.catalog.ConfigPatch(c.Request().Context(), changes); err != nil {
		return err
	}
	return s.configShow(c)
}
