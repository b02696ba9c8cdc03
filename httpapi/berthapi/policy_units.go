package berthapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/scheduler"
)

// GET /policy_units (Berth's extension): the built-in filters and
// weighers a scheduling policy may name, with their parameters, then the
// Starlark units of the stored scriptlets ("starlark:<name>").

// Units serves GET /policy_units.
func (h *Policies) Units(c echo.Context) error {
	units := h.Catalog.Registry().Units()
	starlark, err := h.Catalog.StarlarkUnits(c.Request().Context())
	if err != nil {
		return err
	}
	units = append(units, starlark...)
	for i := range units {
		if units[i].Parameters == nil {
			units[i].Parameters = []scheduler.ParamInfo{}
		}
	}
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"policy_units": units})
}
