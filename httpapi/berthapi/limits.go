package berthapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/quotas"
)

// Limits serves the projects' limits.
type Limits struct {
	// Source is where the limits are kept: Berth's ledger, or
	// Keystone's (read-only here).
	Source quota.Source
	Store  LimitStore
	Bodies *wire.Bodies
}

// LimitStore is what the limits routes ask of the ledger: usage, and
// the limits Berth keeps (a *quotas.Quotas).
type LimitStore interface {
	ProjectUsage(ctx context.Context, project string) (map[string]int64, error)
	LimitsSet(ctx context.Context, project string, l quotas.Limits) error
	LimitsDelete(ctx context.Context, project string) error
	RegisteredLimitsSet(ctx context.Context, l quotas.Limits) error
}

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
	Limits quotas.Limits `json:"limits"`
}

// limitProject is the project a limits route names, refused (400) when it
// cannot name a project.
func limitProject(c echo.Context) (string, error) {
	p := c.Param("project_id")
	if !quotas.ValidProjectID(p) {
		return "", wire.BadRequest("Invalid project_id %q: want 1 to %d characters, none of them a space or a control character.",
			p, quotas.MaxProjectIDLen)
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

// Show serves GET /limits/{project_id}: per resource the project is limited in or
// holds, its limit, usage and what remains, like `openstack limits show
// --absolute`.
func (h *Limits) Show(c echo.Context) error {
	project, err := limitProject(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	own, registered, err := h.Source.Limits(ctx, project)
	if err != nil {
		return err
	}
	used, err := h.Store.ProjectUsage(ctx, project)
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
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"project_id": project, "resources": out})
}

// Put serves PUT /limits/{project_id}: the project's own limits,
// replaced as a whole; answered as GET.
func (h *Limits) Put(c echo.Context) error {
	project, err := limitProject(c)
	if err != nil {
		return err
	}
	if !h.Source.Writable() {
		return quota.ReadOnly(h.Source)
	}
	var body limitsBody
	if err := h.Bodies.Decode(c, limitsBodySchema, &body); err != nil {
		return err
	}
	if err := h.Store.LimitsSet(c.Request().Context(), project, body.Limits); err != nil {
		return err
	}
	return h.Show(c)
}

// Delete serves DELETE /limits/{project_id}: the project's own limits
// removed (the registered ones apply to it again).
func (h *Limits) Delete(c echo.Context) error {
	project, err := limitProject(c)
	if err != nil {
		return err
	}
	if !h.Source.Writable() {
		return quota.ReadOnly(h.Source)
	}
	if err := h.Store.LimitsDelete(c.Request().Context(), project); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// List serves GET /limits: every project's own limits.
func (h *Limits) List(c echo.Context) error {
	all, err := h.Source.Projects(c.Request().Context())
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"projects": all})
}

// RegisteredShow serves GET /registered_limits: the limits of every
// project without its own.
func (h *Limits) RegisteredShow(c echo.Context) error {
	l, err := h.Source.Registered(c.Request().Context())
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, limitsBody{Limits: l})
}

// RegisteredPut serves PUT /registered_limits: the registered limits,
// replaced as a whole.
func (h *Limits) RegisteredPut(c echo.Context) error {
	if !h.Source.Writable() {
		return quota.ReadOnly(h.Source)
	}
	var body limitsBody
	if err := h.Bodies.Decode(c, limitsBodySchema, &body); err != nil {
		return err
	}
	if err := h.Store.RegisteredLimitsSet(c.Request().Context(), body.Limits); err != nil {
		return err
	}
	return h.RegisteredShow(c)
}
