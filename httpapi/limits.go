package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

// Limits (Berth's extension, docs/quotas.md): what each project may hold
// (its own limits, else the registered ones), per resource class and in
// consumers, checked by every claim in its write's transaction. With
// --limits-source berth they are Berth's, changed here; with keystone
// they are Keystone's unified limits, shown here and changed there.

// limitsBodySchema is the body of PUT /limits/{project_id} and PUT
// /registered_limits: resource -> limit, a whole number from 0.
var limitsBodySchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"limits": {
			"type": "object",
			"maxProperties": 1000,
			"additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9007199254740991}
		}
	},
	"required": ["limits"],
	"additionalProperties": false
}`)

// limitsBody is what PUT /limits/{project_id} and PUT /registered_limits
// take, and what GET /registered_limits answers.
type limitsBody struct {
	Limits ledger.Limits `json:"limits"`
}

// limitProject is the project a limits route names, refused (400) when it
// cannot name a project.
func limitProject(c echo.Context) (string, error) {
	p := c.Param("project_id")
	if !ledger.ValidProjectID(p) {
		return "", badRequest("Invalid project_id %q: want 1 to %d characters, none of them a space or a control character.",
			p, ledger.MaxProjectIDLen)
	}
	return p, nil
}

// resourceLimitJSON is one resource of GET /limits/{project_id}: its
// limit (null: none), what the project's consumers hold, what is left
// (null: no limit), and whether the limit is the registered one.
type resourceLimitJSON struct {
	Limit     *int64 `json:"limit"`
	Used      int64  `json:"used"`
	Remaining *int64 `json:"remaining"`
	Default   bool   `json:"default"`
}

// GET /limits/{project_id}: per resource the project is limited in or
// holds, its limit, usage and what remains, like `openstack limits show
// --absolute`.
func (s *Server) limitsShow(c echo.Context) error {
	project, err := limitProject(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	own, registered, err := s.limits.Limits(ctx, project)
	if err != nil {
		return err
	}
	used, err := s.store.ProjectUsage(ctx, project)
	if err != nil {
		return err
	}
	out := map[string]resourceLimitJSON{}
	for r, u := range used {
		out[r] = resourceLimitJSON{Used: u}
	}
	for r, l := range quota.Effective(own, registered) {
		limit, left := l, max(0, l-used[r])
		_, isOwn := own[r]
		out[r] = resourceLimitJSON{Limit: &limit, Used: used[r], Remaining: &left, Default: !isOwn}
	}
	return writeJSON(c, http.StatusOK, map[string]any{"project_id": project, "resources": out})
}

// PUT /limits/{project_id}: the project's own limits, replaced as a
// whole; answered as GET.
func (s *Server) limitsPut(c echo.Context) error {
	project, err := limitProject(c)
	if err != nil {
		return err
	}
	if !s.limits.Writable() {
		return quota.ReadOnly(s.limits)
	}
	var body limitsBody
	if err := s.decodeBody(c, limitsBodySchema, &body); err != nil {
		return err
	}
	if err := s.store.LimitsSet(c.Request().Context(), project, body.Limits); err != nil {
		return err
	}
	return s.limitsShow(c)
}

// DELETE /limits/{project_id}: the project's own limits removed (the
// registered ones apply to it again).
func (s *Server) limitsDelete(c echo.Context) error {
	project, err := limitProject(c)
	if err != nil {
		return err
	}
	if !s.limits.Writable() {
		return quota.ReadOnly(s.limits)
	}
	if err := s.store.LimitsDelete(c.Request().Context(), project); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// GET /limits: every project's own limits.
func (s *Server) limitsList(c echo.Context) error {
	all, err := s.limits.Projects(c.Request().Context())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, map[string]any{"projects": all})
}

// GET /registered_limits: the limits of every project without its own.
func (s *Server) registeredLimitsShow(c echo.Context) error {
	l, err := s.limits.Registered(c.Request().Context())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, limitsBody{Limits: l})
}

// PUT /registered_limits: the registered limits, replaced as a whole.
func (s *Server) registeredLimitsPut(c echo.Context) error {
	if !s.limits.Writable() {
		return quota.ReadOnly(s.limits)
	}
	var body limitsBody
	if err := s.decodeBody(c, limitsBodySchema, &body); err != nil {
		return err
	}
	if err := s.store.RegisteredLimitsSet(c.Request().Context(), body.Limits); err != nil {
		return err
	}
	return s.registeredLimitsShow(c)
}

// placementQuota is what a Placement API write of ws is checked against:
// the limits of its consumers' projects with --limits-enforce
// placement-api, else nothing (Nova does its own accounting).
func (s *Server) placementQuota(c echo.Context, ws []ledger.ConsumerAllocations) (*ledger.Quota, error) {
	if !s.cfg.LimitsEnforcePlacementAPI {
		return nil, nil
	}
	projects := make([]string, 0, len(ws))
	for _, w := range ws {
		p := w.ProjectID
		if p == "" {
			p = ledger.IncompleteConsumerID
		}
		projects = append(projects, p)
	}
	return s.limits.Quota(c.Request().Context(), projects...)
}
