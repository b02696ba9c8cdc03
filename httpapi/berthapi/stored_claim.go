package berthapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/internal/uuid"
)

// A consumer's stored claim: what it asked, where it landed, its state
// and lease (docs/claims.md).

// claimUpdateSchema is the body of PATCH /claims/{consumer_uuid}; its
// one value is checked by parseLease.
var claimUpdateSchema = jsonschema.Must(`{
	"type": "object",
	"properties": {"lease_seconds": {}},
	"required": ["lease_seconds"],
	"additionalProperties": false
}`)

// Show serves GET /claims/{consumer_uuid}: the consumer's stored
// claim (its request, where it landed, its state and lease) and what it
// holds now. 404 berth.no_claim for a consumer no claim placed.
func (h *Claims) Show(c echo.Context) error {
	consumer := c.Param("consumer_uuid")
	if !uuid.Valid(consumer) {
		return wire.BadRequest("Malformed consumer_uuid: %s", consumer)
	}
	st, err := h.Claimer.Stored(c.Request().Context(), consumer)
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, storedJSON(st))
}

// Update serves PATCH /claims/{consumer_uuid}: {"lease_seconds": N}
// renews the lease for N seconds from now, {"lease_seconds": null}
// confirms the claim (makes it permanent). It answers as GET does.
func (h *Claims) Update(c echo.Context) error {
	consumer := c.Param("consumer_uuid")
	if !uuid.Valid(consumer) {
		return wire.BadRequest("Malformed consumer_uuid: %s", consumer)
	}
	var b struct {
		LeaseSeconds json.RawMessage `json:"lease_seconds"`
	}
	if err := h.Bodies.Decode(c, claimUpdateSchema, &b); err != nil {
		return err
	}
	lease, err := parseLease(b.LeaseSeconds)
	if err != nil {
		return err
	}
	st, err := h.Claimer.Lease(c.Request().Context(), consumer, lease)
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, storedJSON(st))
}

// storedClaimJSON is the answer of GET and PATCH /claims/{consumer_uuid},
// its fields in name order.
type storedClaimJSON struct {
	Allocations        map[string]any `json:"allocations"`
	ConsumerGeneration int64          `json:"consumer_generation"`
	ConsumerUUID       string         `json:"consumer_uuid"`
	CreatedAt          string         `json:"created_at"`
	Expired            bool           `json:"expired"`
	// Gang is, for a member of a gang (gang.go), its gang: id, domain
	// and the members still there.
	Gang             *storedGangJSON `json:"gang,omitempty"`
	LeaseExpiresAt   *string         `json:"lease_expires_at"`
	LeaseSeconds     *int64          `json:"lease_seconds"`
	MigrationUUID    *string         `json:"migration_uuid"`
	Op               string          `json:"op"`
	Request          json.RawMessage `json:"request"`
	RootProviderUUID *string         `json:"root_provider_uuid"`
	State            string          `json:"state"`
	UpdatedAt        string          `json:"updated_at"`
}

type storedGangJSON struct {
	Domain  *gangDomainChosen `json:"domain"`
	GangID  string            `json:"gang_id"`
	Members []string          `json:"members"`
}

// storedJSON renders a stored claim; times are UTC, RFC 3339 with
// fractional seconds, by PostgreSQL's clock.
func storedJSON(st *claims.Stored) *storedClaimJSON {
	cl := st.Claim
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	optional := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	out := &storedClaimJSON{
		Allocations:        allocationsJSON(st.Allocations),
		ConsumerGeneration: st.ConsumerGeneration,
		ConsumerUUID:       cl.ConsumerUUID,
		CreatedAt:          stamp(cl.CreatedAt),
		Expired:            cl.Expired,
		MigrationUUID:      optional(cl.MigrationUUID),
		Op:                 cl.Op,
		Request:            cl.Request,
		RootProviderUUID:   optional(cl.RootUUID),
		State:              cl.State,
		UpdatedAt:          stamp(cl.UpdatedAt),
	}
	if cl.LeaseExpiresAt != nil {
		t := stamp(*cl.LeaseExpiresAt)
		out.LeaseExpiresAt = &t
	}
	if cl.LeaseSeconds > 0 {
		n := cl.LeaseSeconds
		out.LeaseSeconds = &n
	}
	if g := st.Gang; g != nil {
		out.Gang = &storedGangJSON{GangID: g.ID, Members: g.Members}
		if g.Domain != "" {
			out.Gang.Domain = &gangDomainChosen{MemberOf: g.Domain}
		}
	}
	return out
}
