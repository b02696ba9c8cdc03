package berthapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/claimrecords"
)

// Preemption's side of the API (docs/preemption.md): the consumers a
// claim displaced, as its answer names them ("preempted"), and the feed
// of displacements, GET /preemptions, that conductors and compute agents
// poll to stop the instances whose allocations are gone. A displaced
// consumer's GET /claims/{consumer_uuid} answers "state": "preempted"
// (stored_claim.go).

// Preemptions serves GET /preemptions.
type Preemptions struct {
	Store PreemptionStore
}

// PreemptionStore is what the feed asks of the ledger (a
// *claimrecords.Records).
type PreemptionStore interface {
	Preemptions(ctx context.Context, p claimrecords.PreemptionsParams) ([]claimrecords.Preemption, bool, error)
}

// Bounds of GET /preemptions' limit.
const (
	defaultPreemptionsLimit = 100
	maxPreemptionsLimit     = 1000
)

var preemptionsQuerySchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"since": {"type": "string", "minLength": 1},
		"limit": {"type": "string", "minLength": 1},
		"marker": {"type": "string", "minLength": 1}
	},
	"additionalProperties": false
}`)

// List serves GET /preemptions?since=&limit=&marker=: the displacements
// at or after since (RFC 3339; default: all), oldest first, limit at a
// time (1 to 1000, default 100); "next" is the link to the page after
// (null on the last), whose marker is the last record's id.
func (h *Preemptions) List(c echo.Context) error {
	if err := wire.ValidateQuery(c, preemptionsQuerySchema); err != nil {
		return err
	}
	p := claimrecords.PreemptionsParams{Limit: defaultPreemptionsLimit}
	if v, ok := wire.QueryLast(c, "since"); ok {
		// A "+" offset sent unencoded reads as a space.
		t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(v, " ", "+"))
		if err != nil {
			return wire.BadRequest("Invalid since %q: want a time in RFC 3339 form, such as 2026-01-01T12:00:00Z.", v)
		}
		p.Since = t
	}
	if v, ok := wire.QueryLast(c, "limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPreemptionsLimit {
			return wire.BadRequest("Invalid limit %q: want an integer from 1 to %d.", v, maxPreemptionsLimit)
		}
		p.Limit = n
	}
	if v, ok := wire.QueryLast(c, "marker"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return wire.BadRequest("Invalid marker %q: want the id of a preemption, as a \"next\" link gives it.", v)
		}
		p.After = n
	}
	page, more, err := h.Store.Preemptions(c.Request().Context(), p)
	if err != nil {
		return err
	}
	out := preemptionPageJSON{Preemptions: make([]preemptionJSON, len(page))}
	for i := range page {
		out.Preemptions[i] = preemptionOf(&page[i])
	}
	if more {
		q := url.Values{"limit": {strconv.Itoa(p.Limit)}, "marker": {strconv.FormatInt(page[len(page)-1].ID, 10)}}
		if !p.Since.IsZero() {
			q.Set("since", p.Since.UTC().Format(time.RFC3339Nano))
		}
		next := "/preemptions?" + q.Encode()
		out.Next = &next
	}
	return wire.WriteJSON(c, http.StatusOK, out)
}

// preemptionPageJSON is a page of the feed.
type preemptionPageJSON struct {
	Next        *string          `json:"next"`
	Preemptions []preemptionJSON `json:"preemptions"`
}

// preemptionJSON is one displacement, its fields in name order.
type preemptionJSON struct {
	Allocations       map[string]any `json:"allocations"`
	ConsumerUUID      string         `json:"consumer_uuid"`
	ID                int64          `json:"id"`
	Priority          int64          `json:"priority"`
	PreemptedAt       string         `json:"preempted_at"`
	PreemptedBy       string         `json:"preempted_by"`
	PreemptorPriority int64          `json:"preemptor_priority"`
	ProjectID         string         `json:"project_id"`
	RootProviderUUID  string         `json:"root_provider_uuid"`
	UserID            string         `json:"user_id"`
}

func preemptionOf(p *claimrecords.Preemption) preemptionJSON {
	return preemptionJSON{Allocations: claims.AllocationsMap(p.Allocations), ConsumerUUID: p.ConsumerUUID, ID: p.ID,
		Priority: p.Priority, PreemptedAt: stamp(p.PreemptedAt), PreemptedBy: p.PreemptedBy,
		PreemptorPriority: p.PreemptorPriority, ProjectID: p.ProjectID, RootProviderUUID: p.RootUUID, UserID: p.UserID}
}

// stamp is a time as the claims routes write one: UTC, RFC 3339 with
// fractional seconds.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
