package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Admin makes an operator's calls: the projects' limits, the allocation
// audit, scheduling policies, scriptlets and their shadows. A scheduler
// needs none of them.
type Admin struct{ c *Client }

// Admin is c's operator calls.
func (c *Client) Admin() *Admin { return &Admin{c: c} }

// ResourceLimit is one resource of a project's limits: its limit (nil:
// none), what the project holds, what remains (nil: no limit), and
// whether the limit is the registered default.
type ResourceLimit struct {
	Limit     *int64 `json:"limit"`
	Used      int64  `json:"used"`
	Remaining *int64 `json:"remaining"`
	Default   bool   `json:"default"`
}

// ProjectLimits is GET /limits/{project_id}.
type ProjectLimits struct {
	ProjectID string                   `json:"project_id"`
	Resources map[string]ResourceLimit `json:"resources"`
}

// Limits sends GET /limits/{project_id}.
func (a *Admin) Limits(ctx context.Context, project string) (*ProjectLimits, error) {
	var out ProjectLimits
	if _, err := a.c.JSON(ctx, http.MethodGet, "/limits/"+url.PathEscape(project), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllLimits sends GET /limits: every project's own limits, project ->
// resource -> limit.
func (a *Admin) AllLimits(ctx context.Context) (map[string]map[string]int64, error) {
	var out struct {
		Projects map[string]map[string]int64 `json:"projects"`
	}
	if _, err := a.c.JSON(ctx, http.MethodGet, "/limits", nil, &out); err != nil {
		return nil, err
	}
	return out.Projects, nil
}

// SetLimits sends PUT /limits/{project_id}: the project's own limits,
// resource -> limit, replacing those it had.
func (a *Admin) SetLimits(ctx context.Context, project string, limits map[string]int64) error {
	_, err := a.c.JSON(ctx, http.MethodPut, "/limits/"+url.PathEscape(project), map[string]any{"limits": limits}, nil)
	return err
}

// DeleteLimits sends DELETE /limits/{project_id}: the project is held to
// the registered limits again.
func (a *Admin) DeleteLimits(ctx context.Context, project string) error {
	_, err := a.c.JSON(ctx, http.MethodDelete, "/limits/"+url.PathEscape(project), nil, nil)
	return err
}

// RegisteredLimits sends GET /registered_limits: the limits of every
// project without its own.
func (a *Admin) RegisteredLimits(ctx context.Context) (map[string]int64, error) {
	var out struct {
		Limits map[string]int64 `json:"limits"`
	}
	if _, err := a.c.JSON(ctx, http.MethodGet, "/registered_limits", nil, &out); err != nil {
		return nil, err
	}
	return out.Limits, nil
}

// SetRegisteredLimits sends PUT /registered_limits.
func (a *Admin) SetRegisteredLimits(ctx context.Context, limits map[string]int64) error {
	_, err := a.c.JSON(ctx, http.MethodPut, "/registered_limits", map[string]any{"limits": limits}, nil)
	return err
}

// AuditParams is GET /audit's query; zero fields are left out.
type AuditParams struct {
	Kinds        []string
	Limit        int
	Marker       string
	MigrationAge string // a Go duration, "30m"
	StateAge     string
}

// AuditPage is a page of GET /audit. Findings are kept as the server
// wrote them (docs/operations.md, "The allocation audit").
type AuditPage struct {
	Findings   []AuditFinding `json:"findings"`
	NextMarker *string        `json:"next_marker"`
	Thresholds struct {
		MigrationAge string `json:"migration_age"`
		StateAge     string `json:"state_age"`
	} `json:"thresholds"`
}

// AuditFinding is one finding of the audit: its kind, the consumer it is
// about and what its fix would do; Raw is the whole finding.
type AuditFinding struct {
	Kind     string `json:"kind"`
	Consumer *struct {
		UUID       string `json:"uuid"`
		Generation int64  `json:"generation"`
	} `json:"consumer"`
	Detail string `json:"detail"`
	Fix    struct {
		Action string `json:"action"`
		Detail string `json:"detail"`
	} `json:"fix"`
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the whole finding in Raw.
func (f *AuditFinding) UnmarshalJSON(b []byte) error {
	type plain AuditFinding
	if err := json.Unmarshal(b, (*plain)(f)); err != nil {
		return err
	}
	f.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Audit sends GET /audit: a page of findings.
func (a *Admin) Audit(ctx context.Context, p AuditParams) (*AuditPage, error) {
	q := url.Values{}
	for _, k := range p.Kinds {
		q.Add("kind", k)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	for k, v := range map[string]string{"marker": p.Marker, "migration_age": p.MigrationAge, "state_age": p.StateAge} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out AuditPage
	if _, err := a.c.JSON(ctx, http.MethodGet, withQuery("/audit", q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AuditFix sends POST /audit/fix: fix one finding of kind for the
// consumer at its generation (the finding's). It answers the finding
// fixed.
func (a *Admin) AuditFix(ctx context.Context, kind, consumer string, generation int64) (*AuditFinding, error) {
	body := map[string]any{"kind": kind, "consumer_uuid": consumer, "consumer_generation": generation}
	var out struct {
		Fixed AuditFinding `json:"fixed"`
	}
	if _, err := a.c.JSON(ctx, http.MethodPost, "/audit/fix", body, &out); err != nil {
		return nil, err
	}
	return &out.Fixed, nil
}

// Plugin is a filter or weigher of a scheduling policy.
type Plugin struct {
	Name   string          `json:"name"`
	Params json.RawMessage `json:"params,omitempty"`
	Factor *float64        `json:"factor,omitempty"`
}

// Policy is a scheduling policy (docs/scheduling.md).
type Policy struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Default     bool     `json:"default,omitempty"`
	Filters     []Plugin `json:"filters,omitempty"`
	Weighers    []Plugin `json:"weighers,omitempty"`
	Balancer    *struct {
		Mode string  `json:"mode"`
		High float64 `json:"high"`
		Low  float64 `json:"low"`
	} `json:"balancer,omitempty"`
	Scriptlet *string `json:"scriptlet,omitempty"`
}

// Policies sends GET /scheduling_policies.
func (a *Admin) Policies(ctx context.Context) ([]Policy, error) {
	var out struct {
		Policies []Policy `json:"scheduling_policies"`
	}
	if _, err := a.c.JSON(ctx, http.MethodGet, "/scheduling_policies", nil, &out); err != nil {
		return nil, err
	}
	return out.Policies, nil
}

// Policy sends GET /scheduling_policies/{name}.
func (a *Admin) Policy(ctx context.Context, name string) (*Policy, error) {
	var out Policy
	if _, err := a.c.JSON(ctx, http.MethodGet, "/scheduling_policies/"+url.PathEscape(name), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutPolicy sends PUT /scheduling_policies/{p.Name}: create or replace
// it. It answers the policy as stored.
func (a *Admin) PutPolicy(ctx context.Context, p Policy) (*Policy, error) {
	var out Policy
	if _, err := a.c.JSON(ctx, http.MethodPut, "/scheduling_policies/"+url.PathEscape(p.Name), p, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeletePolicy sends DELETE /scheduling_policies/{name}.
func (a *Admin) DeletePolicy(ctx context.Context, name string) error {
	_, err := a.c.JSON(ctx, http.MethodDelete, "/scheduling_policies/"+url.PathEscape(name), nil, nil)
	return err
}

// Scriptlet is an entry of GET /scriptlets.
type Scriptlet struct {
	Name      string `json:"name"`
	Size      int    `json:"size"`
	UpdatedAt string `json:"updated_at"`
}

// Scriptlets sends GET /scriptlets.
func (a *Admin) Scriptlets(ctx context.Context) ([]Scriptlet, error) {
	var out struct {
		Scriptlets []Scriptlet `json:"scriptlets"`
	}
	if _, err := a.c.JSON(ctx, http.MethodGet, "/scriptlets", nil, &out); err != nil {
		return nil, err
	}
	return out.Scriptlets, nil
}

// ScriptletSource sends GET /scriptlets/{name}: its Starlark source.
func (a *Admin) ScriptletSource(ctx context.Context, name string) (string, error) {
	r, err := a.c.Do(ctx, http.MethodGet, "/scriptlets/"+url.PathEscape(name), nil, "")
	if err == nil && r.Status/100 != 2 {
		err = NewError(r)
	}
	if err != nil {
		return "", err
	}
	return string(r.Body), nil
}

// PutScriptlet sends PUT /scriptlets/{name} with source as text/plain:
// the server checks and stores it (400 with the compiler's message when
// it does not compile).
func (a *Admin) PutScriptlet(ctx context.Context, name, source string) error {
	r, err := a.c.Do(ctx, http.MethodPut, "/scriptlets/"+url.PathEscape(name), []byte(source), "text/plain")
	if err == nil && r.Status/100 != 2 {
		err = NewError(r)
	}
	return err
}

// DeleteScriptlet sends DELETE /scriptlets/{name}.
func (a *Admin) DeleteScriptlet(ctx context.Context, name string) error {
	_, err := a.c.JSON(ctx, http.MethodDelete, "/scriptlets/"+url.PathEscape(name), nil, nil)
	return err
}

// Shadow kinds: what a shadow runs beside the default policy.
const (
	ShadowScriptlet = "scriptlets"
	ShadowPolicy    = "scheduling_policies"
)

// ShadowReport is what a shadow counted (docs/scheduling.md, "Shadows").
type ShadowReport struct {
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	StartedAt   string `json:"started_at"`
	ClaimsSeen  int64  `json:"claims_seen"`
	Agreed      int64  `json:"agreed"`
	Disagreed   int64  `json:"disagreed"`
	WouldRefuse int64  `json:"would_refuse"`
	Dropped     int64  `json:"dropped"`
	Refusals    []struct {
		Message string `json:"message"`
		Count   int64  `json:"count"`
	} `json:"refusals"`
	Failures      map[string]int64   `json:"failures"`
	Cost          map[string]float64 `json:"cost"`
	Disagreements []json.RawMessage  `json:"disagreements"`
}

// StartShadow sends PUT /{kind}/{name}/shadow (kind ShadowScriptlet or
// ShadowPolicy).
func (a *Admin) StartShadow(ctx context.Context, kind, name string) (*ShadowReport, error) {
	return a.shadow(ctx, http.MethodPut, kind, name)
}

// Shadow sends GET /{kind}/{name}/shadow: the shadow's report.
func (a *Admin) Shadow(ctx context.Context, kind, name string) (*ShadowReport, error) {
	return a.shadow(ctx, http.MethodGet, kind, name)
}

// StopShadow sends DELETE /{kind}/{name}/shadow.
func (a *Admin) StopShadow(ctx context.Context, kind, name string) error {
	_, err := a.c.JSON(ctx, http.MethodDelete, "/"+kind+"/"+url.PathEscape(name)+"/shadow", nil, nil)
	return err
}

func (a *Admin) shadow(ctx context.Context, method, kind, name string) (*ShadowReport, error) {
	var out ShadowReport
	if _, err := a.c.JSON(ctx, method, "/"+kind+"/"+url.PathEscape(name)+"/shadow", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
