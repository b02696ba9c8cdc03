package client

import (
	"context"
	"net/http"
	"net/url"
)

// Berth's own routes but claims (claims.go) and the operator's
// (admin.go): capacity and evacuation.

// CapacityRoot is one root provider of a capacity answer.
type CapacityRoot struct {
	RootProviderUUID string   `json:"root_provider_uuid"`
	Name             string   `json:"name"`
	Fits             int64    `json:"fits"`
	Capped           bool     `json:"capped"`
	Limiting         []string `json:"limiting"`
}

// Capacity is GET /capacity's answer: how many more instances of one
// request fit, in all and per root (docs/capacity.md).
type Capacity struct {
	Total      int64          `json:"total"`
	Capped     bool           `json:"capped"`
	Truncated  bool           `json:"truncated"`
	Roots      []CapacityRoot `json:"roots"`
	Aggregates []struct {
		UUID string `json:"uuid"`
		Fits int64  `json:"fits"`
	} `json:"aggregates"`
	OverCapacity []struct {
		ResourceProviderUUID string  `json:"resource_provider_uuid"`
		ResourceClass        string  `json:"resource_class"`
		Used                 int64   `json:"used"`
		Capacity             float64 `json:"capacity"`
	} `json:"over_capacity"`
}

// Capacity sends GET /capacity with query (the request as GET
// /allocation_candidates takes it: resources, required, member_of,
// granular groups; and max).
func (c *Client) Capacity(ctx context.Context, query url.Values) (*Capacity, error) {
	var out Capacity
	if _, err := c.JSON(ctx, http.MethodGet, withQuery("/capacity", query), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EvacuateRequest is the body of POST /resource_providers/{uuid}/evacuate.
type EvacuateRequest struct {
	DryRun   bool   `json:"dry_run,omitempty"`
	Confirm  bool   `json:"confirm,omitempty"`
	Parallel int    `json:"parallel,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	After    string `json:"after,omitempty"`
	Policy   string `json:"policy,omitempty"`
	Mode     string `json:"mode,omitempty"`
}

// Evacuation is the answer of POST .../evacuate, and (its mark alone) of
// POST .../restore.
type Evacuation struct {
	ResourceProviderUUID string              `json:"resource_provider_uuid"`
	Name                 string              `json:"name"`
	Evacuated            bool                `json:"evacuated"`
	EvacuatedAt          *string             `json:"evacuated_at"`
	DryRun               bool                `json:"dry_run"`
	Consumers            []EvacuatedConsumer `json:"consumers"`
	Moved                int                 `json:"moved"`
	Planned              int                 `json:"planned"`
	Failed               int                 `json:"failed"`
	Skipped              int                 `json:"skipped"`
	Remaining            int                 `json:"remaining"`
	Pending              int                 `json:"pending"`
	Next                 *string             `json:"next"`
}

// EvacuatedConsumer is what an evacuation did with one consumer.
type EvacuatedConsumer struct {
	ConsumerUUID string `json:"consumer_uuid"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	Destination  *struct {
		UUID string `json:"uuid"`
		Name string `json:"name"`
	} `json:"destination"`
	MigrationUUID *string `json:"migration_uuid"`
	Confirmed     bool    `json:"confirmed"`
	Reason        *string `json:"reason"`
	Detail        *string `json:"detail"`
}

// Evacuate sends POST /resource_providers/{uuid}/evacuate: mark the host
// evacuated and move a page of its consumers away.
func (c *Client) Evacuate(ctx context.Context, provider string, req EvacuateRequest) (*Evacuation, error) {
	var out Evacuation
	if _, err := c.JSON(ctx, http.MethodPost, "/resource_providers/"+url.PathEscape(provider)+"/evacuate", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Restore sends POST /resource_providers/{uuid}/restore: the host takes
// claims again.
func (c *Client) Restore(ctx context.Context, provider string) (*Evacuation, error) {
	var out Evacuation
	if _, err := c.JSON(ctx, http.MethodPost, "/resource_providers/"+url.PathEscape(provider)+"/restore", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// withQuery is path with q encoded, when not empty.
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
