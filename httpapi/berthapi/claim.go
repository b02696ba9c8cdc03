package berthapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/scheduler"
)

// Berth's claims extension: select and claim in one request, reschedule,
// move, confirm and revert. These routes exist at every microversion
// (Placement has no equivalent); error bodies carry a "code" from 1.23 on,
// as for every route. The contract is in docs/claims.md. This file
// follows POST /claims: the handler, the body and its schema, the body
// read into claims.Params, and the answer.

// Claims serves Berth's claims: POST /claims (this file), the reschedules
// and moves of a consumer's claim (claim_moves.go), and its stored claim
// and lease (stored_claim.go).
type Claims struct {
	Claimer *claims.Claimer
	Bodies  *wire.Bodies
	// Query holds the settings of every candidate search.
	Query placement.CandidateQuery
}

// Create serves POST /claims: rank the candidates and claim the best one
// that still fits. 200 with what was written (or, for a dry run, would
// be); 409 berth.no_valid_host when nothing was placed, or
// placement.concurrent_update for a consumer generation mismatch. The
// body is read (wire) and decoded (claim_body.go), read into
// claims.Params, the claimer claims, and the answer is the one its
// write encoded for its retries: each once.
func (h *Claims) Create(c echo.Context) error {
	body, err := h.Bodies.Read(c)
	if err != nil {
		return err
	}
	if isGang(body) {
		return h.createGang(c, body) // gang.go
	}
	_, p, err := h.paramsFrom("", body, claimSchema, claimKind)
	if err != nil {
		return err
	}
	r, err := h.Claimer.Claim(c.Request().Context(), p)
	if err != nil {
		return placement.CandidatesError(err)
	}
	return writeClaimAnswer(c, r)
}

// writeClaimAnswer answers with r's answer (claims' Result.Answer: the
// bytes its write recorded for its retries, encoded once).
func writeClaimAnswer(c echo.Context, r *claims.Result) error {
	b, err := r.Answer()
	if err != nil {
		return err
	}
	return wire.WriteJSONBody(c, http.StatusOK, b)
}

// claimsQueryVersion is the microversion whose GET /allocation_candidates
// rules the selection fields of a claim follow: always the latest.
var claimsQueryVersion = wire.MaxVersion

// Kinds of claim bodies.
const (
	claimKind = iota
	rescheduleKind
	moveKind
	// sampleKind is a sample claim for POST /scriptlets/{name}/test:
	// only the selection is required, nothing is written.
	sampleKind
)

// maxAlternates bounds "alternates".
const maxAlternates = 1000

// claimSchemaText is the body of a claim route. POST /claims needs the
// consumer and its owner; reschedule and move take them from the path
// and the consumer; move needs migration_uuid.
func claimSchemaText(kind int) string {
	extra, required, reasons := `"consumer_uuid": {"type": "string", "format": "uuid"},`,
		`"required": ["consumer_uuid", "project_id", "user_id"],`, `["new", "evacuation", "relocation", "rebalance", "reschedule"]`
	switch kind {
	case rescheduleKind:
		extra, required = `"failed_provider": {"type": "string", "minLength": 1, "maxLength": 255},`, ""
	case moveKind:
		extra, required = `"migration_uuid": {"type": "string", "format": "uuid"},`, `"required": ["migration_uuid"],`
		reasons = `["evacuation", "relocation", "rebalance"]`
	case sampleKind:
		required = `"required": ["resources"],`
	}
	// lease_seconds is checked in code (parseLease): its refusals carry
	// berth.invalid_lease, which a schema error would not.
	lease := `,
		"lease_seconds": {}`
	if kind == sampleKind {
		lease = ""
	}
	return `{
	"type": "object",
	"properties": {` + extra + `
		"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255},
		` + consumerSchemaText + `,
		"consumer_generation": {"type": ["integer", "null"]},
		` + selectionSchemaText() + `,
		"exclude_providers": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 255}},
		"target": {"type": "string", "minLength": 1, "maxLength": 255},
		"policy": {"type": "string", "minLength": 1, "maxLength": 255},
		"reason": {"type": "string", "enum": ` + reasons + `},
		"properties": {"type": "object"},
		"instance": ` + instanceSchemaText + `,
		"keys": {"type": "array", "items": {
			"type": "object",
			"properties": {
				"name": {"type": "string", "minLength": 1, "maxLength": 255},
				"value": {"type": "number"},
				"weight": {"type": "number"},
				"system": {"type": "boolean"}
			},
			"required": ["name", "value"],
			"additionalProperties": false
		}},
		"alternates": {"type": "integer", "minimum": 0, "maximum": ` + fmt.Sprint(maxAlternates) + `},
		"max_attempts": {"type": "integer", "minimum": 1, "maximum": ` + fmt.Sprint(claims.MaxMaxAttempts) + `},
		"dry_run": {"type": "boolean"},
		"priority": {"type": "integer", "minimum": ` + fmt.Sprint(claims.MinPriority) + `, "maximum": ` + fmt.Sprint(claims.MaxPriority) + `},
		"preemptible": {"type": "boolean"}` + lease + `
	},
	` + required + `
	"additionalProperties": false
}`
}

// consumerSchemaText is the properties naming a claim's new consumer
// and its type: a single claim's and a gang member's (gang.go).
const consumerSchemaText = `"name": {"type": "string", "maxLength": 255},
		"consumer_type": {"type": "string", "pattern": "` + placement.ConsumerTypePattern + `", "minLength": 1, "maxLength": 255}`

// selectionSchemaText is the properties of a claim's selection (what to
// place, as GET /allocation_candidates reads it): a single claim's and a
// gang member's (gang.go).
func selectionSchemaText() string {
	strs := `{"type": "array", "items": {"type": "string", "minLength": 1}}`
	group := `"resources": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "integer"}},
		"required": ` + strs + `,
		"member_of": ` + strs + `,
		"in_tree": {"type": "string", "minLength": 1}`
	return group + `,
		"root_required": ` + strs + `,
		"same_subtree": ` + strs + `,
		"group_policy": {"type": "string", "enum": ["none", "isolate"]},
		"groups": {
			"type": "object",
			"patternProperties": {"^[a-zA-Z0-9_-]{1,64}$": {
				"type": "object",
				"properties": {` + group + `},
				"additionalProperties": false
			}},
			"additionalProperties": false
		}`
}

// instanceSchemaText is a claim's "instance": LXD's instance placement
// request (api.InstancesPost with project), the caller's document. The
// fields LXD defines must have LXD's types; other fields are kept as
// they are.
const instanceSchemaText = `{
	"type": "object",
	"properties": {
		"name": {"type": "string"},
		"project": {"type": "string"},
		"type": {"type": "string"},
		"architecture": {"type": "string"},
		"description": {"type": "string"},
		"instance_type": {"type": "string"},
		"restore": {"type": "string"},
		"config": {"type": "object", "additionalProperties": {"type": "string"}},
		"devices": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": {"type": "string"}}},
		"profiles": {"type": "array", "items": {"type": "string"}},
		"source": {"type": "object"},
		"ephemeral": {"type": "boolean"},
		"stateful": {"type": "boolean"},
		"start": {"type": "boolean"}
	}
}`

var (
	claimSchema      = jsonschema.Must(claimSchemaText(claimKind))
	rescheduleSchema = jsonschema.Must(claimSchemaText(rescheduleKind))
	moveSchema       = jsonschema.Must(claimSchemaText(moveKind))
	sampleSchema     = jsonschema.Must(claimSchemaText(sampleKind))
	moveEndSchema    = jsonschema.Must(`{
	"type": "object",
	"properties": {"migration_uuid": {"type": "string", "format": "uuid"}},
	"additionalProperties": false
}`)
)

// DefaultClaimConsumerType is the type of the consumer a claim creates
// when its body names none.
const DefaultClaimConsumerType = "INSTANCE"

// claimBody is the body of a claim route (docs/claims.md).
type claimBody struct {
	ConsumerUUID   string `json:"consumer_uuid"`
	MigrationUUID  string `json:"migration_uuid"`
	FailedProvider string `json:"failed_provider"`
	ProjectID      string `json:"project_id"`
	UserID         string `json:"user_id"`
	Name           string `json:"name"`
	ConsumerType   string `json:"consumer_type"`
	// ConsumerGeneration is nil for null or absent: a new consumer.
	ConsumerGeneration *int64 `json:"consumer_generation"`
	// groupBody, RootRequired, SameSubtree, GroupPolicy and Groups are
	// what to place (selection), each read as GET /allocation_candidates
	// reads its parameter.
	groupBody
	RootRequired     []string                                  `json:"root_required"`
	SameSubtree      []string                                  `json:"same_subtree"`
	GroupPolicy      string                                    `json:"group_policy"`
	Groups           wire.OrderedMap[placement.SelectionGroup] `json:"groups"`
	ExcludeProviders []string                                  `json:"exclude_providers"`
	Target           string                                    `json:"target"`
	Policy           string                                    `json:"policy"`
	Reason           string                                    `json:"reason"`
	Properties       map[string]any                            `json:"properties"`
	Instance         map[string]any                            `json:"instance"`
	Keys             []struct {
		Name   string   `json:"name"`
		Value  float64  `json:"value"`
		Weight *float64 `json:"weight"`
		System bool     `json:"system"`
	} `json:"keys"`
	Alternates  *int `json:"alternates"`
	MaxAttempts int  `json:"max_attempts"`
	DryRun      bool `json:"dry_run"`
	// Priority and Preemptible are the claim's (docs/preemption.md).
	Priority    int64 `json:"priority"`
	Preemptible bool  `json:"preemptible"`
	// LeaseSeconds is the raw value of lease_seconds (parseLease).
	LeaseSeconds json.RawMessage `json:"lease_seconds"`
}

// groupBody is a claim's unsuffixed request group (resources, required,
// member_of, in_tree). It is a type of its own, embedded in claimBody,
// because encoding/json names an embedded field in the path of a
// decoding error and the API's answers have always said
// "groupBody.resources: ..." for such a refusal.
type groupBody placement.SelectionGroup

// selection is b's selection fields, as placement reads them.
func (b *claimBody) selection() placement.Selection {
	return placement.Selection{Group: (*placement.SelectionGroup)(&b.groupBody), RootRequired: b.RootRequired,
		SameSubtree: b.SameSubtree, GroupPolicy: b.GroupPolicy, Groups: &b.Groups}
}

// params decodes the body of a claim route into claims.Params. The
// selection fields are checked as GET /allocation_candidates checks its
// query at the latest microversion; for reschedule and move they may be
// left out (the consumer's current resources then).
func (h *Claims) params(c echo.Context, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	var b claimBody
	body, err := h.Bodies.DecodeRaw(c, schema, &b)
	if err != nil {
		return b, claims.Params{}, err
	}
	p, err := h.paramsOf(c.Param("consumer_uuid"), body, &b, kind)
	return b, p, err
}

// paramsFrom is params of a body already read; consumer is the path's
// consumer uuid (reschedule and move). A claim's body is decoded in one
// pass (claim_body.go) when it can be; any other body, and any refusal,
// by wire against schema.
func (h *Claims) paramsFrom(consumer string, body []byte, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	b, ok := claimBody{}, false
	if kind == claimKind {
		b, ok = decodeClaimBody(body)
	}
	if !ok {
		// Decoded through an interface: into a body of its own, so
		// that b stays off the heap for the bodies decoded above.
		wb := new(claimBody)
		err := wire.DecodeJSON(body, schema, wb)
		if b = *wb; err != nil {
			return b, claims.Params{}, err
		}
	}
	p, err := h.paramsOf(consumer, body, &b, kind)
	return b, p, err
}

// SampleParams reads body as the sample claim of a scriptlet test (the
// console's, which has no request body of its own): only the selection
// is required, and nothing is to be written.
func (h *Claims) SampleParams(body []byte) (claims.Params, error) {
	_, p, err := h.paramsFrom("", body, sampleSchema, sampleKind)
	return p, err
}

// paramsOf is claims.Params of b, decoded from body.
func (h *Claims) paramsOf(consumer string, body []byte, b *claimBody, kind int) (claims.Params, error) {
	p := claims.Params{
		ConsumerUUID:       b.ConsumerUUID,
		ProjectID:          b.ProjectID,
		UserID:             b.UserID,
		ConsumerType:       b.ConsumerType,
		ConsumerGeneration: b.ConsumerGeneration,
		Exclude:            b.ExcludeProviders,
		Target:             b.Target,
		MaxAttempts:        b.MaxAttempts,
		Name:               b.Name,
		Reason:             b.Reason,
		Properties:         b.Properties,
		Instance:           b.Instance,
		Policy:             b.Policy,
		Alternates:         claims.DefaultAlternates,
		DryRun:             b.DryRun,
		Priority:           b.Priority,
		Preemptible:        b.Preemptible,
	}
	if kind == claimKind && p.ConsumerType == "" && p.ConsumerGeneration == nil {
		// A new consumer is an instance unless the claim says otherwise;
		// an existing one keeps its type (a migration consumer stays
		// MIGRATION).
		p.ConsumerType = DefaultClaimConsumerType
	}
	onConsumer := kind == rescheduleKind || kind == moveKind
	if onConsumer {
		p.ConsumerUUID = consumer
		if !uuid.Valid(p.ConsumerUUID) {
			return p, wire.BadRequest("Malformed consumer_uuid: %s", p.ConsumerUUID)
		}
	}
	if kind != sampleKind {
		p.Request = body
		var err error
		if p.LeaseSeconds, err = parseLease(b.LeaseSeconds); err != nil {
			return p, err
		}
	}
	if b.Alternates != nil {
		p.Alternates = *b.Alternates
	}
	for _, k := range b.Keys {
		kr := scheduler.KeyRequest{Name: k.Name, Value: k.Value, Weight: 1, System: k.System}
		if k.Weight != nil {
			kr.Weight = *k.Weight
		}
		p.Keys = append(p.Keys, kr)
	}
	cp, selected, err := h.Query.FromSelection(b.selection(), claimsQueryVersion)
	if !selected && onConsumer {
		return p, nil // what the consumer holds now
	}
	if err != nil {
		return p, err
	}
	p.Candidates = cp
	return p, nil
}

// parseLease reads lease_seconds: absent or null, no lease (nil); an
// integer, that many seconds (its range is the claims package's to
// check); anything else is 400 berth.invalid_lease.
func parseLease(raw json.RawMessage) (*int64, error) {
	v := strings.TrimSpace(string(raw))
	if v == "" || v == "null" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, wire.NewError(http.StatusBadRequest, fault.CodeInvalidLease,
			"Invalid lease_seconds %s: want an integer number of seconds, or null for no lease.", v)
	}
	return &n, nil
}
