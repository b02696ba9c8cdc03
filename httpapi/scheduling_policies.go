package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Scheduling policies (Berth's extension): named sets of filters,
// weighers, a balancer and a scriptlet, stored in the ledger; one may be
// the default. Every replica sees a change within moments (catalog.Catalog).

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
func policyJSON(p ledger.SchedulingPolicy) (map[string]any, error) {
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

func (s *Server) policyList(c echo.Context) error {
	ps, err := s.store.SchedulingPolicies(c.Request().Context())
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
	return writeJSON(c, http.StatusOK, map[string]any{"scheduling_policies": out})
}

func (s *Server) policyShow(c echo.Context) error {
	p, err := s.store.SchedulingPolicyGet(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	j, err := policyJSON(p)
	if err != nil {
		return err
	}
	setCacheHeaders(c, p.UpdatedAt)
	return writeJSON(c, http.StatusOK, j)
}

// policyCreate serves POST /scheduling_policies: 201 with the policy; 409
// if the name is taken.
func (s *Server) policyCreate(c echo.Context) error {
	var b policyBody
	if err := s.decodeBody(c, policyPostSchema, &b); err != nil {
		return err
	}
	return s.policyWrite(c, b, true)
}

// policyPut serves PUT /scheduling_policies/{name}: creates (201) or
// replaces (200) the policy. A name in the body must be the path's.
func (s *Server) policyPut(c echo.Context) error {
	var b policyBody
	if err := s.decodeBody(c, policyPutSchema, &b); err != nil {
		return err
	}
	name := c.Param("name")
	if b.Name != "" && b.Name != name {
		return badRequest("The policy's name %q differs from the name in the URL, %q.", b.Name, name)
	}
	if err := policyPutSchema.Validate(map[string]any{"name": name}); err != nil {
		return badRequest("Invalid scheduling policy name %q: %v", name, err)
	}
	b.Name = name
	return s.policyWrite(c, b, false)
}

// policyWrite stores b; catalog.Catalog checks it first (every unit and
// parameter, the scriptlet).
func (s *Server) policyWrite(c echo.Context, b policyBody, create bool) error {
	p, created, err := s.catalog.PolicyPut(c.Request().Context(), catalog.PolicyPutParams{Name: b.Name,
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
	return writeJSON(c, status, j)
}

// policyDelete serves DELETE /scheduling_policies/{name}: 204.
func (s *Server) policyDelete(c echo.Context) error {
	if err := s.catalog.PolicyDelete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
