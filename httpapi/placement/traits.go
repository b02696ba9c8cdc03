package placement

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/resources"
)

// Traits serves the traits, and each provider's.
type Traits struct {
	Store  TraitStore
	Bodies *wire.Bodies
}

// TraitStore is what the trait routes ask of the ledger (a
// *resources.Providers).
type TraitStore interface {
	TraitList(ctx context.Context, filter resources.TraitFilter) ([]resources.Trait, error)
	TraitGet(ctx context.Context, name string) (resources.Trait, error)
	TraitEnsure(ctx context.Context, name string) (tr resources.Trait, created bool, err error)
	TraitDelete(ctx context.Context, name string) error
	ProviderTraits(ctx context.Context, rpUUID string) (generation int64, traits []resources.Trait, err error)
	ProviderTraitsReplace(ctx context.Context, rpUUID string, generation int64, names []string) (int64, []resources.Trait, error)
	ProviderTraitsDelete(ctx context.Context, rpUUID string) error
}

var (
	// customTraitSchema is Placement's schema for the name of a custom trait.
	customTraitSchema = jsonschema.Must(`{
		"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^CUSTOM_[A-Z0-9_]+$"
	}`)
	traitListQuerySchema = jsonschema.Must(`{
		"type": "object",
		"properties": {
			"name": {"type": "string"},
			"associated": {"type": "string"}
		},
		"additionalProperties": false
	}`)
	providerTraitsSchema = jsonschema.Must(`{
		"type": "object",
		"properties": {
			"traits": {
				"type": "array",
				"items": {"type": "string", "minLength": 1, "maxLength": 255}
			},
			"resource_provider_generation": {"type": "integer"}
		},
		"required": ["traits", "resource_provider_generation"],
		"additionalProperties": false
	}`)
)

func traitURL(name string) string { return "/traits/" + name }

// traitsJSON lists trait names and gives the latest change among them
// (zero when there are none).
func traitsJSON(traits []resources.Trait) ([]string, time.Time) {
	names := make([]string, len(traits))
	var last time.Time
	for i, tr := range traits {
		names[i] = tr.Name
		for _, m := range []time.Time{tr.CreatedAt, tr.UpdatedAt} {
			if m.After(last) {
				last = m
			}
		}
	}
	return names, last
}

// List serves GET /traits, filtered by name=in:A,B or
// name=startswith:PREFIX and by associated=true|false.
func (h *Traits) List(c echo.Context) error {
	filter, err := traitListFilter(c)
	if err != nil {
		return err
	}
	traits, err := h.Store.TraitList(c.Request().Context(), filter)
	if err != nil {
		return err
	}
	names, last := traitsJSON(traits)
	wire.SetCacheHeaders(c, last)
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"traits": names})
}

// traitListFilter validates and parses the query string of GET /traits.
func traitListFilter(c echo.Context) (resources.TraitFilter, error) {
	var filter resources.TraitFilter
	if err := wire.ValidateQuery(c, traitListQuerySchema); err != nil {
		return filter, err
	}
	if name, ok := wire.QueryLast(c, "name"); ok {
		op, value, found := strings.Cut(name, ":")
		if !found {
			return filter, wire.BadRequest(`Badly formatted name parameter. Expected name query string parameter in form: `+
				`?name=[in|startswith]:[name1,name2|prefix]. Got: "%s"`, name)
		}
		switch op {
		case "in":
			filter.NameIn = strings.Split(value, ",")
		case "startswith":
			filter.Prefix = value
		}
		// Placement ignores any other operator.
	}
	if assoc, ok := wire.QueryLast(c, "associated"); ok {
		var b bool
		switch strings.ToLower(assoc) {
		case "true":
			b = true
		case "false":
		default:
			return filter, wire.BadRequest(`The query parameter "associated" only accepts "true" or "false"`)
		}
		filter.Associated = &b
	}
	return filter, nil
}

// Show serves GET /traits/{name}: 204 when the trait exists.
func (h *Traits) Show(c echo.Context) error {
	tr, err := h.Store.TraitGet(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	wire.SetCacheHeaders(c, tr.CreatedAt)
	return c.NoContent(http.StatusNoContent)
}

// Put serves PUT /traits/{name}: 201 when it created the custom trait,
// 204 when it already existed.
func (h *Traits) Put(c echo.Context) error {
	name := c.Param("name")
	if err := customTraitSchema.Validate(name); err != nil {
		return wire.BadRequest(`The trait is invalid. A valid trait must be no longer than 255 characters, ` +
			`start with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"`)
	}
	tr, created, err := h.Store.TraitEnsure(c.Request().Context(), name)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, traitURL(tr.Name))
	wire.SetCacheHeaders(c, tr.CreatedAt)
	if created {
		return c.NoContent(http.StatusCreated)
	}
	return c.NoContent(http.StatusNoContent)
}

// Delete serves DELETE /traits/{name}.
func (h *Traits) Delete(c echo.Context) error {
	if err := h.Store.TraitDelete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// providerTraitsJSON is the body of GET and PUT /resource_providers/{uuid}/traits.
func providerTraitsJSON(c echo.Context, generation int64, traits []resources.Trait) error {
	names, last := traitsJSON(traits)
	wire.SetCacheHeaders(c, last)
	return wire.WriteJSON(c, http.StatusOK, map[string]any{
		"traits":                       names,
		"resource_provider_generation": generation,
	})
}

// ProviderShow serves GET /resource_providers/{uuid}/traits.
func (h *Traits) ProviderShow(c echo.Context) error {
	gen, traits, err := h.Store.ProviderTraits(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return wire.CaughtNotFound(err, "No resource provider with uuid %s found: %s", c.Param("uuid"))
	}
	return providerTraitsJSON(c, gen, traits)
}

// ProviderReplace serves PUT /resource_providers/{uuid}/traits: the
// body's traits become the provider's, if its generation is still the
// body's, and the generation is incremented.
func (h *Traits) ProviderReplace(c echo.Context) error {
	// Not a named type: json.Unmarshal's messages name the struct.
	var body struct {
		Traits     []string `json:"traits"`
		Generation int64    `json:"resource_provider_generation"`
	}
	fromDoc := func(doc any, _ []byte) bool {
		return wire.DocListAndGeneration(doc, "traits", &body.Traits, &body.Generation)
	}
	if err := h.Bodies.DecodeDoc(c, providerTraitsSchema, &body, fromDoc); err != nil {
		return err
	}
	if body.Traits == nil {
		body.Traits = []string{}
	}
	gen, traits, err := h.Store.ProviderTraitsReplace(c.Request().Context(), c.Param("uuid"), body.Generation, body.Traits)
	if err != nil {
		return err
	}
	return providerTraitsJSON(c, gen, traits)
}

// ProviderDelete serves DELETE /resource_providers/{uuid}/traits.
func (h *Traits) ProviderDelete(c echo.Context) error {
	if err := h.Store.ProviderTraitsDelete(c.Request().Context(), c.Param("uuid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// appendProviderTraits appends providerTraitsJSON's answer.
func appendProviderTraits(b []byte, generation int64, names []string) []byte {
	b = append(b, `{"resource_provider_generation":`...)
	b = strconv.AppendInt(b, generation, 10)
	b = append(b, `,"traits":`...)
	b = wire.AppendStrings(b, names)
	return append(b, '}')
}
