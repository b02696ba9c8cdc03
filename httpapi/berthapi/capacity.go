package berthapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// Berth's capacity extension: how many more instances of one request fit,
// and on which root providers. The route exists at every microversion
// (Placement has no equivalent); error bodies carry a "code" from 1.23 on,
// as for every route.

// Capacity serves GET /capacity.
type Capacity struct {
	Store CapacityStore
	// Providers names the classes over capacity (a *resources.Providers).
	Providers OverCapacityStore
	// Query holds the settings of every candidate search.
	Query placement.CandidateQuery
}

// CapacityStore counts what fits in the ledger's snapshot (a
// *snapshot.Cache).
type CapacityStore interface {
	Capacity(ctx context.Context, p engine.CapacityParams) (*engine.Capacity, error)
}

// OverCapacityStore lists the providers' classes with more allocated than
// their capacity (a *resources.Providers).
type OverCapacityStore interface {
	OverCapacity(ctx context.Context) ([]resources.OverCapacity, error)
}

// capacityQueryVersion is the microversion whose GET
// /allocation_candidates rules the query of GET /capacity follows: always
// the latest, whatever the request negotiated.
var capacityQueryVersion = wire.MaxVersion

// maxCapacityPerRoot bounds the "max" parameter.
const maxCapacityPerRoot = 100_000

// capacityMaxSchema describes "max" for the API's description
// (QuerySchemas); Params checks it in code, to refuse it in its own words.
var capacityMaxSchema = jsonschema.Must(`{"type": "object", "properties": {
	"max": {"type": "string", "pattern": "^[1-9][0-9]*$",
		"description": "the cap on the count per root, 1 to ` + fmt.Sprint(maxCapacityPerRoot) + `"}}}`)

// Show serves GET /capacity. The query is GET
// /allocation_candidates' (read at capacityQueryVersion) plus "max", the
// cap on the count per root (default engine.DefaultCapacityMaxPerRoot);
// "limit" caps the roots listed, not the count.
func (h *Capacity) Show(c echo.Context) error {
	p, limit, err := h.Params(c.QueryParams(), c.Request().URL.RawQuery)
	if err != nil {
		return err
	}
	capa, err := h.Store.Capacity(c.Request().Context(), p)
	if err != nil {
		return placement.CandidatesError(err)
	}
	roots := capa.Roots
	if limit > 0 && len(roots) > limit {
		roots = roots[:limit]
	}
	list := make([]any, len(roots))
	for i, r := range roots {
		limiting := r.Limiting
		if limiting == nil {
			limiting = []string{}
		}
		list[i] = map[string]any{
			"root_provider_uuid": r.UUID,
			"name":               r.Name,
			"fits":               r.Fits,
			"capped":             r.Capped,
			"limiting":           limiting,
		}
	}
	aggs := make([]any, len(capa.Aggregates))
	for i, a := range capa.Aggregates {
		aggs[i] = map[string]any{"uuid": a.UUID, "fits": a.Fits}
	}
	// Provider classes with more allocated than their capacity (an
	// inventory lowered below usage): nothing more of them fits there.
	overCap, err := h.Providers.OverCapacity(c.Request().Context())
	if err != nil {
		return err
	}
	over := make([]any, len(overCap))
	for i, o := range overCap {
		over[i] = map[string]any{"resource_provider_uuid": o.ProviderUUID, "resource_class": o.ResourceClass,
			"used": o.Used, "capacity": wire.PyFloat64(o.Capacity)}
	}
	return wire.WriteJSON(c, http.StatusOK, map[string]any{
		"total":         capa.Total,
		"capped":        capa.Capped,
		"truncated":     capa.Truncated,
		"roots":         list,
		"aggregates":    aggs,
		"over_capacity": over,
	})
}

// Params reads GET /capacity's query (q, and raw, the query as
// sent, whose order matters to request groups): the capacity question
// and the cap on the roots listed (0: none). The console's "where does it
// fit" form asks through it too.
func (h *Capacity) Params(q url.Values, raw string) (engine.CapacityParams, int, error) {
	doc := make(map[string]any, len(q))
	for k, vs := range q {
		if k != "max" {
			doc[k] = vs[len(vs)-1]
		}
	}
	p := engine.CapacityParams{}
	if err := placement.CandidatesSchema(capacityQueryVersion).Validate(doc); err != nil {
		return p, 0, wire.BadRequest("Invalid query string parameters: %s", err)
	}
	if vs := q["max"]; len(vs) > 0 {
		n, err := strconv.Atoi(strings.TrimSpace(vs[0]))
		if err != nil || n < 1 || n > maxCapacityPerRoot {
			return p, 0, wire.BadRequest("Invalid query string parameters: %q is not a valid max (an integer from 1 to %d)", vs[0], maxCapacityPerRoot)
		}
		p.MaxPerRoot = n
	}
	req, err := h.Query.FromQuery(placement.ParseOrderedQuery(raw), capacityQueryVersion)
	if err != nil {
		return p, 0, err
	}
	// What claims could place: an evacuated host takes none.
	req.AvoidEvacuated = true
	p.Request = req
	return p, req.Limit, nil
}
