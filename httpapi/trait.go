package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

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
func traitsJSON(traits []ledger.Trait) ([]string, time.Time) {
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

// queryLastValue returns the last value of a query parameter, as webob's
// req.GET[key] does, and whether it was given at all.
func queryLastValue(c echo.Context, key string) (string, bool) {
	vs, ok := c.QueryParams()[key]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// traitList serves GET /traits, filtered by name=in:A,B or
// name=startswith:PREFIX and by associated=true|false.
func (s *Server) traitList(c echo.Context) error {
	filter, err := traitListFilter(c)
	if err != nil {
		return err
	}
	traits, err := s.store.TraitList(c.Request().Context(), filter)
	if err != nil {
		return err
	}
	names, last := traitsJSON(traits)
	setCacheHeaders(c, last)
	return writeJSON(c, http.StatusOK, map[string]any{"traits": names})
}

// traitListFilter validates and parses the query string of GET /traits.
func traitListFilter(c echo.Context) (ledger.TraitFilter, error) {
	var filter ledger.TraitFilter
	if err := validateQuery(c, traitListQuerySchema); err != nil {
		return filter, err
	}
	if name, ok := queryLastValue(c, "name"); ok {
		op, value, found := strings.Cut(name, ":")
		if !found {
			return filter, badRequest(`Badly formatted name parameter. Expected name query string parameter in form: `+
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
	if assoc, ok := queryLastValue(c, "associated"); ok {
		var b bool
		switch strings.ToLower(assoc) {
		case "true":
			b = true
		case "false":
		default:
			return filter, badRequest(`The query parameter "associated" only accepts "true" or "false"`)
		}
		filter.Associated = &b
	}
	return filter, nil
}

// traitShow serves GET /traits/{name}: 204 when the trait exists.
func (s *Server) traitShow(c echo.Context) error {
	tr, err := s.store.TraitGet(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	setCacheHeaders(c, tr.CreatedAt)
	return c.NoContent(http.StatusNoContent)
}

// traitPut serves PUT /traits/{name}: 201 when it created the custom trait,
// 204 when it already existed.
func (s *Server) traitPut(c echo.Context) error {
	name := c.Param("name")
	if err := customTraitSchema.Validate(name); err != nil {
		return badRequest(`The trait is invalid. A valid trait must be no longer than 255 characters, ` +
			`start with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"`)
	}
	tr, created, err := s.store.TraitEnsure(c.Request().Context(), name)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, traitURL(tr.Name))
	setCacheHeaders(c, tr.CreatedAt)
	if created {
		return c.NoContent(http.StatusCreated)
	}
	return c.NoContent(http.StatusNoContent)
}

// traitDelete serves DELETE /traits/{name}.
func (s *Server) traitDelete(c echo.Context) error {
	if err := s.store.TraitDelete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// providerTraitsJSON is the body of GET and PUT /resource_providers/{uuid}/traits.
func providerTraitsJSON(c echo.Context, generation int64, traits []ledger.Trait) error {
	names, last := traitsJSON(traits)
	setCacheHeaders(c, last)
	return writeJSON(c, http.StatusOK, map[string]any{
		"traits":                       names,
		"resource_provider_generation": generation,
	})
}

// providerTraitsShow serves GET /resource_providers/{uuid}/traits.
func (s *Server) providerTraitsShow(c echo.Context) error {
	gen, traits, err := s.store.ProviderTraits(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return caughtNotFound(err, "No resource provider with uuid %s found: %s", c.Param("uuid"))
	}
	return providerTraitsJSON(c, gen, traits)
}

// providerTraitsReplace serves PUT /resource_providers/{uuid}/traits: the
// body's traits become the provider's, if its generation is still the
// body's, and the generation is incremented.
func (s *Server) providerTraitsReplace(c echo.Context) error {
	// Not a named type: json.Unmarshal's messages name the struct.
	var body struct {
		Traits     []string `json:"traits"`
		Generation int64    `json:"resource_provider_generation"`
	}
	fromDoc := func(doc any, _ []byte) bool {
		return docListAndGeneration(doc, "traits", &body.Traits, &body.Generation)
	}
	if err := s.decodeBodyDoc(c, providerTraitsSchema, &body, fromDoc); err != nil {
		return err
	}
	if body.Traits == nil {
		body.Traits = []string{}
	}
	gen, traits, err := s.store.ProviderTraitsReplace(c.Request().Context(), c.Param("uuid"), body.Generation, body.Traits)
	if err != nil {
		return err
	}
	return providerTraitsJSON(c, gen, traits)
}

// providerTraitsDelete serves DELETE /resource_providers/{uuid}/traits.
func (s *Server) providerTraitsDelete(c echo.Context) error {
	if err := s.store.ProviderTraitsDelete(c.Request().Context(), c.Param("uuid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
