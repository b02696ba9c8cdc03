package placement

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
	"github.com/labstack/echo/v4"
)

// This file holds the fuzz targets for the request parsers of
// Placement's routes: bodies through wire.DecodeJSON against every request
// schema, and query strings and version headers through the query
// parsers. `go test` replays their seeds in testdata/fuzz as regression
// tests; run one for longer with e.g.
//
//	go test ./httpapi/placement -run '^$' -fuzz FuzzDecodeJSON -fuzztime 60s -parallel 1
//
// Claims' bodies have their own target, FuzzDecodeClaim (package
// berthapi); the end-to-end target, FuzzAPI, is in package integration.

// bodyTarget is one request body parser: the schema and the decoding a
// handler does before it calls the ledger.
type bodyTarget struct {
	name  string
	parse func(body []byte) error
}

// decodeInto is a bodyTarget parse function for handlers that decode the
// body into a fresh T with schema.
func decodeInto[T any](schema *jsonschema.Schema) func([]byte) error {
	return func(body []byte) error { return wire.DecodeJSON(body, schema, new(T)) }
}

// bodyTargets lists every request body the API parses, each with the
// parsing its handler does. Append new ones: the seed corpus refers to
// them by index.
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
	targets := []bodyTarget{
		{"provider POST", decodeInto[providerPost](providerPostSchema)},
		{"provider POST 1.14", decodeInto[providerPost](providerPostSchemaV1_14)},
		{"provider PUT", decodeInto[providerPut](providerPutSchema)},
		{"provider PUT 1.14", decodeInto[providerPut](providerPutSchemaV1_14)},
		{"provider traits PUT", decodeInto[providerTraits](providerTraitsSchema)},
		{"aggregates PUT 1.1", decodeInto[[]string](aggregatesSchemaV1_1)},
		{"aggregates PUT 1.19", decodeInto[aggregatesV1_19](aggregatesSchemaV1_19)},
		{"resource class POST/PUT", decodeInto[resourceClass](resourceClassSchema)},
		{"custom trait name", func(body []byte) error {
			// The name in the path of PUT /traits/{name}; a refusal is a
			// schema error, which Traits.Put rewords.
			_ = customTraitSchema.Validate(string(body))
			return nil
		}},
		{"inventory POST", decodeInto[inventoryBody](postInventorySchema)},
		{"inventory PUT", decodeInto[inventoryBody](putInventorySchema)},
		{"inventories PUT", func(body []byte) error {
			var b inventoriesBody
			if err := wire.DecodeJSON(body, putInventoriesSchemaCompiled, &b); err != nil {
				return err
			}
			_ = b.inventories()
			return nil
		}},
	}
	for _, minor := range []int{0, 8, 12, 28, 34, 38} {
		v := wire.Version{Major: 1, Minor: minor}
		targets = append(targets, bodyTarget{"allocations PUT " + v.String(), func(body []byte) error {
			var b consumerBody
			if err := wire.DecodeJSON(body, putAllocationsSchema(v), &b); err != nil {
				return err
			}
			_, err := b.toLedger("8b9b3c4e-3a8b-4d6e-9f3b-1c2d3e4f5a6b", v)
			return err
		}})
	}
	for _, minor := range []int{13, 28, 34, 38} {
		v := wire.Version{Major: 1, Minor: minor}
		targets = append(targets, bodyTarget{"allocations POST " + v.String(), func(body []byte) error {
			var b wire.OrderedMap[consumerBody]
			if err := wire.DecodeJSON(body, postAllocationsSchema(v), &b); err != nil {
				return err
			}
			_, err := consumerWrites(b, v)
			return err
		}})
	}
	for _, rs := range []struct {
		minor  int
		schema *jsonschema.Schema
	}{{30, reshaperSchemaV1_30}, {34, reshaperSchemaV1_34}, {38, reshaperSchemaV1_38}} {
		v := wire.Version{Major: 1, Minor: rs.minor}
		targets = append(targets, bodyTarget{"reshaper " + v.String(), func(body []byte) error {
			var b reshaperBody
			if err := wire.DecodeJSON(body, rs.schema, &b); err != nil {
				return err
			}
			for _, rp := range b.Inventories.Keys {
				_ = b.Inventories.Values[rp].inventories()
			}
			_, err := consumerWrites(b.Allocations, v)
			return err
		}})
	}
	return targets
}

// checkBadRequest fails t unless err is nil or a *wire.Error with status
// 400 and a message, which is all wire.DecodeJSON may return.
func checkBadRequest(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	e, ok := err.(*wire.Error)
	if !ok {
		t.Fatalf("%s: error %T %v, want *Error", what, err, err)
	}
	if e.Status != http.StatusBadRequest || e.Msg == "" {
		t.Fatalf("%s: error %d %q, want a 400 with a message", what, e.Status, e.Msg)
	}
}

// FuzzDecodeJSON feeds arbitrary bytes to every request body parser (the
// schema, the decoding into the handler's type, and what the handler makes
// of it before calling the ledger): none may panic, and each must accept
// the body or refuse it with a 400 whose message encodes as JSON. The
// first input picks the parser (bodyTargets, by index).
func FuzzDecodeJSON(f *testing.F) {
	targets := bodyTargets()
	f.Add(uint8(0), []byte(`{"name": "cn1", "uuid": "8b9b3c4e-3a8b-4d6e-9f3b-1c2d3e4f5a6b"}`))
	f.Add(uint8(4), []byte(`{"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 0}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		target := targets[int(which)%len(targets)]
		err := target.parse(body)
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
	cq := CandidateQuery{Max: engine.DefaultMaxCandidates}
	f.Fuzz(func(t *testing.T, rawQuery, versionHeader string, minor uint8) {
		_, _, err := wire.ParseVersionHeader(versionHeader)
		checkBadRequest(t, "version header", err)
		// The version the other parsers run at.
		v := wire.Version{Major: 1, Minor: int(minor) % (wire.MaxVersion.Minor + 1)}
		ctx := func() echo.Context {
			c := newQueryContext(rawQuery)
			wire.SetVersion(c, v)
			return c
		}

		filter, err := traitListFilter(ctx())
		checkBadRequest(t, "GET /traits", err)
		if err == nil && filter.Associated != nil {
			if a, _ := wire.QueryLast(ctx(), "associated"); !strings.EqualFold(a, "true") && !strings.EqualFold(a, "false") {
				t.Fatalf("associated=%q accepted", a)
			}
		}

		_, err = providerListFilter(ctx())
		checkBadRequest(t, "GET /resource_providers", err)

		if v.AtLeast(10) {
			err := wire.ValidateQuery(ctx(), CandidatesSchema(v))
			checkBadRequest(t, "GET /allocation_candidates schema", err)
			if err == nil {
				p, err := cq.FromQuery(ParseOrderedQuery(rawQuery), v)
				checkBadRequest(t, "GET /allocation_candidates", err)
				if err == nil {
					for _, g := range p.Groups {
						for _, r := range g.Resources {
							if r.Amount < 1 {
								t.Fatalf("resource %s amount %d accepted", r.Class, r.Amount)
							}
						}
					}
					if p.Limit < 0 {
						t.Fatalf("limit %d accepted", p.Limit)
					}
				}
			}
		}

		for _, schema := range []*jsonschema.Schema{usagesQuerySchemaV1_9, usagesQuerySchemaV1_38} {
			checkBadRequest(t, "GET /usages", wire.ValidateQuery(ctx(), schema))
		}
	})
}
