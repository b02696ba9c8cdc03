package berthapi

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
)

// Scriptlets serves the stored scriptlets, and their test.
type Scriptlets struct {
	Store   ScriptletStore
	Catalog ScriptletCatalog
	// Claims reads a test's sample claim, and explains it.
	Claims *Claims
}

// ScriptletStore is what the scriptlet routes read of the ledger (a
// *scheduling.Catalogue).
type ScriptletStore interface {
	Scriptlets(ctx context.Context) ([]scheduling.Scriptlet, error)
	ScriptletGet(ctx context.Context, name string) (scheduling.Scriptlet, error)
}

// ScriptletCatalog is what the scriptlet routes ask of the catalogue (a
// *catalog.Catalog), which compiles a scriptlet before it stores it.
type ScriptletCatalog interface {
	ScriptletPut(ctx context.Context, name string, src []byte) (created bool, err error)
	ScriptletDelete(ctx context.Context, name string) error
	PolicyWithScriptlet(ctx context.Context, policy, scriptlet string) (*scheduler.Policy, error)
}

// Stored Starlark scriptlets (Berth's extension): PUT compiles the source
// before storing it, so a stored scriptlet always compiled when written.
// The source travels as text/plain; GET of one scriptlet answers text.

// maxScriptletBytes caps a scriptlet's source.
const maxScriptletBytes = 1 << 20

var scriptletNameSchema = jsonschema.Must(`{"type": "string", "pattern": "` + schedulingNamePattern + `"}`)

func checkScriptletName(name string) error {
	if err := scriptletNameSchema.Validate(name); err != nil {
		return wire.BadRequest("Invalid scriptlet name %q: %v", name, err)
	}
	return nil
}

// List serves GET /scriptlets.
func (h *Scriptlets) List(c echo.Context) error {
	list, err := h.Store.Scriptlets(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]any, len(list))
	for i, sc := range list {
		out[i] = map[string]any{"name": sc.Name, "size": len(sc.Source), "updated_at": sc.UpdatedAt.UTC().Format(time.RFC3339Nano)}
	}
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"scriptlets": out})
}

// Show serves GET /scriptlets/{name}: the source, text/plain.
func (h *Scriptlets) Show(c echo.Context) error {
	sc, err := h.Store.ScriptletGet(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	wire.SetCacheHeaders(c, sc.UpdatedAt)
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte(sc.Source))
}

// Put serves PUT /scriptlets/{name} with a text/plain body of
// Starlark source: 400 with the line and column of a compile error; 201
// when created, 204 when replaced (as PUT /traits/{name}).
func (h *Scriptlets) Put(c echo.Context) error {
	name := c.Param("name")
	if err := checkScriptletName(name); err != nil {
		return err
	}
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMETextPlain {
		return wire.NewError(http.StatusUnsupportedMediaType, "", "The media type %s is not supported, use text/plain", ct)
	}
	src, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxScriptletBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return wire.NewError(http.StatusRequestEntityTooLarge, "", "Scriptlet larger than %d bytes.", mbe.Limit)
		}
		return wire.BadRequest("Could not read the request body.")
	}
	created, err := h.Catalog.ScriptletPut(c.Request().Context(), name, src)
	if err != nil {
		return err
	}
	if created {
		return c.NoContent(http.StatusCreated)
	}
	return c.NoContent(http.StatusNoContent)
}

// Delete serves DELETE /scriptlets/{name}: 204; 409 if a
// scheduling policy names it.
func (h *Scriptlets) Delete(c echo.Context) error {
	if err := h.Catalog.ScriptletDelete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// Test serves POST /scriptlets/{name}/test: a dry run of a
// sample claim against live data, ranked by the policy it names (or the
// default) with this scriptlet as its scriptlet. Nothing is written. 200
// with the decision (the target the claim would try first, or the
// scriptlet's refusal), the ranking and the scriptlet's log.
func (h *Scriptlets) Test(c echo.Context) error {
	_, p, err := h.Claims.params(c, sampleSchema, sampleKind)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if p.PolicyOverride, err = h.Catalog.PolicyWithScriptlet(ctx, p.Policy, c.Param("name")); err != nil {
		return err
	}
	ex, err := h.Claims.Claimer.Explain(ctx, p)
	if err != nil {
		return placement.CandidatesError(err)
	}
	return wire.WriteJSON(c, http.StatusOK, scriptletTestJSON(ex))
}

func scriptletTestJSON(ex *claims.Explanation) map[string]any {
	decision := map[string]any{"target": nil, "target_name": nil, "refused": nil}
	ranking := []any{}
	logLines := []scheduler.LogLine{}
	if r := ex.Ranking; r != nil {
		for i, sc := range r.Ranked {
			root := sc.Cand.Root()
			entry := map[string]any{
				"rank":               i + 1,
				"root_provider_uuid": root,
				"root_provider_name": providerName(sc.Cand, root),
				"score":              sc.Score,
				"weights":            sc.Weights(),
				"allocations":        claims.AllocationsMap(sc.Cand.AllocationsByName()),
			}
			ranking = append(ranking, entry)
		}
		if len(r.Ranked) > 0 && ex.Refusal == "" {
			decision["target"], decision["target_name"] = ranking[0].(map[string]any)["root_provider_uuid"], ranking[0].(map[string]any)["root_provider_name"]
		}
		decision["chosen_by_scriptlet"] = r.Chosen
		if r.Log != nil {
			logLines = r.Log
		}
	}
	if ex.Refusal != "" {
		decision["refused"] = ex.Refusal
	}
	return map[string]any{"decision": decision, "ranking": ranking, "log": logLines}
}

// providerName is the name of provider uuid in a candidate's summaries.
func providerName(c *scheduler.Candidate, uuid string) any {
	if p := c.Providers[uuid]; p != nil {
		return p.Name
	}
	return nil
}
