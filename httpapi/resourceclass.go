package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

// resourceClassSchema is Placement's schema for a custom resource class
// name, used for POST and PUT bodies and, from microversion 1.7, for the
// name in the path of a PUT.
var resourceClassSchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255}
	},
	"required": ["name"],
	"additionalProperties": false
}`)

func resourceClassURL(name string) string { return "/resource_classes/" + name }

func resourceClassJSON(rc ledger.ResourceClass) map[string]any {
	return map[string]any{
		"name":  rc.Name,
		"links": []any{relLink("self", resourceClassURL(rc.Name))},
	}
}

// resourceClassLastModified is the later of a class's creation and update.
func resourceClassLastModified(rc ledger.ResourceClass) time.Time {
	if rc.UpdatedAt.After(rc.CreatedAt) {
		return rc.UpdatedAt
	}
	return rc.CreatedAt
}

// resourceClassList serves GET /resource_classes.
func (s *Server) resourceClassList(c echo.Context) error {
	rcs, err := s.store.ResourceClassList(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]any, len(rcs))
	var last time.Time
	for i, rc := range rcs {
		out[i] = resourceClassJSON(rc)
		if m := resourceClassLastModified(rc); m.After(last) {
			last = m
		}
	}
	setCacheHeaders(c, last)
	return writeJSON(c, http.StatusOK, map[string]any{"resource_classes": out})
}

// resourceClassCreate serves POST /resource_classes: 201, empty body, Location.
func (s *Server) resourceClassCreate(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := s.decodeBody(c, resourceClassSchema, &body); err != nil {
		return err
	}
	rc, err := s.store.ResourceClassCreate(c.Request().Context(), body.Name)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, resourceClassURL(rc.Name))
	return c.NoContent(http.StatusCreated)
}

// resourceClassShow serves GET /resource_classes/{name}.
func (s *Server) resourceClassShow(c echo.Context) error {
	rc, err := s.store.ResourceClassGet(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	setCacheHeaders(c, resourceClassLastModified(rc))
	return writeJSON(c, http.StatusOK, resourceClassJSON(rc))
}

// resourceClassUpdate serves PUT /resource_classes/{name}. Up to
// microversion 1.6 it renames a custom class to the name in the body; from
// 1.7 it takes no body and makes sure the custom class in the path exists:
// 201 when it created it, 204 when it already existed.
func (s *Server) resourceClassUpdate(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	if !version(c).AtLeast(7) {
		var body struct {
			Name string `json:"name"`
		}
		if err := s.decodeBody(c, resourceClassSchema, &body); err != nil {
			return err
		}
		rc, err := s.store.ResourceClassRename(ctx, name, body.Name)
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, resourceClassJSON(rc))
	}
	// Placement validates the path's name by running the body schema over
	// {"name": name}, and its errors read accordingly.
	if err := resourceClassSchema.Validate(map[string]any{"name": name}); err != nil {
		return badRequest("JSON does not validate: %v", err)
	}
	rc, created, err := s.store.ResourceClassEnsure(ctx, name)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, resourceClassURL(rc.Name))
	if created {
		return c.NoContent(http.StatusCreated)
	}
	return c.NoContent(http.StatusNoContent)
}

// resourceClassDelete serves DELETE /resource_classes/{name}.
func (s *Server) resourceClassDelete(c echo.Context) error {
	if err := s.store.ResourceClassDelete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
