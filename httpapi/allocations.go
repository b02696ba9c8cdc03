package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
)

// resourcesBody is resource class -> amount, in the client's order.
type resourcesBody = orderedMap[int64]

// providerResourcesBody is what a consumer holds on one provider; a
// generation sent along (as GET renders it) is ignored.
type providerResourcesBody struct {
	Resources resourcesBody `json:"resources"`
}

// consumerBody is one consumer's allocations as sent by a client, in the
// list form (before 1.12) or the dict form.
type consumerBody struct {
	// Allocations is decoded according to the microversion.
	Allocations        json.RawMessage `json:"allocations"`
	ProjectID          string          `json:"project_id"`
	UserID             string          `json:"user_id"`
	ConsumerGeneration *int64          `json:"consumer_generation"`
	ConsumerType       string          `json:"consumer_type"`
	// Mappings (1.34) are accepted and ignored, as in Placement.
}

// toLedger turns the body into a write for consumerUUID at microversion v.
func (b consumerBody) toLedger(consumerUUID string, v Version) (ledger.ConsumerAllocations, error) {
	w := ledger.ConsumerAllocations{
		ConsumerUUID:    consumerUUID,
		ProjectID:       b.ProjectID,
		UserID:          b.UserID,
		CheckGeneration: v.AtLeast(28),
		Generation:      b.ConsumerGeneration,
	}
	if v.AtLeast(38) {
		w.ConsumerType = b.ConsumerType
	}
	var byProvider orderedMap[providerResourcesBody]
	if v.AtLeast(12) {
		if err := json.Unmarshal(b.Allocations, &byProvider); err != nil {
			return w, decodeError(err)
		}
	} else {
		// The list form; a provider listed twice keeps its last resources.
		var list []struct {
			ResourceProvider struct {
				UUID string `json:"uuid"`
			} `json:"resource_provider"`
			Resources resourcesBody `json:"resources"`
		}
		if err := json.Unmarshal(b.Allocations, &list); err != nil {
			return w, decodeError(err)
		}
		byProvider.Values = map[string]providerResourcesBody{}
		for _, a := range list {
			rp := a.ResourceProvider.UUID
			if _, seen := byProvider.Values[rp]; !seen {
				byProvider.Keys = append(byProvider.Keys, rp)
			}
			byProvider.Values[rp] = providerResourcesBody{a.Resources}
		}
	}
	for _, rp := range byProvider.Keys {
		res := byProvider.Values[rp].Resources
		pr := engine.Allocation{ProviderUUID: rp}
		for _, class := range res.Keys {
			pr.Resources = append(pr.Resources, engine.ResourceAmount{Class: class, Amount: res.Values[class]})
		}
		w.Allocations = append(w.Allocations, pr)
	}
	return w, nil
}

// GET /allocations/{consumer_uuid}
func (s *Server) allocationsGet(c echo.Context) error {
	v := version(c)
	list, err := s.store.AllocationsByConsumer(c.Request().Context(), c.Param("consumer_uuid"))
	if err != nil {
		return err
	}
	// Providers, and classes within each, in the order they were written,
	// as Placement lists them.
	allocs := newJSONObject()
	for _, a := range list.Allocations {
		rp, ok := allocs.get(a.ProviderUUID)
		if !ok {
			rp = map[string]any{"generation": a.ProviderGeneration, "resources": newJSONObject()}
			allocs.set(a.ProviderUUID, rp)
		}
		rp.(map[string]any)["resources"].(*jsonObject).set(a.ResourceClass, a.Used)
	}
	out := map[string]any{"allocations": allocs}
	if len(list.Allocations) > 0 && v.AtLeast(12) {
		out["project_id"] = list.Consumer.ProjectID
		out["user_id"] = list.Consumer.UserID
		if v.AtLeast(28) {
			out["consumer_generation"] = list.Consumer.Generation
		}
		if v.AtLeast(38) {
			out["consumer_type"] = list.Consumer.Type
		}
	}
	setCacheHeaders(c, ledger.LastModified(list.Allocations))
	return writeJSON(c, http.StatusOK, out)
}

// GET /resource_providers/{uuid}/allocations
func (s *Server) providerAllocationsGet(c echo.Context) error {
	v := version(c)
	gen, list, err := s.store.AllocationsByProvider(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return caughtNotFound(err, "Resource provider '%s' not found: %s", c.Param("uuid"))
	}
	allocs := map[string]map[string]any{}
	for _, a := range list {
		cons, ok := allocs[a.ConsumerUUID]
		if !ok {
			cons = map[string]any{"resources": map[string]int64{}}
			if v.AtLeast(28) {
				cons["consumer_generation"] = a.ConsumerGeneration
			}
			allocs[a.ConsumerUUID] = cons
		}
		cons["resources"].(map[string]int64)[a.ResourceClass] = a.Used
	}
	setCacheHeaders(c, ledger.LastModified(list))
	return writeJSON(c, http.StatusOK, map[string]any{
		"resource_provider_generation": gen,
		"allocations":                  allocs,
	})
}

// PUT /allocations/{consumer_uuid}
func (s *Server) allocationsPut(c echo.Context) error {
	raw := c.Param("consumer_uuid")
	id, ok := uuid.Canonical(raw)
	if !ok {
		return badRequest("Malformed consumer_uuid: %s", raw)
	}
	v := version(c)
	var body consumerBody
	if err := s.decodeBody(c, putAllocationsSchema(v), &body); err != nil {
		return err
	}
	w, err := body.toLedger(id, v)
	if err != nil {
		return err
	}
	if err := s.store.AllocationsReplace(c.Request().Context(), []ledger.ConsumerAllocations{w}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// POST /allocations (1.13 on): several consumers' allocations in one
// transaction; an empty allocations object removes a consumer's.
func (s *Server) allocationsPost(c echo.Context) error {
	v := version(c)
	var body orderedMap[consumerBody]
	if err := s.decodeBody(c, postAllocationsSchema(v), &body); err != nil {
		return err
	}
	ws, err := consumerWrites(body, v)
	if err != nil {
		return err
	}
	if err := s.store.AllocationsReplace(c.Request().Context(), ws); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// consumerWrites turns a dict of consumers (POST /allocations, reshaper)
// into ledger writes, in the client's order.
func consumerWrites(body orderedMap[consumerBody], v Version) ([]ledger.ConsumerAllocations, error) {
	ws := make([]ledger.ConsumerAllocations, 0, len(body.Keys))
	for _, consumer := range body.Keys {
		w, err := body.Values[consumer].toLedger(consumer, v)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// DELETE /allocations/{consumer_uuid}
func (s *Server) allocationsDelete(c echo.Context) error {
	if err := s.store.AllocationsDelete(c.Request().Context(), c.Param("consumer_uuid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
