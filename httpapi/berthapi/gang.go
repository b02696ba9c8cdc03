package berthapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/jsonschema"
)

// Gang claims (docs/gangs.md): POST /claims with "members" places every
// member or none, in one domain (claims.Gangs). This file follows such a
// request: the body and its schema, the body read into
// claims.GangParams, and the answer, or the 409 that says per domain how
// many members fit and what stopped the rest.

// gangSchemaText is the body of a gang claim: shared owner, members
// (each a single claim's consumer and selection), spread and domain.
func gangSchemaText() string {
	return `{
	"type": "object",
	"properties": {
		"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"members": {"type": "array", "minItems": 1, "maxItems": ` + fmt.Sprint(claims.MaxGangMembers) + `, "items": {
			"type": "object",
			"properties": {
				"consumer_uuid": {"type": "string", "format": "uuid"},
				` + consumerSchemaText + `,
				` + selectionSchemaText() + `,
				"properties": {"type": "object"}
			},
			"required": ["consumer_uuid", "resources"],
			"additionalProperties": false
		}},
		"spread": {"type": "string", "enum": ["` + claims.SpreadHosts + `"]},
		"domain": {
			"type": "object",
			"properties": {
				"member_of": ` + gangLevelSchema + `,
				"fallback": {"type": "array", "minItems": 1, "maxItems": ` + fmt.Sprint(claims.MaxGangLevels) + `, "items": {
					"type": "object",
					"properties": {"member_of": ` + gangLevelSchema + `},
					"required": ["member_of"],
					"additionalProperties": false
				}}
			},
			"required": ["member_of"],
			"additionalProperties": false
		},
		"min_count": {"type": "integer", "minimum": 1, "maximum": ` + fmt.Sprint(claims.MaxGangMembers) + `},
		"policy": {"type": "string", "minLength": 1, "maxLength": 255},
		"max_attempts": {"type": "integer", "minimum": 1, "maximum": ` + fmt.Sprint(claims.MaxMaxAttempts) + `},
		"dry_run": {"type": "boolean"},
		"lease_seconds": {}
	},
	"required": ["members", "project_id", "user_id"],
	"additionalProperties": false
}`
}

// gangLevelSchema is one level of a gang's domain: aggregate uuids.
var gangLevelSchema = `{"type": "array", "minItems": 1, "maxItems": ` + fmt.Sprint(claims.MaxGangDomains) + `,
	"items": {"type": "string", "format": "uuid"}}`

var gangSchema = jsonschema.Must(gangSchemaText())

// gangBody is the body of a gang claim.
type gangBody struct {
	ProjectID string            `json:"project_id"`
	UserID    string            `json:"user_id"`
	Members   []json.RawMessage `json:"members"`
	Spread    string            `json:"spread"`
	Domain    *struct {
		MemberOf []string `json:"member_of"`
		Fallback []struct {
			MemberOf []string `json:"member_of"`
		} `json:"fallback"`
	} `json:"domain"`
	MinCount     int             `json:"min_count"`
	Policy       string          `json:"policy"`
	MaxAttempts  int             `json:"max_attempts"`
	DryRun       bool            `json:"dry_run"`
	LeaseSeconds json.RawMessage `json:"lease_seconds"`
}

// isGang reports whether body, a claim's, is a gang's: an object with
// "members". The cheap look comes first, so a single claim pays for no
// second parse.
func isGang(body []byte) bool {
	if !bytes.Contains(body, []byte(`"members"`)) {
		return false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return false // the single claim's decoding words the error
	}
	_, ok := probe["members"]
	return ok
}

// createGang serves POST /claims with "members": 200 with every member's
// place and the domain chosen (for a dry run: would be, with the
// ranking of domains); 409 berth.no_valid_host with "domains" when no
// domain holds the gang, and "refusal" too when the policy's scriptlet
// refused it; 403 berth.over_quota when its project's limits do not.
func (h *Claims) createGang(c echo.Context, body []byte) error {
	p, err := h.gangParams(body)
	if err != nil {
		return err
	}
	r, err := claims.NewGangs(h.Claimer).Claim(c.Request().Context(), p)
	var np *claims.GangNotPlacedError
	if errors.As(err, &np) {
		code := fault.CodeNoValidHost
		if np.Conflicts {
			code = fault.CodeClaimConflict
		}
		return &wire.Error{Status: http.StatusConflict, Code: code, Msg: np.Error(), Domains: gangDomainsJSON(np.Domains),
			Refusal: np.Refusal}
	}
	if err != nil {
		return placement.CandidatesError(err)
	}
	return wire.WriteJSON(c, http.StatusOK, gangResponse(r, p.MinCount))
}

// gangParams reads body into claims.GangParams: each member as a single
// claim's selection, its stored request the member's object with the
// gang's owner (what a single claim of it would have sent).
func (h *Claims) gangParams(body []byte) (claims.GangParams, error) {
	var b gangBody
	if err := wire.DecodeJSON(body, gangSchema, &b); err != nil {
		return claims.GangParams{}, err
	}
	p := claims.GangParams{ProjectID: b.ProjectID, UserID: b.UserID, Spread: b.Spread, MaxAttempts: b.MaxAttempts, DryRun: b.DryRun,
		MinCount: b.MinCount, Policy: b.Policy}
	var err error
	if p.LeaseSeconds, err = parseLease(b.LeaseSeconds); err != nil {
		return p, err
	}
	if b.Domain != nil {
		p.Domains = b.Domain.MemberOf
		for _, level := range b.Domain.Fallback {
			p.Fallback = append(p.Fallback, level.MemberOf)
		}
	}
	for i, raw := range b.Members {
		var mb claimBody
		if err := json.Unmarshal(raw, &mb); err != nil {
			return p, wire.DecodeError(err)
		}
		cp, _, err := h.Query.FromSelection(mb.selection(), claimsQueryVersion)
		if err != nil {
			var we *wire.Error
			if errors.As(err, &we) {
				return p, &wire.Error{Status: we.Status, Code: we.Code, Msg: fmt.Sprintf("Member %d (%s): %s", i, mb.ConsumerUUID, we.Msg)}
			}
			return p, err
		}
		m := claims.GangMember{ConsumerUUID: mb.ConsumerUUID, ConsumerType: mb.ConsumerType, Name: mb.Name,
			Properties: mb.Properties, Candidates: cp}
		if m.ConsumerType == "" {
			m.ConsumerType = DefaultClaimConsumerType
		}
		if m.Request, err = memberRequest(raw, b.ProjectID, b.UserID); err != nil {
			return p, err
		}
		p.Members = append(p.Members, m)
	}
	return p, nil
}

// memberRequest is a member's object with the gang's owner: the request
// a single claim of the member would have sent.
func memberRequest(raw json.RawMessage, project, user string) ([]byte, error) {
	var obj map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // amounts as sent
	if err := d.Decode(&obj); err != nil {
		return nil, wire.DecodeError(err)
	}
	obj["project_id"], obj["user_id"] = project, user
	return json.Marshal(obj)
}

// gangAnswer is the answer to a gang claim, fields in name order.
type gangAnswer struct {
	Attempts int `json:"attempts"`
	// Domain is the domain chosen: {"member_of": aggregate}, null for a
	// gang asked without domains.
	Domain  *gangDomainChosen `json:"domain"`
	Domains []gangDomainJSON  `json:"domains"`
	DryRun  bool              `json:"dry_run"`
	// GangID is the gang's id (empty for a dry run).
	GangID  string           `json:"gang_id"`
	Members []gangMemberJSON `json:"members"`
	// Placed is how many members were placed, and Unplaced the others
	// (only for a gang with min_count).
	Placed   *int              `json:"placed,omitempty"`
	Quota    *claims.QuotaJSON `json:"quota,omitempty"`
	Unplaced []string          `json:"unplaced,omitempty"`
}

type gangDomainChosen struct {
	MemberOf string `json:"member_of"`
}

type gangMemberJSON struct {
	Allocations        map[string]any      `json:"allocations"`
	ConsumerGeneration int64               `json:"consumer_generation"`
	ConsumerUUID       string              `json:"consumer_uuid"`
	Mappings           map[string][]string `json:"mappings"`
	RootProviderName   string              `json:"root_provider_name"`
	RootProviderUUID   string              `json:"root_provider_uuid"`
}

// gangDomainJSON is one domain: how many members fit at most (fits, of
// members), on how many root providers, and for one that does not hold
// the gang the first member that did not fit (stopped_at) and why, root
// by root (reasons).
type gangDomainJSON struct {
	Fits      int            `json:"fits"`
	MemberOf  *string        `json:"member_of"`
	Reasons   map[string]int `json:"reasons"`
	Roots     int            `json:"roots"`
	StoppedAt *string        `json:"stopped_at"`
}

func gangDomainsJSON(ds []claims.GangDomain) []gangDomainJSON {
	out := make([]gangDomainJSON, len(ds))
	for i, d := range ds {
		out[i] = gangDomainJSON{Fits: d.Fits, Roots: d.Roots, Reasons: d.Reasons}
		if d.Aggregate != "" {
			agg := d.Aggregate
			out[i].MemberOf = &agg
		}
		if d.Stopped != "" {
			st := d.Stopped
			out[i].StoppedAt = &st
		}
	}
	return out
}

func gangResponse(r *claims.GangResult, minCount int) *gangAnswer {
	out := &gangAnswer{Attempts: r.Attempts, DryRun: r.DryRun, GangID: r.ID, Domains: gangDomainsJSON(r.Domains)}
	if r.Domain != "" {
		out.Domain = &gangDomainChosen{MemberOf: r.Domain}
	}
	if minCount > 0 {
		n := len(r.Members)
		out.Placed, out.Unplaced = &n, r.Unplaced
	}
	out.Members = make([]gangMemberJSON, len(r.Members))
	for i, m := range r.Members {
		out.Members[i] = gangMemberJSON{Allocations: claims.AllocationsMap(m.Allocations), ConsumerGeneration: m.ConsumerGeneration,
			ConsumerUUID: m.ConsumerUUID, Mappings: m.Mappings, RootProviderName: m.RootName, RootProviderUUID: m.Root}
	}
	out.Quota = claims.QuotaAnswer(r.Quota)
	return out
}
