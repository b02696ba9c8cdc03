package berthapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/scheduling"
)

// Evacuations serves the evacuation of hosts and their restore.
type Evacuations struct {
	Claimer Evacuator
	Bodies  *wire.Bodies
	// Claims redoes each moved consumer's stored claim, as POST
	// /claims/{uuid}/move does.
	Claims *Claims
}

// Evacuator evacuates and restores hosts (a *claims.Claimer).
type Evacuator interface {
	Evacuate(ctx context.Context, p claims.EvacuateParams) (*claims.Evacuation, error)
	Restore(ctx context.Context, providerUUID string) (scheduling.ProviderEvacuation, error)
}

// Evacuating a host (Berth's extension, as LXD's cluster evacuate): POST
// /resource_providers/{uuid}/evacuate marks the root provider evacuated
// and moves its consumers away with reason evacuation; POST
// .../restore makes it a candidate again. The contract is in
// docs/claims.md.

var evacuateSchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"dry_run": {"type": "boolean"},
		"confirm": {"type": "boolean"},
		"parallel": {"type": "integer", "minimum": 1, "maximum": ` + fmt.Sprint(claims.MaxEvacuateParallel) + `},
		"limit": {"type": "integer", "minimum": 0},
		"after": {"type": "string", "format": "uuid"},
		"policy": {"type": "string", "minLength": 1, "maxLength": 255},
		"mode": {"enum": ["auto", "migrate", "live-migrate", "stop"]}
	},
	"additionalProperties": false
}`)

// evacuateBody is the optional body of POST .../evacuate.
type evacuateBody struct {
	DryRun   bool   `json:"dry_run"`
	Confirm  bool   `json:"confirm"`
	Parallel int    `json:"parallel"`
	Limit    int    `json:"limit"`
	After    string `json:"after"`
	Policy   string `json:"policy"`
	Mode     string `json:"mode"`
}

// Evacuate serves POST /resource_providers/{uuid}/evacuate: 200
// with what happened to each consumer; 404 for an unknown provider, 400
// for one that is not a root or a bad body (nothing written then). The
// body is optional: none at all, or an empty one, takes the defaults.
func (h *Evacuations) Evacuate(c echo.Context) error {
	var b evacuateBody
	if req := c.Request(); req.ContentLength != 0 || req.Header.Get(echo.HeaderContentType) != "" {
		body, err := h.Bodies.Read(c)
		if err != nil {
			return err
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			if err := wire.DecodeJSON(body, evacuateSchema, &b); err != nil {
				return err
			}
		}
	}
	ev, err := h.Claimer.Evacuate(c.Request().Context(), claims.EvacuateParams{Provider: c.Param("uuid"), DryRun: b.DryRun,
		Confirm: b.Confirm, Parallel: b.Parallel, Limit: b.Limit, After: b.After, Policy: b.Policy, Mode: b.Mode,
		MoveRequest: h.moveRequest(b)})
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, evacuationJSON(ev))
}

// moveRequest makes each move of the evacuation b as POST
// /claims/{uuid}/move would with a body of the evacuation's own fields
// (migration_uuid, reason evacuation, dry_run, policy if given): the
// consumer's stored claim redone (Claims.onConsumer), so that the move
// keeps what its claim asked for and stores it again.
func (h *Evacuations) moveRequest(b evacuateBody) func(ctx context.Context, consumer, migration string) (claims.Params, error) {
	return func(ctx context.Context, consumer, migration string) (claims.Params, error) {
		body := map[string]any{"migration_uuid": migration, "reason": claims.ReasonEvacuation}
		if b.DryRun {
			body["dry_run"] = true
		}
		if b.Policy != "" {
			body["policy"] = b.Policy
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return claims.Params{}, err
		}
		_, p, err := h.Claims.redoStored(ctx, consumer, raw, moveSchema, moveKind)
		return p, err
	}
}

// Restore serves POST /resource_providers/{uuid}/restore: 200;
// 409 berth.not_evacuated when the provider is not evacuated.
func (h *Evacuations) Restore(c echo.Context) error {
	ev, err := h.Claimer.Restore(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, evacuationMarkJSON(ev))
}

// evacuationMarkJSON is a provider's evacuation mark.
func evacuationMarkJSON(ev scheduling.ProviderEvacuation) map[string]any {
	var at any
	if ev.Evacuated {
		at = ev.At.UTC().Format(time.RFC3339Nano)
	}
	return map[string]any{"resource_provider_uuid": ev.ProviderUUID, "name": ev.Name, "evacuated": ev.Evacuated, "evacuated_at": at}
}

// evacuationJSON is Evacuate's answer: the mark, each consumer, counts
// by status (moved, planned, failed, skipped and confirmed: earlier moves
// this call confirmed), what remains and where to resume.
func evacuationJSON(ev *claims.Evacuation) map[string]any {
	out := evacuationMarkJSON(ev.Provider)
	counts := map[string]int{claims.EvacuationMoved: 0, claims.EvacuationPlanned: 0, claims.EvacuationFailed: 0, claims.EvacuationSkipped: 0,
		claims.EvacuationConfirmed: 0}
	consumers := make([]any, len(ev.Consumers))
	for i, m := range ev.Consumers {
		counts[m.Status]++
		var dest, mig, reason, detail any
		if m.Destination != "" {
			dest = map[string]any{"uuid": m.Destination, "name": m.DestinationName}
		}
		if m.MigrationUUID != "" {
			mig = m.MigrationUUID
		}
		if m.Reason != "" {
			reason, detail = m.Reason, m.Detail
		}
		consumers[i] = map[string]any{"consumer_uuid": m.ConsumerUUID, "name": m.Name, "status": m.Status, "destination": dest,
			"migration_uuid": mig, "confirmed": m.Confirmed, "reason": reason, "detail": detail}
	}
	var next any
	if ev.Next != "" {
		next = ev.Next
	}
	out["dry_run"], out["consumers"], out["remaining"], out["pending"], out["next"] = ev.DryRun, consumers, ev.Remaining, ev.Pending, next
	for status, n := range counts {
		out[status] = n
	}
	return out
}
