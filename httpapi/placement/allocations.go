package placement

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// Allocations serves the consumers' allocations, and reshapes.
type Allocations struct {
	Store  AllocationStore
	Bodies *wire.Bodies
	// Limits, when not nil, are what the Placement API's allocation
	// writes are checked against (--limits-enforce placement-api), by
	// the projects of their consumers; nil checks none (Nova does its
	// own accounting). Claims are checked by the claims package.
	Limits QuotaSource
}

// AllocationStore is what the allocation routes ask of the ledger (a
// *resources.Allocations).
type AllocationStore interface {
	AllocationsByConsumer(ctx context.Context, consumerUUID string) (resources.ConsumerAllocationList, error)
	AllocationsByProvider(ctx context.Context, providerUUID string) (int64, []resources.AllocationRecord, error)
	AllocationsReplaceChecked(ctx context.Context, consumers []resources.ConsumerAllocations, q *quotas.Quota) error
	AllocationsDelete(ctx context.Context, consumerUUID string) error
	Reshape(ctx context.Context, p resources.ReshapeParams) error
}

// QuotaSource gives the limits a write adding to projects is checked
// against (a quota.Source).
type QuotaSource interface {
	Quota(ctx context.Context, projects ...string) (*quotas.Quota, error)
}

// providerResourcesBody is what a consumer holds on one provider:
// resource class -> amount, in the client's order; a generation sent
// along (as GET renders it) is ignored.
type providerResourcesBody struct {
	Resources wire.OrderedMap[int64] `json:"resources"`
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
func (b consumerBody) toLedger(consumerUUID string, v wire.Version) (resources.ConsumerAllocations, error) {
	w := resources.ConsumerAllocations{
		ConsumerUUID:    consumerUUID,
		ProjectID:       b.ProjectID,
		UserID:          b.UserID,
		CheckGeneration: v.AtLeast(28),
		Generation:      b.ConsumerGeneration,
	}
	if v.AtLeast(38) {
		w.ConsumerType = b.ConsumerType
	}
	var byProvider wire.OrderedMap[providerResourcesBody]
	if v.AtLeast(12) {
		if err := json.Unmarshal(b.Allocations, &byProvider); err != nil {
			return w, wire.DecodeError(err)
		}
	} else {
		// The list form; a provider listed twice keeps its last resources.
		var list []struct {
			ResourceProvider struct {
				UUID string `json:"uuid"`
			} `json:"resource_provider"`
			Resources wire.OrderedMap[int64] `json:"resources"`
		}
		if err := json.Unmarshal(b.Allocations, &list); err != nil {
			return w, wire.DecodeError(err)
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

// Get serves GET /allocations/{consumer_uuid}.
func (h *Allocations) Get(c echo.Context) error {
	v := wire.VersionOf(c)
	list, err := h.Store.AllocationsByConsumer(c.Request().Context(), c.Param("consumer_uuid"))
	if err != nil {
		return err
	}
	// Providers, and classes within each, in the order they were written,
	// as Placement lists them.
	allocs := wire.NewObject()
	for _, a := range list.Allocations {
		rp, ok := allocs.Get(a.ProviderUUID)
		if !ok {
			rp = map[string]any{"generation": a.ProviderGeneration, "resources": wire.NewObject()}
			allocs.Set(a.ProviderUUID, rp)
		}
		rp.(map[string]any)["resources"].(*wire.Object).Set(a.ResourceClass, a.Used)
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
	wire.SetCacheHeaders(c, resources.LastModified(list.Allocations))
	return wire.WriteJSON(c, http.StatusOK, out)
}

// ByProvider serves GET /resource_providers/{uuid}/allocations.
func (h *Allocations) ByProvider(c echo.Context) error {
	v := wire.VersionOf(c)
	gen, list, err := h.Store.AllocationsByProvider(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return wire.CaughtNotFound(err, "Resource provider '%s' not found: %s", c.Param("uuid"))
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
	wire.SetCacheHeaders(c, resources.LastModified(list))
	return wire.WriteJSON(c, http.StatusOK, map[string]any{
		"resource_provider_generation": gen,
		"allocations":                  allocs,
	})
}

// Put serves PUT /allocations/{consumer_uuid}.
func (h *Allocations) Put(c echo.Context) error {
	raw := c.Param("consumer_uuid")
	id, ok := uuid.Canonical(raw)
	if !ok {
		return wire.BadRequest("Malformed consumer_uuid: %s", raw)
	}
	v := wire.VersionOf(c)
	var body consumerBody
	if err := h.Bodies.Decode(c, putAllocationsSchema(v), &body); err != nil {
		return err
	}
	w, err := body.toLedger(id, v)
	if err != nil {
		return err
	}
	ws := []resources.ConsumerAllocations{w}
	q, err := h.quota(c, ws)
	if err != nil {
		return err
	}
	if err := h.Store.AllocationsReplaceChecked(c.Request().Context(), ws, q); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// Post serves POST /allocations (1.13 on): several consumers'
// allocations in one transaction; an empty allocations object removes a
// consumer's.
func (h *Allocations) Post(c echo.Context) error {
	v := wire.VersionOf(c)
	var body wire.OrderedMap[consumerBody]
	if err := h.Bodies.Decode(c, postAllocationsSchema(v), &body); err != nil {
		return err
	}
	ws, err := consumerWrites(body, v)
	if err != nil {
		return err
	}
	q, err := h.quota(c, ws)
	if err != nil {
		return err
	}
	if err := h.Store.AllocationsReplaceChecked(c.Request().Context(), ws, q); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// consumerWrites turns a dict of consumers (POST /allocations, reshaper)
// into ledger writes, in the client's order.
func consumerWrites(body wire.OrderedMap[consumerBody], v wire.Version) ([]resources.ConsumerAllocations, error) {
	ws := make([]resources.ConsumerAllocations, 0, len(body.Keys))
	for _, consumer := range body.Keys {
		w, err := body.Values[consumer].toLedger(consumer, v)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// Delete serves DELETE /allocations/{consumer_uuid}.
func (h *Allocations) Delete(c echo.Context) error {
	if err := h.Store.AllocationsDelete(c.Request().Context(), c.Param("consumer_uuid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// quota is what a Placement API write of ws is checked against: the
// limits of its consumers' projects when h.Limits is set, else nothing.
func (h *Allocations) quota(c echo.Context, ws []resources.ConsumerAllocations) (*quotas.Quota, error) {
	if h.Limits == nil {
		return nil, nil
	}
	projects := make([]string, 0, len(ws))
	for _, w := range ws {
		p := w.ProjectID
		if p == "" {
			p = resources.IncompleteConsumerID
		}
		projects = append(projects, p)
	}
	return h.Limits.Quota(c.Request().Context(), projects...)
}
