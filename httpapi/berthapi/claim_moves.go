package berthapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/internal/uuid"
)

// A consumer's claim redone: reschedule and move (with the confirm and
// revert that end a move), each taking what its body leaves out from the
// consumer's stored claim (docs/claims.md).

// Reschedule serves POST /claims/{consumer_uuid}/reschedule: claim
// again, away from every provider the consumer failed on, replacing its
// allocations atomically.
func (h *Claims) Reschedule(c echo.Context) error {
	b, p, err := h.onConsumer(c, rescheduleSchema, rescheduleKind)
	if err != nil {
		return err
	}
	r, err := h.Claimer.Reschedule(c.Request().Context(), p, b.FailedProvider)
	if err != nil {
		return placement.CandidatesError(err)
	}
	return writeClaimAnswer(c, r)
}

// Move serves POST /claims/{consumer_uuid}/move: a migration claim.
// The migration consumer takes over the consumer's current allocations
// and the consumer gets a destination away from its current roots, in
// one transaction.
func (h *Claims) Move(c echo.Context) error {
	b, p, err := h.onConsumer(c, moveSchema, moveKind)
	if err != nil {
		return err
	}
	r, err := h.Claimer.Move(c.Request().Context(), p, b.MigrationUUID)
	if err != nil {
		return placement.CandidatesError(err)
	}
	return writeClaimAnswer(c, r)
}

// Confirm serves POST /claims/{consumer_uuid}/move/confirm.
func (h *Claims) Confirm(c echo.Context) error {
	return h.moveEnd(c, h.Claimer.Confirm)
}

// Revert serves POST /claims/{consumer_uuid}/move/revert.
func (h *Claims) Revert(c echo.Context) error {
	return h.moveEnd(c, h.Claimer.Revert)
}

// moveEnd decodes the optional body of confirm and revert and runs end.
func (h *Claims) moveEnd(c echo.Context, end func(ctx context.Context, consumer, migration string) (*claims.Holding, error)) error {
	consumer := c.Param("consumer_uuid")
	if !uuid.Valid(consumer) {
		return wire.BadRequest("Malformed consumer_uuid: %s", consumer)
	}
	body, err := h.Bodies.Read(c)
	if err != nil {
		return err
	}
	var b struct {
		MigrationUUID string `json:"migration_uuid"`
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := wire.DecodeJSON(body, moveEndSchema, &b); err != nil {
			return err
		}
	}
	held, err := end(c.Request().Context(), consumer, b.MigrationUUID)
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, map[string]any{
		"consumer_uuid":       held.ConsumerUUID,
		"consumer_generation": held.ConsumerGeneration,
		"allocations":         claims.AllocationsMap(held.Allocations),
	})
}

// reusedFields are the request fields a reschedule or move takes from the
// consumer's stored claim when its body leaves them out, in the order the
// answer lists them: the selection, where not to place, and what the
// policy and scriptlets see (instance, LXD's request, as LXD gives a
// scriptlet the instance it moves), and the claim's priority and whether
// it is preemptible (docs/preemption.md). Not reused: the owner, type and
// generation (the consumer's own, as before), target (it pinned where the
// consumer is), reason, alternates, max_attempts, dry_run and
// lease_seconds (the stored claim's lease carries over by its own rules).
var reusedFields = []string{"resources", "required", "member_of", "in_tree", "groups", "root_required",
	"same_subtree", "group_policy", "exclude_providers", "name", "properties", "instance", "keys", "policy",
	"priority", "preemptible"}

// onConsumer decodes the body of a reschedule or move (kind) and
// redoes the consumer's stored request under it: every field of
// reusedFields that the body leaves out is taken from the request stored
// with the consumer's claim (a body field, even empty, overrides its
// stored one). The merged request is checked as a body would be, and is
// what the write stores. A consumer without a stored claim (allocations
// written through the Placement API) gets today's defaults: what it holds
// now. The answer says which it was (claims.Reused).
func (h *Claims) onConsumer(c echo.Context, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	body, err := h.Bodies.Read(c)
	if err != nil {
		return claimBody{}, claims.Params{}, err
	}
	return h.redoStored(c.Request().Context(), c.Param("consumer_uuid"), body, schema, kind)
}

// redoStored is onConsumer of the body read, for consumer.
func (h *Claims) redoStored(ctx context.Context, consumer string, body []byte, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	b, p, err := h.paramsFrom(consumer, body, schema, kind)
	if err != nil {
		return b, p, err
	}
	stored, err := h.Claimer.StoredRequest(ctx, p.ConsumerUUID)
	if err != nil {
		return b, p, err
	}
	reused := &claims.Reused{From: claims.ReusedFromAllocations, Fields: []string{}}
	if stored != nil {
		reused.From = claims.ReusedFromClaim
		merged, fields, err := mergeRequest(stored, body)
		if err != nil {
			return b, p, err
		}
		if len(fields) > 0 {
			if b, p, err = h.paramsFrom(consumer, merged, schema, kind); err != nil {
				return b, p, err
			}
			reused.Fields = fields
		}
	}
	if len(p.Candidates.Groups) == 0 {
		reused.Fields = append(reused.Fields, "resources") // from what it holds (claims: adopt)
	}
	p.Reused = reused
	return b, p, nil
}

// mergeRequest is body with every field of reusedFields it lacks taken
// from stored, and the fields it took. A stored request that is not a
// JSON object is not reused.
func mergeRequest(stored, body []byte) ([]byte, []string, error) {
	var b, st map[string]json.RawMessage
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &b); err != nil {
			return nil, nil, wire.BadRequest("Malformed JSON: %v", err)
		}
	}
	if b == nil {
		b = map[string]json.RawMessage{}
	}
	if json.Unmarshal(stored, &st) != nil {
		return body, nil, nil
	}
	var fields []string
	for _, f := range reusedFields {
		if _, given := b[f]; given {
			continue
		}
		if v, ok := st[f]; ok {
			b[f] = v
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return body, nil, nil
	}
	merged, err := json.Marshal(b)
	return merged, fields, err
}
