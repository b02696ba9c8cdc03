package placement

import (
	"errors"
	"io"
	"iter"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
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

// List serves GET /resource_providers, filtered by name, uuid,
// member_of (1.3), resources (1.4), in_tree (1.14) and required (1.18), all
// of which a provider must satisfy alone. It reads the ledger snapshot, the
// same one allocation candidates are computed from, and streams the
// answer from it: the providers are read from the snapshot as they are
// written, never collected, so a list of every provider of a large cloud
// costs a buffer, not memory per provider. Last-Modified is the listed
// providers' newest change (engine.ProviderList.Newest: for every
// provider, the snapshot's, found once).
func (h *Providers) List(c echo.Context) error {
	f, err := providerListFilter(c)
	if err != nil {
		return err
	}
	providers, err := h.Snapshots.ProviderList(c.Request().Context(), f)
	if err != nil {
		var ue *engine.UnknownNameError
		if errors.As(err, &ue) {
			if ue.Trait {
				return wire.BadRequest(`Invalid trait(s) in "required" parameter: %s`, ue.Error())
			}
			return wire.BadRequest("Invalid resource class in resources parameter: %s", ue.Error())
		}
		return err
	}
	wire.SetCacheHeaders(c, providers.Newest())
	v := wire.VersionOf(c)
	return wire.Stream(c, func(w io.Writer) error { return writeProviderList(w, v, providers.All()) })
}

// providerListFilter validates and parses the query string of GET
// /resource_providers at the request's microversion.
func providerListFilter(c echo.Context) (engine.ProviderFilter, error) {
	v := wire.VersionOf(c)
	var f engine.ProviderFilter
	for _, ls := range providerListSchemas {
		if v.AtLeast(ls.minor) {
			if err := wire.ValidateQuery(c, ls.schema); err != nil {
				return f, err
			}
			break
		}
	}
	q := ParseOrderedQuery(c.Request().URL.RawQuery)
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

// providerRels lists the links of a provider at microversion v, after self.
// The slice is shared: callers must not change it.
func providerRels(v wire.Version) []string {
	switch {
	case v.AtLeast(11):
		return providerRelsByVersion[3]
	case v.AtLeast(6):
		return providerRelsByVersion[2]
	case v.AtLeast(1):
		return providerRelsByVersion[1]
	}
	return providerRelsByVersion[0]
}

// providerRelsByVersion are the links after self before 1.1, from 1.1
// (aggregates), from 1.6 (traits) and from 1.11 (allocations).
var providerRelsByVersion = [...][]string{
	{"inventories", "usages"},
	{"inventories", "usages", "aggregates"},
	{"inventories", "usages", "aggregates", "traits"},
	{"inventories", "usages", "aggregates", "traits", "allocations"},
}

// writeProviderList writes GET /resource_providers' answer for providers
// at microversion v to w, streaming (wire.ListStream). It writes what
// wire.WriteJSON(c, 200, {"resource_providers": [providerJSON(c, p)...]})
// would: each provider is appended by hand, keys sorted as encoding/json
// writes a map's, strings escaped as it escapes them, without a
// reflective encoding (the tests compare the bytes with providerJSON's at
// every microversion).
func writeProviderList(w io.Writer, v wire.Version, providers iter.Seq[engine.Provider]) error {
	rels := providerRels(v)
	ls := wire.NewListStream(w, "resource_providers")
	tree := v.AtLeast(14)
	for p := range providers {
		ls.Add(func(b []byte) []byte { return appendProvider(b, p, rels, tree) })
	}
	return ls.Close()
}

// appendQuoted appends escaped, a string's JSON escaping without its
// quotes, in quotes.
func appendQuoted(b, escaped []byte) []byte {
	b = append(b, '"')
	b = append(b, escaped...)
	return append(b, '"')
}

// appendProvider appends what wire.WriteJSON writes of providerJSON(c, p) at
// a microversion whose links after self are rels (providerRels) and
// that has the tree fields if tree (from 1.14).
func appendProvider(b []byte, p engine.Provider, rels []string, tree bool) []byte {
	b = append(b, `{"generation":`...)
	b = strconv.AppendInt(b, p.Generation, 10)
	b = append(b, `,"links":[{"href":"/resource_providers/`...)
	// The escaped uuid without its opening quote: providerURL(p.UUID)
	// escaped, without building it.
	self := len(b) - len("/resource_providers/")
	at := len(b)
	b = wire.AppendGoString(b, p.UUID)
	b = append(b[:at], b[at+1:]...)
	selfHref := b[self : len(b)-1] // the escaped href, without quotes
	uuid := selfHref[len("/resource_providers/"):]
	b = append(b, `,"rel":"self"}`...)
	for _, rel := range rels {
		b = append(b, `,{"href":"`...)
		b = append(b, selfHref...)
		b = append(b, '/')
		b = append(b, rel...) // rel names need no escaping
		b = append(b, `","rel":"`...)
		b = append(b, rel...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"name":`...)
	b = wire.AppendGoString(b, p.Name)
	if tree {
		b = append(b, `,"parent_provider_uuid":`...)
		if p.ParentUUID != "" {
			b = wire.AppendGoString(b, p.ParentUUID)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"root_provider_uuid":`...)
		if p.RootUUID == p.UUID {
			b = appendQuoted(b, uuid)
		} else {
			b = wire.AppendGoString(b, p.RootUUID)
		}
	}
	b = append(b, `,"uuid":`...)
	b = appendQuoted(b, uuid)
	return append(b, '}')
}
