package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// The Placement calls a scheduler makes: resource providers and their
// inventories, allocation candidates, allocations, usages. Each is sent
// at Config.Microversion; the shapes are those of the latest
// microversion (Placement's API reference).

// Provider is a resource provider.
type Provider struct {
	UUID               string  `json:"uuid"`
	Name               string  `json:"name"`
	Generation         int64   `json:"generation"`
	ParentProviderUUID *string `json:"parent_provider_uuid"`
	RootProviderUUID   string  `json:"root_provider_uuid"`
}

// Providers sends GET /resource_providers with query (name, uuid,
// member_of, resources, in_tree, required; nil: every provider).
func (c *Client) Providers(ctx context.Context, query url.Values) ([]Provider, error) {
	var out struct {
		Providers []Provider `json:"resource_providers"`
	}
	if _, err := c.JSON(ctx, http.MethodGet, withQuery("/resource_providers", query), nil, &out); err != nil {
		return nil, err
	}
	return out.Providers, nil
}

// Provider sends GET /resource_providers/{uuid}.
func (c *Client) Provider(ctx context.Context, uuid string) (*Provider, error) {
	var out Provider
	if _, err := c.JSON(ctx, http.MethodGet, "/resource_providers/"+url.PathEscape(uuid), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateProvider sends POST /resource_providers: uuid may be "" (the
// server picks one) and parent "" (a root). It answers the provider.
func (c *Client) CreateProvider(ctx context.Context, name, uuid, parent string) (*Provider, error) {
	body := map[string]string{"name": name}
	if uuid != "" {
		body["uuid"] = uuid
	}
	if parent != "" {
		body["parent_provider_uuid"] = parent
	}
	var out Provider
	if _, err := c.JSON(ctx, http.MethodPost, "/resource_providers", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteProvider sends DELETE /resource_providers/{uuid}.
func (c *Client) DeleteProvider(ctx context.Context, uuid string) error {
	_, err := c.JSON(ctx, http.MethodDelete, "/resource_providers/"+url.PathEscape(uuid), nil, nil)
	return err
}

// Inventory is a provider's inventory of one resource class.
type Inventory struct {
	Total           int64   `json:"total"`
	Reserved        int64   `json:"reserved"`
	MinUnit         int64   `json:"min_unit"`
	MaxUnit         int64   `json:"max_unit"`
	StepSize        int64   `json:"step_size"`
	AllocationRatio float64 `json:"allocation_ratio"`
}

// Inventories is a provider's inventories and its generation.
type Inventories struct {
	ResourceProviderGeneration int64                `json:"resource_provider_generation"`
	Inventories                map[string]Inventory `json:"inventories"`
}

// Inventories sends GET /resource_providers/{uuid}/inventories.
func (c *Client) Inventories(ctx context.Context, provider string) (*Inventories, error) {
	var out Inventories
	if _, err := c.JSON(ctx, http.MethodGet, "/resource_providers/"+url.PathEscape(provider)+"/inventories", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetInventories sends PUT /resource_providers/{uuid}/inventories: the
// provider's whole inventory, at its generation inv.ResourceProviderGeneration
// (409 placement.concurrent_update when it changed). An inventory's zero
// min_unit, max_unit, step_size and allocation_ratio are the server's
// defaults (1, the total, 1, 1.0). It answers the inventories stored.
func (c *Client) SetInventories(ctx context.Context, provider string, inv Inventories) (*Inventories, error) {
	body := map[string]any{"resource_provider_generation": inv.ResourceProviderGeneration}
	invs := map[string]map[string]any{}
	for class, i := range inv.Inventories {
		m := map[string]any{"total": i.Total, "reserved": i.Reserved}
		for k, v := range map[string]int64{"min_unit": i.MinUnit, "max_unit": i.MaxUnit, "step_size": i.StepSize} {
			if v != 0 {
				m[k] = v
			}
		}
		if i.AllocationRatio != 0 {
			m["allocation_ratio"] = i.AllocationRatio
		}
		invs[class] = m
	}
	body["inventories"] = invs
	var out Inventories
	if _, err := c.JSON(ctx, http.MethodPut, "/resource_providers/"+url.PathEscape(provider)+"/inventories", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Allocations is a consumer's allocations (GET /allocations/{consumer}),
// and the body of PUT /allocations/{consumer}.
type Allocations struct {
	Allocations        map[string]Resources `json:"allocations"`
	ProjectID          string               `json:"project_id,omitempty"`
	UserID             string               `json:"user_id,omitempty"`
	ConsumerGeneration *int64               `json:"consumer_generation"`
	ConsumerType       string               `json:"consumer_type,omitempty"`
}

// Allocations sends GET /allocations/{consumer}: empty allocations for
// a consumer that holds none.
func (c *Client) Allocations(ctx context.Context, consumer string) (*Allocations, error) {
	var out Allocations
	if _, err := c.JSON(ctx, http.MethodGet, "/allocations/"+url.PathEscape(consumer), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutAllocations sends PUT /allocations/{consumer}: replace what the
// consumer holds, at a.ConsumerGeneration (nil: a new consumer); 409
// placement.concurrent_update when it changed, or placement.* codes when
// it does not fit. A response body the server sends is ignored (204).
func (c *Client) PutAllocations(ctx context.Context, consumer string, a Allocations) error {
	_, err := c.JSON(ctx, http.MethodPut, "/allocations/"+url.PathEscape(consumer), a, nil)
	return err
}

// DeleteAllocations sends DELETE /allocations/{consumer}: release
// everything it holds.
func (c *Client) DeleteAllocations(ctx context.Context, consumer string) error {
	_, err := c.JSON(ctx, http.MethodDelete, "/allocations/"+url.PathEscape(consumer), nil, nil)
	return err
}

// AllocationRequest is one candidate of GET /allocation_candidates.
type AllocationRequest struct {
	Allocations map[string]Resources `json:"allocations"`
	Mappings    map[string][]string  `json:"mappings"`
}

// Candidates is GET /allocation_candidates' answer.
type Candidates struct {
	AllocationRequests []AllocationRequest `json:"allocation_requests"`
	// ProviderSummaries is provider uuid -> its resources' capacity and
	// usage, traits, parent and root, as Placement writes them.
	ProviderSummaries map[string]json.RawMessage `json:"provider_summaries"`
}

// AllocationCandidates sends GET /allocation_candidates with query
// (resources, required, member_of, in_tree, granular groups, limit,
// group_policy...).
func (c *Client) AllocationCandidates(ctx context.Context, query url.Values) (*Candidates, error) {
	var out Candidates
	if _, err := c.JSON(ctx, http.MethodGet, withQuery("/allocation_candidates", query), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ProviderUsages sends GET /resource_providers/{uuid}/usages: class ->
// amount allocated.
func (c *Client) ProviderUsages(ctx context.Context, provider string) (map[string]int64, error) {
	var out struct {
		Usages map[string]int64 `json:"usages"`
	}
	if _, err := c.JSON(ctx, http.MethodGet, "/resource_providers/"+url.PathEscape(provider)+"/usages", nil, &out); err != nil {
		return nil, err
	}
	return out.Usages, nil
}

// ProjectUsages sends GET /usages?project_id=...: class -> amount the
// project's consumers hold (user "" for all its users). From 1.38 the
// server answers by consumer type: the totals over the types are
// returned.
func (c *Client) ProjectUsages(ctx context.Context, project, user string) (map[string]int64, error) {
	q := url.Values{"project_id": {project}}
	if user != "" {
		q.Set("user_id", user)
	}
	var out struct {
		Usages json.RawMessage `json:"usages"`
	}
	if _, err := c.JSON(ctx, http.MethodGet, withQuery("/usages", q), nil, &out); err != nil {
		return nil, err
	}
	var flat map[string]int64
	if json.Unmarshal(out.Usages, &flat) == nil {
		return flat, nil
	}
	var byType map[string]map[string]int64
	if err := json.Unmarshal(out.Usages, &byType); err != nil {
		return nil, err
	}
	all := map[string]int64{}
	for _, u := range byType {
		for class, n := range u {
			if class != "consumer_count" {
				all[class] += n
			}
		}
	}
	return all, nil
}
