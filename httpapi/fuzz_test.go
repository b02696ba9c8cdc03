package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// This file holds the fuzz targets for the request parsers: bodies through
// decodeJSON against every request schema, and query strings and version
// headers through the query parsers. `go test` replays their seeds in
// testdata/fuzz as regression tests; run one for longer with e.g.
//
//	go test ./httpapi -run '^$' -fuzz FuzzDecodeJSON -fuzztime 60s
//
// The end-to-end target, FuzzAPI, is in package integration.

// bodyTarget is a request body schema and a fresh value of the type its
// handler decodes the body into.
type bodyTarget struct {
	name   string
	schema *Schema
	dst    func() any
}

// bodyTargets lists every request body schema the API uses, each with a
// decode target shaped like its handler's.
func bodyTargets() []bodyTarget {
	type providerPost struct {
		Name       string         `json:"name"`
		UUID       string         `json:"uuid"`
		ParentUUID nullableString `json:"parent_provider_uuid"`
	}
	type providerPut struct {
		Name       string         `json:"name"`
		ParentUUID nullableString `json:"parent_provider_uuid"`
	}
	type providerTraits struct {
		Traits     []string `json:"traits"`
		Generation int64    `json:"resource_provider_generation"`
	}
	type aggregatesV1_19 struct {
		Aggregates []string `json:"aggregates"`
		Generation int64    `json:"resource_provider_generation"`
	}
	type resourceClass struct {
		Name string `json:"name"`
	}
	return []bodyTarget{
		{"provider POST", providerPostSchema, func() any { return new(providerPost) }},
		{"provider POST 1.14", providerPostSchemaV1_14, func() any { return new(providerPost) }},
		{"provider PUT", providerPutSchema, func() any { return new(providerPut) }},
		{"provider PUT 1.14", providerPutSchemaV1_14, func() any { return new(providerPut) }},
		{"provider traits PUT", providerTraitsSchema, func() any { return new(providerTraits) }},
		{"aggregates PUT 1.1", aggregatesSchemaV1_1, func() any { return new([]string) }},
		{"aggregates PUT 1.19", aggregatesSchemaV1_19, func() any { return new(aggregatesV1_19) }},
		{"resource class POST/PUT", resourceClassSchema, func() any { return new(resourceClass) }},
		{"custom trait name", customTraitSchema, nil},
	}
}

// checkBadRequest fails t unless err is nil or an *Error with status 400
// and a message, which is all decodeJSON may return.
func checkBadRequest(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("%s: error %T %v, want *Error", what, err, err)
	}
	if e.Status != http.StatusBadRequest || e.Msg == "" {
		t.Fatalf("%s: error %d %q, want a 400 with a message", what, e.Status, e.Msg)
	}
}

// FuzzDecodeJSON feeds arbitrary bytes to decodeJSON against each request
// schema: it must not panic, and must either accept the body or refuse it
// with a 400. A body the schema accepts must decode into the handler's type
// or be refused the same way.
func FuzzDecodeJSON(f *testing.F) {
	targets := bodyTargets()
	f.Add(uint8(0), []byte(`{"name": "cn1", "uuid": "8b9b3c4e-3a8b-4d6e-9f3b-1c2d3e4f5a6b"}`))
	f.Add(uint8(4), []byte(`{"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 0}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		target := targets[int(which)%len(targets)]
		if target.dst == nil {
			// A schema for a string from the path, as traitPut uses it.
			checkBadRequest(t, target.name, decodeJSON(body, target.schema, nil))
			_ = target.schema.Validate(string(body))
			return
		}
		dst := target.dst()
		err := decodeJSON(body, target.schema, dst)
		checkBadRequest(t, target.name, err)
		if err != nil {
			// The message is rendered into a JSON error body.
			if _, merr := json.Marshal(err.Error()); merr != nil {
				t.Fatalf("%s: message does not encode: %v", target.name, merr)
			}
		}
	})
}

// newQueryContext is an echo context for a GET with this raw query string.
func newQueryContext(rawQuery string) echo.Context {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.URL.RawQuery = rawQuery
	return echo.New().NewContext(req, httptest.NewRecorder())
}

// FuzzQueryParsers feeds arbitrary query strings and version headers to
// the query parsers: microversion negotiation and the query validation and
// parsing of each GET that takes parameters. None may panic, and each
// refusal must be a 400.
func FuzzQueryParsers(f *testing.F) {
	f.Add("name=in:HW_CPU_X86_AVX,CUSTOM_A&associated=true", "placement 1.6", uint8(6))
	f.Add("name=startswith:CUSTOM_", "compute 2.1, placement latest", uint8(39))
	f.Fuzz(func(t *testing.T, rawQuery, versionHeader string, minor uint8) {
		_, err := parseVersionHeader(versionHeader)
		checkBadRequest(t, "version header", err)
		// The version the other parsers run at.
		v := Version{1, int(minor) % (MaxVersion.Minor + 1)}
		_ = v

		filter, err := traitListFilter(newQueryContext(rawQuery))
		checkBadRequest(t, "GET /traits", err)
		if err == nil && filter.Associated != nil {
			if a, _ := queryLastValue(newQueryContext(rawQuery), "associated"); !strings.EqualFold(a, "true") && !strings.EqualFold(a, "false") {
				t.Fatalf("associated=%q accepted", a)
			}
		}
	})
}
