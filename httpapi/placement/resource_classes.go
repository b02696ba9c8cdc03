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

// ResourceClasses serves the resource classes.
type ResourceClasses struct {
	Store  ResourceClassStore
	Bodies *wire.Bodies
}

// ResourceClassStore is what the resource class routes ask of the
// ledger (a *resources.Providers).
type ResourceClassStore interface {
	ResourceClassList(ctx context.Context) ([]resources.ResourceClass, error)
	ResourceClassGet(ctx context.Context, name string) (resources.ResourceClass, error)
	ResourceClassCreate(ctx context.Context, name string) (resources.ResourceClass, error)
	ResourceClassEnsure(ctx context.Context, name string) (rc resources.ResourceClass, created bool, err error)
	ResourceClassRename(ctx context.Context, name, newName string) (resources.ResourceClass, error)
	ResourceClassDelete(ctx context.Context, name string) error
}

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

func resourceClassJSON(rc resources.ResourceClass) map[string]any {
	return map[string]any{
		"name":  rc.Name,
		"links": []any{relLink("self", resourceClassURL(rc.Name))},
	}
}

// resourceClassLastModified is the later of a class's creation and update.
func resourceClassLastModified(rc resources.ResourceClass) time.Time {
	if rc.UpdatedAt.After(rc.CreatedAt) {
		return rc.UpdatedAt
	}
	return rc.CreatedAt
}

// List serves GET /resource_classes.
func (h *ResourceClasses) List(c echo.Context) error {
	rcs, err := h.Store.ResourceClassList(c.Request().Context())
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
	wire.SetCacheHeaders(c, last)
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"resource_classes": out})
}

// Create serves POST /resource_classes: 201, empty body, Location.
func (h *ResourceClasses) Create(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := h.Bodies.Decode(c, resourceClassSchema, &body); err != nil {
		return err
	}
	rc, err := h.Store.ResourceClassCreate(c.Request().Context(), body.Name)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, resourceClassURL(rc.Name))
	return c.NoContent(http.StatusCreated)
}

// Show serves GET /resource_classes/{name}.
func (h *ResourceClasses) Show(c echo.Context) error {
	rc, err := h.Store.ResourceClassGet(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	wire.SetCacheHeaders(c, resourceClassLastModified(rc))
	return wire.WriteJSON(c, http.StatusOK, resourceClassJSON(rc))
}

// Update serves PUT /resource_classes/{name}. Up to
// microversion 1.6 it renames a custom class to the name in the body; from
// 1.7 it takes no body and makes sure the custom class in the path exists:
// 201 when it created it, 204 when it already existed.
func (h *ResourceClasses) Update(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	if !wire.VersionOf(c).AtLeast(7) {
		var body struct {
			Name string `json:"name"`
		}
		if err := h.Bodies.Decode(c, resourceClassSchema, &body); err != nil {
			return err
		}
		rc, err := h.Store.ResourceClassRename(ctx, name, body.Name)
		if err != nil {
			return err
		}
		return wire.WriteJSON(c, http.StatusOK, resourceClassJSON(rc))
	}
	// Placement validates the path's name by running the body schema over
	// {"name": name}, and its errors read accordingly.
	if err := resourceClassSchema.Validate(map[string]any{"name": name}); err != nil {
		return wire.BadRequest("JSON does not validate: %v", err)
	}
	rc, created, err := h.Store.ResourceClassEnsure(ctx, name)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, resourceClassURL(rc.Name))
	if created {
		return c.NoContent(http.StatusCreated)
	}
	return c.NoContent(http.StatusNoContent)
}

// Delete serves DELETE /resource_classes/{name}.
func (h *ResourceClasses) Delete(c echo.Context) error {
	if err := h.Store.ResourceClassDelete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
