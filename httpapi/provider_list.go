package httpapi

import (
	"errors"
	"io"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
)

// providerListSchemas are Placement's query schemas for GET
// /resource_providers, newest first.
var providerListSchemas = func() []struct {
	minor  int
	schema *jsonschema.Schema
} {
	props := `"name": {"type": "string"}, "uuid": {"type": "string", "format": "uuid"}`
	obj := func(p string) *jsonschema.Schema {
		return jsonschema.Must(`{"type": "object", "properties": {` + p + `}, "additionalProperties": false}`)
	}
	p3 := props + `, "member_of": {"type": "string"}`
	p4 := p3 + `, "resources": {"type": "string"}`
	p14 := p4 + `, "in_tree": {"type": "string", "format": "uuid"}`
	p18 := p14 + `, "required": {"type": "string"}`
	return []struct {
		minor  int
		schema *jsonschema.Schema
	}{{18, obj(p18)}, {14, obj(p14)}, {4, obj(p4)}, {3, obj(p3)}, {0, obj(props)}}
}()

// providerList serves GET /resource_providers, filtered by name, uuid,
// member_of (1.3), resources (1.4), in_tree (1.14) and required (1.18), all
// of which a provider must satisfy alone. It reads the ledger snapshot, the
// same one allocation candidates are computed from, and streams the
// answer from it: the providers are read from the snapshot twice (once for
// Last-Modified, once to write them), never collected, so a list of every
// provider of a large cloud costs a buffer, not memory per provider.
func (s *Server) providerList(c echo.Context) error {
	f, err := providerListFilter(c)
	if err != nil {
		return err
	}
	providers, err := s.store.ProviderList(c.Request().Context(), f)
	if err != nil {
		var ue *engine.UnknownNameError
		if errors.As(err, &ue) {
			if ue.Trait {
				return badRequest(`Invalid trait(s) in "required" parameter: %s`, ue.Error())
			}
			return badRequest("Invalid resource class in resources parameter: %s", ue.Error())
		}
		return err
	}
	var lastModified time.Time
	for p := range providers.All() {
		if t := providerLastModified(p); t.After(lastModified) {
			lastModified = t
		}
	}
	setCacheHeaders(c, lastModified)
	v := version(c)
	return streamJSON(c, func(w io.Writer) error { return writeProviderList(w, v, providers.All()) })
}

// providerListFilter validates and parses the query string of GET
// /resource_providers at the request's microversion.
func providerListFilter(c echo.Context) (engine.ProviderFilter, error) {
	v := version(c)
	var f engine.ProviderFilter
	for _, ls := range providerListSchemas {
		if v.AtLeast(ls.minor) {
			if err := validateQuery(c, ls.schema); err != nil {
				return f, err
			}
			break
		}
	}
	q := parseOrderedQuery(c.Request().URL.RawQuery)
	var err error
	if _, ok := q.last("member_of"); ok {
		if f.Group.MemberOf, f.Group.ForbiddenAggregates, err = parseMemberOf(q, "", v); err != nil {
			return f, err
		}
	}
	if _, ok := q.last("required"); ok {
		if f.Group.RequiredTraits, f.Group.ForbiddenTraits, err = parseRequired(q, "required", v); err != nil {
			return f, err
		}
	}
	f.UUID, _ = q.last("uuid")
	f.Name, _ = q.last("name")
	f.InTree, _ = q.last("in_tree")
	if r, ok := q.last("resources"); ok {
		if f.Group.Resources, err = parseResources(r); err != nil {
			return f, err
		}
	}
	return f, nil
}
