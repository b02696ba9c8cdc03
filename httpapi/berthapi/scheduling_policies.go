package berthapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
)

// Scheduling policies (Berth's extension): named sets of filters,
// weighers, a balancer and a scriptlet, stored in the ledger; one may be
// the default. Every replica sees a change within moments (catalog.Catalog).

// Policies serves the scheduling policies (this file), the units they
// may name (policy_units.go) and their balancer's suggestions
// (balance.go).
type Policies struct {
	Store   PolicyStore
	Catalog PolicyCatalog
	Cloud   Cloud
	Bodies  *wire.Bodies
}

// PolicyStore is what the policy routes read of the ledger (a
// *scheduling.Catalogue).
type PolicyStore interface {
	SchedulingPolicies(ctx context.Context) ([]scheduling.SchedulingPolicy, error)
	SchedulingPolicyGet(ctx context.Context, name string) (scheduling.SchedulingPolicy, error)
}

// PolicyCatalog is what the policy routes ask of the catalogue (a
// *catalog.Catalog), which checks a policy before it stores it.
type PolicyCatalog interface {
	PolicyPut(ctx context.Context, p catalog.PolicyPutParams) (_ scheduling.SchedulingPolicy, created bool, err error)
	PolicyDelete(ctx context.Context, name string) error
	PolicyConfig(ctx context.Context, name string) (scheduler.PolicyConfig, error)
	Registry() *scheduler.Registry
	StarlarkUnits(ctx context.Context) ([]scheduler.UnitInfo, error)
}

// Cloud is what the balancer reads of the cloud (a *cloud.View).
type Cloud interface {
	Members(ctx context.Context, aggregate string) ([]*scheduler.ProviderView, error)
	Instances(ctx context.Context, q scheduler.InstancesQuery) ([]scheduler.Instance, error)
}

// schedulingNamePattern is what names of policies and scriptlets may be:
// safe in a URL path and a log line.
const schedulingNamePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$`

func policySchemaText(nameRequired bool) string {
	required := ""
	if nameRequired {
		required = `"required": ["name"],`
	}
	return `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "pattern": "` + schedulingNamePattern + `"},
		"description": {"type": "string", "maxLength": 1000},
		"default": {"type": "boolean"},
		"filters": {"type": "array", "maxItems": 100, "items": {
			"type": "object",
			"properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255}, "params": {"type": ["object", "null"]}},
			"required": ["name"],
			"additionalProperties": false}},
		"weighers": {"type": "array", "maxItems": 100, "items": {
			"type": "object",
			"properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255}, "params": {"type": ["object", "null"]},
				"factor": {"type": "number"}},
			"required": ["name"],
			"additionalProperties": false}},
		"balancer": {"anyOf": [{"type": "null"}, {
			"type": "object",
			"properties": {"mode": {"enum": ["even", "power_saving"]}, "high": {"type": "number"}, "low": {"type": "number"}},
			"required": ["mode"],
			"additionalProperties": false}]},
		"scriptlet": {"anyOf": [{"type": "string", "pattern": "` + schedulingNamePattern + `"}, {"type": "null"}]}
	},
	` + required + `
	"additionalProperties": false
}`
}

var (
	policyPostSchema = jsonschema.Must(policySchemaText(true))
	policyPutSchema  = jsonschema.Must(policySchemaText(false))
)

// policyBody is a scheduling policy as the API shows and takes it.
type policyBody struct {
	Name        string                    `json:"name"`
	Description string                    `json:"description"`
	Default     bool                      `json:"default"`
	Filters     []scheduler.PluginConfig  `json:"filters"`
	Weighers    []scheduler.PluginConfig  `json:"weighers"`
	Balancer    *scheduler.BalancerConfig `json:"balancer"`
	Scriptlet   *string                   `json:"scriptlet"`
}

func (b *policyBody) spec() scheduler.PolicyConfig {
	spec := scheduler.PolicyConfig{Filters: b.Filters, Weighers: b.Weighers, Balancer: b.Balancer}
	if b.Scriptlet != nil {
		spec.Scriptlet = *b.Scriptlet
	}
	if spec.Filters == nil {
		spec.Filters = []scheduler.PluginConfig{}
	}
	if spec.Weighers == nil {
		spec.Weighers = []scheduler.PluginConfig{}
	}
	return spec
}

// policyJSON renders a stored policy.
func policyJSON(p scheduling.SchedulingPolicy) (map[string]any, error) {
	var spec scheduler.PolicyConfig
	if err := json.Unmarshal(p.Spec, &spec); err != nil {
		return nil, err
	}
	plugins := func(ps []scheduler.PluginConfig, weigher bool) []any {
		out := make([]any, len(ps))
		for i, pc := range ps {
			m := map[string]any{"name": pc.Name, "params": json.RawMessage(`{}`)}
			if len(pc.Params) > 0 && string(pc.Params) != "null" {
				m["params"] = pc.Params
			}
			if weigher {
				f := 1.0
				if pc.Factor != nil {
					f = *pc.Factor
				}
				m["factor"] = f
			}
			out[i] = m
		}
		return out
	}
	var balancer, scriptlet any
	if spec.Balancer != nil {
		balancer = spec.Balancer
	}
	if spec.Scriptlet != "" {
		scriptlet = spec.Scriptlet
	}
	return map[string]any{
		"name":        p.Name,
		"description": p.Description,
		"default":     p.Default,
		"filters":     plugins(spec.Filters, false),
		"weighers":    plugins(spec.Weighers, true),
		"balancer":    balancer,
		"scriptlet":   scriptlet,
		"generation":  p.Generation,
		"updated_at":  p.UpdatedAt.UTC().Format(time.RFC3339Nano),
	}, nil
}

// List serves GET /scheduling_policies.
func (h *Policies) List(c echo.Context) error {
	ps, err := h.Store.SchedulingPolicies(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		j, err := policyJSON(p)
		if err != nil {
			return err
		}
		out = append(out, j)
	}
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"scheduling_policies": out})
}

// Show serves GET /scheduling_policies/{name}.
func (h *Policies) Show(c echo.Context) error {
	p, err := h.Store.SchedulingPolicyGet(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	j, err := policyJSON(p)
	if err != nil {
		return err
	}
	wire.SetCacheHeaders(c, p.UpdatedAt)
	return wire.WriteJSON(c, http.StatusOK, j)
}

// Create serves POST /scheduling_policies: 201 with the policy; 409
// if the name is taken.
func (h *Policies) Create(c echo.Context) error {
	var b policyBody
	if err := h.Bodies.Decode(c, policyPostSchema, &b); err != nil {
		return err
	}
	return h.write(c, b, true)
}

// Put serves PUT /scheduling_policies/{name}: creates (201) or
// replaces (200) the policy. A name in the body must be the path's.
func (h *Policies) Put(c echo.Context) error {
	var b policyBody
	if err := h.Bodies.Decode(c, policyPutSchema, &b); err != nil {
		return err
	}
	name := c.Param("name")
	if b.Name != "" && b.Name != name {
		return wire.BadRequest("The policy's name %q differs from the name in the URL, %q.", b.Name, name)
	}
	if err := policyPutSchema.Validate(map[string]any{"name": name}); err != nil {
		return wire.BadRequest("Invalid scheduling policy name %q: %v", name, err)
	}
	b.Name = name
	return h.write(c, b, false)
}

// write stores b; the catalogue checks it first (every unit and
// parameter, the scriptlet).
func (h *Policies) write(c echo.Context, b policyBody, create bool) error {
	p, created, err := h.Catalog.PolicyPut(c.Request().Context(), catalog.PolicyPutParams{Name: b.Name,
		Description: b.Description, Default: b.Default, Spec: b.spec(), Create: create})
	if err != nil {
		return err
	}
	j, err := policyJSON(p)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return wire.WriteJSON(c, status, j)
}

// Delete serves DELETE /scheduling_policies/{name}: 204.
func (h *Policies) Delete(c echo.Context) error {
	if err := h.Catalog.PolicyDelete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
