package httpapi

// TEMPORARY (allocations branch only): a minimal POST /resource_providers
// and GET /resource_providers/{uuid} so the conformance fixtures can seed
// providers before the providers branch lands. Delete this file (and
// ledger/zz_temp_providers.go) at merge in favour of the real provider code.

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/ledger"
)

func init() {
	routeRegistrations = append(routeRegistrations, func(s *Server) {
		s.handle(http.MethodPost, "/resource_providers", 0, "placement:resource_providers:create", s.tempProviderCreate)
		s.handle(http.MethodGet, "/resource_providers/:uuid", 0, "placement:resource_providers:show", s.tempProviderShow)
	})
}

var tempProviderSchema = MustSchema(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "minLength": 1, "maxLength": 200},
		"uuid": {"type": "string", "format": "uuid"},
		"parent_provider_uuid": {"type": ["string", "null"], "format": "uuid"}
	},
	"required": ["name"],
	"additionalProperties": false
}`)

func (s *Server) tempProviderCreate(c echo.Context) error {
	var body struct {
		Name   string  `json:"name"`
		UUID   string  `json:"uuid"`
		Parent *string `json:"parent_provider_uuid"`
	}
	if err := s.decodeBody(c, tempProviderSchema, &body); err != nil {
		return err
	}
	parent := ""
	if body.Parent != nil {
		parent = *body.Parent
	}
	p, err := s.store.TempProviderCreate(c.Request().Context(), body.UUID, body.Name, parent)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, absoluteURL(c, "/resource_providers/"+p.UUID))
	if !version(c).AtLeast(20) {
		return c.NoContent(http.StatusCreated)
	}
	return writeJSON(c, http.StatusOK, tempRenderProvider(p))
}

func (s *Server) tempProviderShow(c echo.Context) error {
	p, err := s.store.TempProviderGet(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	setCacheHeaders(c, p.UpdatedAt)
	return writeJSON(c, http.StatusOK, tempRenderProvider(p))
}

func tempRenderProvider(p ledger.Provider) map[string]any {
	base := "/resource_providers/" + p.UUID
	var parent any
	if p.ParentUUID != "" {
		parent = p.ParentUUID
	}
	return map[string]any{
		"uuid": p.UUID, "name": p.Name, "generation": p.Generation,
		"parent_provider_uuid": parent, "root_provider_uuid": p.RootUUID,
		"links": []map[string]string{
			{"rel": "self", "href": base},
			{"rel": "inventories", "href": base + "/inventories"},
			{"rel": "usages", "href": base + "/usages"},
			{"rel": "allocations", "href": base + "/allocations"},
		},
	}
}
