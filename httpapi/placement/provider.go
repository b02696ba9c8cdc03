package placement

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// Providers serves Placement's resource provider routes.
type Providers struct {
	Store ProviderStore
	// Snapshots answers the provider list (a *snapshot.Cache).
	Snapshots ProviderLister
	Bodies    *wire.Bodies
}

// ProviderStore is what the resource provider routes ask of the ledger's
// providers (a *resources.Providers).
type ProviderStore interface {
	providerGetter
	ProviderCreate(ctx context.Context, params resources.ProviderCreateParams) (engine.Provider, error)
	ProviderUpdate(ctx context.Context, rpUUID string, params resources.ProviderUpdateParams) (engine.Provider, error)
	ProviderDelete(ctx context.Context, rpUUID string) error
}

// ProviderLister lists providers from the ledger's snapshot (a
// *snapshot.Cache).
type ProviderLister interface {
	ProviderList(ctx context.Context, f engine.ProviderFilter) (*engine.ProviderList, error)
}

// providerGetter looks a provider up.
type providerGetter interface {
	ProviderGet(ctx context.Context, uuid string) (engine.Provider, error)
}

// Placement's resource provider schemas: POST and PUT, before and from
// microversion 1.14, which added parent_provider_uuid. PUT cannot set the
// uuid.
var (
	providerPostSchema = jsonschema.Must(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200},
			"uuid": {"type": "string", "format": "uuid"}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
	providerPostSchemaV1_14 = jsonschema.Must(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200},
			"uuid": {"type": "string", "format": "uuid"},
			"parent_provider_uuid": {
				"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]
			}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
	providerPutSchema = jsonschema.Must(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
	providerPutSchemaV1_14 = jsonschema.Must(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200},
			"parent_provider_uuid": {
				"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]
			}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
)

// nullableString is a JSON string property that may be absent, null or set.
type nullableString struct {
	Set   bool // the property was present (null included)
	Value string
}

func (n *nullableString) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Value = ""
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// providerCreateBody is the body of POST /resource_providers.
type providerCreateBody struct {
	Name       string         `json:"name"`
	UUID       string         `json:"uuid"`
	ParentUUID nullableString `json:"parent_provider_uuid"`
}

func (b *providerCreateBody) decodeDoc(doc any, _ []byte) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	var out providerCreateBody
	for k, v := range m {
		switch k {
		case "name":
			out.Name, ok = v.(string)
		case "uuid":
			out.UUID, ok = v.(string)
		case "parent_provider_uuid":
			out.ParentUUID.Set = true
			if v != nil {
				out.ParentUUID.Value, ok = v.(string)
			}
		default:
			// json.Unmarshal matches names without case: leave it to it.
			ok = false
		}
		if !ok {
			return false
		}
	}
	*b = out
	return true
}

// providerURL is the path of a provider, as used in links and Location.
func providerURL(uuid string) string { return "/resource_providers/" + uuid }

// relLink is one entry of a "links" list.
func relLink(rel, href string) map[string]any { return map[string]any{"rel": rel, "href": href} }

// providerJSON renders one resource provider the way Placement does at the
// request's microversion: links grow with the microversion (aggregates
// from 1.1, traits from 1.6, allocations from 1.11) and the tree fields
// appear from 1.14. The provider list renders each of its entries with it.
func providerJSON(c echo.Context, p engine.Provider) map[string]any {
	v := wire.VersionOf(c)
	self := providerURL(p.UUID)
	rels := []string{"inventories", "usages"}
	if v.AtLeast(1) {
		rels = append(rels, "aggregates")
	}
	if v.AtLeast(6) {
		rels = append(rels, "traits")
	}
	if v.AtLeast(11) {
		rels = append(rels, "allocations")
	}
	links := []any{relLink("self", self)}
	for _, rel := range rels {
		links = append(links, relLink(rel, self+"/"+rel))
	}
	out := map[string]any{
		"uuid":       p.UUID,
		"name":       p.Name,
		"generation": p.Generation,
		"links":      links,
	}
	if v.AtLeast(14) {
		var parent any
		if p.ParentUUID != "" {
			parent = p.ParentUUID
		}
		out["parent_provider_uuid"] = parent
		out["root_provider_uuid"] = p.RootUUID
	}
	return out
}

// providerLastModified is the Last-Modified time of a provider.
func providerLastModified(p engine.Provider) time.Time {
	if p.UpdatedAt.IsZero() {
		return p.CreatedAt
	}
	return p.UpdatedAt
}

// Create serves POST /resource_providers: 201 with an empty body
// before microversion 1.20, 200 with the provider from 1.20 on, both with
// the provider's Location.
func (h *Providers) Create(c echo.Context) error {
	schema := providerPostSchema
	if wire.VersionOf(c).AtLeast(14) {
		schema = providerPostSchemaV1_14
	}
	var body providerCreateBody
	if err := h.Bodies.DecodeDoc(c, schema, &body, body.decodeDoc); err != nil {
		return err
	}
	p, err := h.Store.ProviderCreate(c.Request().Context(), resources.ProviderCreateParams{
		UUID:       body.UUID,
		Name:       body.Name,
		ParentUUID: body.ParentUUID.Value,
	})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, providerURL(p.UUID))
	if !wire.VersionOf(c).AtLeast(20) {
		return c.NoContent(http.StatusCreated)
	}
	wire.SetCacheHeaders(c, providerLastModified(p))
	v := wire.VersionOf(c)
	_, err = wire.WriteAppended(c, http.StatusOK, func(b []byte) ([]byte, bool) {
		return appendProvider(b, p, providerRels(v), v.AtLeast(14)), true
	})
	return err
}

// Show serves GET /resource_providers/{uuid}.
func (h *Providers) Show(c echo.Context) error {
	p, err := h.Store.ProviderGet(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	wire.SetCacheHeaders(c, providerLastModified(p))
	return wire.WriteJSON(c, http.StatusOK, providerJSON(c, p))
}

// Update serves PUT /resource_providers/{uuid}: rename, and from
// microversion 1.14 set the parent (from 1.37 also change or remove it).
// As in Placement, a missing provider is reported before a bad body.
func (h *Providers) Update(c echo.Context) error {
	raw, err := h.Bodies.Read(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rpUUID := c.Param("uuid")
	before, err := h.Store.ProviderGet(ctx, rpUUID)
	if err != nil {
		return err
	}
	v := wire.VersionOf(c)
	schema := providerPutSchema
	if v.AtLeast(14) {
		schema = providerPutSchemaV1_14
	}
	var body struct {
		Name       string         `json:"name"`
		ParentUUID nullableString `json:"parent_provider_uuid"`
	}
	if err := wire.DecodeJSON(raw, schema, &body); err != nil {
		return err
	}
	p, err := h.Store.ProviderUpdate(ctx, rpUUID, resources.ProviderUpdateParams{
		Name:          &body.Name,
		SetParent:     body.ParentUUID.Set,
		ParentUUID:    body.ParentUUID.Value,
		AllowReparent: v.AtLeast(37),
	})
	if err != nil {
		return err
	}
	// Placement's Last-Modified here is the provider's updated_at as it
	// read it before the update. Placement sets updated_at when it
	// creates a root provider (a second UPDATE gives the row its own
	// root id) and on every later change, so it is NULL, and the header
	// absent, only for a provider created under a parent and never
	// changed since. (Berth's updated_at is the creating transaction's
	// now() for every new provider, equal to its created_at.)
	if v.AtLeast(15) {
		c.Response().Header().Set("Cache-Control", "no-cache")
		neverSet := before.ParentUUID != "" && before.UpdatedAt.Equal(before.CreatedAt)
		if !before.UpdatedAt.IsZero() && !neverSet {
			c.Response().Header().Set("Last-Modified", before.UpdatedAt.UTC().Format(http.TimeFormat))
		}
	}
	return wire.WriteJSON(c, http.StatusOK, providerJSON(c, p))
}

// Delete serves DELETE /resource_providers/{uuid}.
func (h *Providers) Delete(c echo.Context) error {
	if err := h.Store.ProviderDelete(c.Request().Context(), c.Param("uuid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// providerFirst is the answer to a provider write (inventories,
// aggregates) whose body was refused with err: Placement's handler looks
// the provider up before it decodes the body, so a provider that does not
// exist is the answer to a malformed or invalid body (400) instead. The
// lookup is made only then, not on every write.
func providerFirst(c echo.Context, store providerGetter, err error) error {
	var e *wire.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		return err
	}
	if _, perr := store.ProviderGet(c.Request().Context(), c.Param("uuid")); perr != nil {
		return perr
	}
	return err
}
