package placement

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/resources"
)

// Aggregates serves a provider's aggregates.
type Aggregates struct {
	Store  AggregateStore
	Bodies *wire.Bodies
}

// AggregateStore is what the aggregate routes ask of the ledger (a
// *resources.Providers).
type AggregateStore interface {
	providerGetter
	ProviderAggregates(ctx context.Context, rpUUID string) (generation int64, aggregates []string, err error)
	ProviderAggregatesReplace(ctx context.Context, rpUUID string, aggregates []string, params resources.AggregatesReplaceParams) (int64, error)
}

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
	withGeneration := wire.VersionOf(c).AtLeast(aggregatesGenerationVersion)
	wire.SetCacheHeaders(c, time.Now())
	_, err := wire.WriteAppended(c, http.StatusOK, func(b []byte) ([]byte, bool) {
		return appendAggregates(b, generation, aggregates, withGeneration), true
	})
	return err
}

// Show serves GET /resource_providers/{uuid}/aggregates.
func (h *Aggregates) Show(c echo.Context) error {
	gen, aggs, err := h.Store.ProviderAggregates(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	return aggregatesJSON(c, gen, aggs)
}

// Replace serves PUT /resource_providers/{uuid}/aggregates.
// As in Placement, a missing provider is reported before a bad body
// (providerFirst: the write reports it for a good one), and the answer
// echoes the aggregates as the request gave them.
func (h *Aggregates) Replace(c echo.Context) error {
	raw, err := h.Bodies.Read(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rpUUID := c.Param("uuid")
	var aggs []string
	var params resources.AggregatesReplaceParams
	if wire.VersionOf(c).AtLeast(aggregatesGenerationVersion) {
		// Not a named type: json.Unmarshal's messages name the struct.
		var body struct {
			Aggregates []string `json:"aggregates"`
			Generation int64    `json:"resource_provider_generation"`
		}
		fromDoc := func(doc any, _ []byte) bool {
			return wire.DocListAndGeneration(doc, "aggregates", &body.Aggregates, &body.Generation)
		}
		if err := wire.DecodeJSONDoc(raw, aggregatesSchemaV1_19, &body, fromDoc); err != nil {
			return providerFirst(c, h.Store, err)
		}
		aggs, params.Generation = body.Aggregates, &body.Generation
	} else if err := wire.DecodeJSONDoc(raw, aggregatesSchemaV1_1, &aggs, func(doc any, _ []byte) bool {
		list, ok := wire.DocStrings(doc)
		if ok {
			aggs = list
		}
		return ok
	}); err != nil {
		return providerFirst(c, h.Store, err)
	}
	if aggs == nil {
		aggs = []string{}
	}
	gen, err := h.Store.ProviderAggregatesReplace(ctx, rpUUID, aggs, params)
	if err != nil {
		return err
	}
	return aggregatesJSON(c, gen, aggs)
}

// appendAggregates appends aggregatesJSON's answer (withGeneration from
// microversion 1.19).
func appendAggregates(b []byte, generation int64, aggregates []string, withGeneration bool) []byte {
	b = append(b, `{"aggregates":`...)
	b = wire.AppendStrings(b, aggregates)
	if withGeneration {
		b = append(b, `,"resource_provider_generation":`...)
		b = strconv.AppendInt(b, generation, 10)
	}
	return append(b, '}')
}
