package berthapi

import (
	"encoding/json"
	"net/http"

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
	Gang           *storedGangJSON `json:"gang,omitempty"`
	LeaseExpiresAt *string         `json:"lease_expires_at"`
	LeaseSeconds   *int64          `json:"lease_seconds"`
	MigrationUUID  *string         `json:"migration_uuid"`
	Op             string          `json:"op"`
	// PreemptedAt and PreemptedBy are set for a consumer a claim
	// displaced (state preempted; preemptions.go), with what it held
	// (PreemptedAllocations).
	PreemptedAllocations map[string]any  `json:"preempted_allocations,omitempty"`
	PreemptedAt          *string         `json:"preempted_at,omitempty"`
	PreemptedBy          *string         `json:"preempted_by,omitempty"`
	Preemptible          bool            `json:"preemptible"`
	Priority             int64           `json:"priority"`
	Request              json.RawMessage `json:"request"`
	RootProviderUUID     *string         `json:"root_provider_uuid"`
	State                string          `json:"state"`
	UpdatedAt            string          `json:"updated_at"`
}

type storedGangJSON struct {
	Domain  *gangDomainChosen `json:"domain"`
	GangID  string            `json:"gang_id"`
	Members []string          `json:"members"`
}

// claimPreemption is what a stored request says of preemption: its
// priority (default 0) and whether it is preemptible (default false).
type claimPreemption struct {
	Priority    int64 `json:"priority"`
	Preemptible bool  `json:"preemptible"`
}

// preemptionOfRequest reads a stored request's priority and
// preemptible; a request that does not say (or is not an object) has
// the defaults.
func preemptionOfRequest(request []byte) claimPreemption {
	var cp claimPreemption
	if json.Unmarshal(request, &cp) != nil {
		return claimPreemption{}
	}
	return cp
}

// storedJSON renders a stored claim; times are UTC, RFC 3339 with
// fractional seconds, by PostgreSQL's clock.
func storedJSON(st *claims.Stored) *storedClaimJSON {
	if st.Preempted != nil {
		return preemptedJSON(st)
	}
	cl := st.Claim
	optional := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	out := &storedClaimJSON{
		Allocations:        claims.AllocationsMap(st.Allocations),
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
	pr := preemptionOfRequest(cl.Request)
	out.Priority, out.Preemptible = pr.Priority, pr.Preemptible
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

// ClaimPreempted is the state of a consumer a claim displaced.
const ClaimPreempted = "preempted"

// preemptedJSON renders a displaced consumer: it holds nothing; its
// request, root and priority are those it had, preempted_by and
// preempted_at say by which consumer's claim and when, and
// preempted_allocations what it held.
func preemptedJSON(st *claims.Stored) *storedClaimJSON {
	p := st.Preempted
	at, by, root := stamp(p.PreemptedAt), p.PreemptedBy, p.RootUUID
	pr := preemptionOfRequest(p.Request)
	return &storedClaimJSON{
		Allocations:          map[string]any{},
		ConsumerUUID:         p.ConsumerUUID,
		CreatedAt:            at,
		Op:                   "preempt",
		PreemptedAllocations: claims.AllocationsMap(p.Allocations),
		PreemptedAt:          &at,
		PreemptedBy:          &by,
		Preemptible:          pr.Preemptible,
		Priority:             p.Priority,
		Request:              p.Request,
		RootProviderUUID:     &root,
		State:                ClaimPreempted,
		UpdatedAt:            at,
	}
}
