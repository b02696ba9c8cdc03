package placement

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/resources"
)

// reshaperSchemaText is POST /reshaper, as Placement's
// placement/schemas/reshaper.py: inventories as PUT .../inventories for
// each provider, allocations as POST /allocations (possibly none).
func reshaperSchemaText(minor int) string {
	return `{
		"type": "object",
		"properties": {
			"inventories": {
				"type": "object",
				"patternProperties": {"` + uuidKeyPattern + `": ` + putInventoriesSchema + `},
				"minProperties": 1,
				"additionalProperties": false
			},
			"allocations": ` + postAllocationsSchemaText(minor, "0") + `
		},
		"required": ["inventories", "allocations"],
		"additionalProperties": false
	}`
}

var (
	reshaperSchemaV1_30 = jsonschema.Must(reshaperSchemaText(30))
	reshaperSchemaV1_34 = jsonschema.Must(reshaperSchemaText(34))
	reshaperSchemaV1_38 = jsonschema.Must(reshaperSchemaText(38))
)

type reshaperBody struct {
	Inventories wire.OrderedMap[inventoriesBody] `json:"inventories"`
	Allocations wire.OrderedMap[consumerBody]    `json:"allocations"`
}

// Reshape serves POST /reshaper (1.30 on): inventories and allocations
// changed in one transaction.
func (h *Allocations) Reshape(c echo.Context) error {
	v := wire.VersionOf(c)
	schema := reshaperSchemaV1_30
	switch {
	case v.AtLeast(38):
		schema = reshaperSchemaV1_38
	case v.AtLeast(34):
		schema = reshaperSchemaV1_34
	}
	var body reshaperBody
	if err := h.Bodies.Decode(c, schema, &body); err != nil {
		return err
	}
	var p resources.ReshapeParams
	for _, rp := range body.Inventories.Keys {
		ib := body.Inventories.Values[rp]
		p.Inventories = append(p.Inventories, resources.ProviderInventoryWrite{
			ProviderUUID: rp,
			Generation:   ib.Generation,
			Inventories:  ib.inventories(),
		})
	}
	ws, err := consumerWrites(body.Allocations, v)
	if err != nil {
		return err
	}
	p.Allocations = ws
	if p.Quota, err = h.quota(c, ws); err != nil {
		return err
	}
	if err := h.Store.Reshape(c.Request().Context(), p); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
