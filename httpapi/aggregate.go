package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

// aggregatesGenerationVersion (1.19) is the microversion from which
// aggregate bodies carry the provider generation, and a PUT checks and
// increments it.
const aggregatesGenerationVersion = 19

// Placement's PUT /resource_providers/{uuid}/aggregates schemas: a bare
// list of uuids before microversion 1.19, an object with the provider
// generation from 1.19 on.
var (
	aggregatesSchemaV1_1 = jsonschema.Must(`{
		"type": "array",
		"items": {"type": "string", "format": "uuid"},
		"uniqueItems": true
	}`)
	aggregatesSchemaV1_19 = jsonschema.Must(`{
		"type": "object",
		"properties": {
			"aggregates": {
				"type": "array",
				"items": {"type": "string", "format": "uuid"},
				"uniqueItems": true
			},
			"resource_provider_generation": {"type": "integer"}
		},
		"required": ["aggregates", "resource_provider_generation"],
		"additionalProperties": false
	}`)
)

// aggregatesJSON writes a provider's aggregates. Placement records no time
// for aggregate associations, so Last-Modified is now.
// (The answer is written by hand: appendAggregates.)
func aggregatesJSON(c echo.Context, generation int64, aggregates []string) error {
	withGeneration := version(c).AtLeast(aggregatesGenerationVersion)
	setCacheHeaders(c, time.Now())
	_, err := writeJSONFast(c, http.StatusOK, func(b []byte) ([]byte, bool) {
		return appendAggregates(b, generation, aggregates, withGeneration), true
	})
	return err
}

// providerAggregatesShow serves GET /resource_providers/{uuid}/aggregates.
func (s *Server) providerAggregatesShow(c echo.Context) error {
	gen, aggs, err := s.store.ProviderAggregates(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	return aggregatesJSON(c, gen, aggs)
}

// providerAggregatesReplace serves PUT /resource_providers/{uuid}/aggregates.
// As in Placement, a missing provider is reported before a bad body
// (providerFirst: the write reports it for a good one), and the answer
// echoes the aggregates as the request gave them.
func (s *Server) providerAggregatesReplace(c echo.Context) error {
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rpUUID := c.Param("uuid")
	var aggs []string
	var params ledger.AggregatesReplaceParams
	if version(c).AtLeast(aggregatesGenerationVersion) {
		// Not a named type: json.Unmarshal's messages name the struct.
		var body struct {
			Aggregates []string `json:"aggregates"`
			Generation int64    `json:"resource_provider_generation"`
		}
		fromDoc := func(doc any, _ []byte) bool {
			return docListAndGeneration(doc, "aggregates", &body.Aggregates, &body.Generation)
		}
		if err := decodeJSONDoc(raw, aggregatesSchemaV1_19, &body, fromDoc); err != nil {
			return s.providerFirst(c, err)
		}
		aggs, params.Generation = body.Aggregates, &body.Generation
	} else if err := decodeJSONDoc(raw, aggregatesSchemaV1_1, &aggs, func(doc any, _ []byte) bool {
		list, ok := docStrings(doc)
		if ok {
			aggs = list
		}
		return ok
	}); err != nil {
		return s.providerFirst(c, err)
	}
	if aggs == nil {
		aggs = []string{}
	}
	gen, err := s.store.ProviderAggregatesReplace(ctx, rpUUID, aggs, params)
	if err != nil {
		return err
	}
	return aggregatesJSON(c, gen, aggs)
}
