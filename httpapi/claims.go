package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Berth's claims extension: select and claim in one request. These routes
// exist at every microversion (Placement has no equivalent); error bodies
// carry a "code" from 1.23 on, as for every route.
func init() {
	routeRegistrations = append(routeRegistrations, func(s *Server) {
		s.handle(http.MethodPost, "/claims", 0, "berth:claims:create", s.claimCreate)
		s.handle(http.MethodPost, "/claims/reschedule", 0, "berth:claims:reschedule", s.claimReschedule)
		s.handle(http.MethodPost, "/claims/move", 0, "berth:claims:move", s.claimMove)
		s.handle(http.MethodPost, "/claims/explain", 0, "berth:claims:explain", s.claimExplain)
	})
}

// claimsQueryVersion is the microversion whose GET /allocation_candidates
// rules the "query" of a claim follows: always the latest.
var claimsQueryVersion = MaxVersion

// Kinds of claim bodies.
const (
	claimKind = iota
	rescheduleKind
	moveKind
	explainKind
)

// claimSchemaText is the body of a POST /claims route: /claims needs the
// consumer's owner, /claims/reschedule and /claims/move take it from the
// consumer, /claims/move also needs migration_uuid, and /claims/explain
// needs only the query.
func claimSchemaText(kind int) string {
	required := `"consumer_uuid", "project_id", "user_id", "query"`
	switch kind {
	case rescheduleKind:
		required = `"consumer_uuid", "query"`
	case moveKind:
		required = `"consumer_uuid", "migration_uuid", "query"`
	case explainKind:
		required = `"query"`
	}
	migration := ""
	if kind == moveKind {
		migration = `"migration_uuid": {"type": "string", "format": "uuid"},`
	}
	return `{
	"type": "object",
	"properties": {
		"consumer_uuid": {"type": "string", "format": "uuid"},` + migration + `
		"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"consumer_type": {"type": "string", "pattern": "` + consumerTypePattern + `", "minLength": 1, "maxLength": 255},
		"consumer_generation": {"type": ["integer", "null"]},
		"query": {
			"type": "object",
			"additionalProperties": {"type": ["string", "array"], "items": {"type": "string"}, "minItems": 1}
		},
		"avoid_providers": {"type": "array", "items": {"type": "string", "format": "uuid"}},
		"max_attempts": {"type": "integer", "minimum": 1, "maximum": ` + fmt.Sprint(claims.MaxMaxAttempts) + `},
		"limit": {"type": "integer", "minimum": 1}
	},
	"required": [` + required + `],
	"additionalProperties": false
}`
}

var (
	claimSchema      = MustSchema(claimSchemaText(claimKind))
	rescheduleSchema = MustSchema(claimSchemaText(rescheduleKind))
	moveSchema       = MustSchema(claimSchemaText(moveKind))
	explainSchema    = MustSchema(claimSchemaText(explainKind))
)

// claimBody is a claim request. Query mirrors the query parameters of GET
// /allocation_candidates: a string per key, or a list of strings for a
// repeated key (required, member_of).
type claimBody struct {
	ConsumerUUID  string `json:"consumer_uuid"`
	MigrationUUID string `json:"migration_uuid"`
	ProjectID     string `json:"project_id"`
	UserID        string `json:"user_id"`
	ConsumerType  string `json:"consumer_type"`
	// ConsumerGeneration is present-and-null (a new consumer) unless set.
	ConsumerGeneration *int64                      `json:"consumer_generation"`
	Query              orderedMap[json.RawMessage] `json:"query"`
	AvoidProviders     []string                    `json:"avoid_providers"`
	MaxAttempts        int                         `json:"max_attempts"`
	Limit              int                         `json:"limit"`
}

// params turns the body into claims.Params, parsing the query with the
// rules of GET /allocation_candidates at the latest microversion.
func (s *Server) claimParams(c echo.Context, schema *Schema) (claimBody, claims.Params, error) {
	var b claimBody
	if err := s.decodeBody(c, schema, &b); err != nil {
		return b, claims.Params{}, err
	}
	var q orderedQuery
	doc := map[string]any{}
	for _, k := range b.Query.Keys {
		raw := b.Query.Values[k]
		var one string
		var many []string
		if err := json.Unmarshal(raw, &one); err == nil {
			many = []string{one}
		} else if err := json.Unmarshal(raw, &many); err != nil {
			return b, claims.Params{}, badRequest("JSON does not validate: query %s: %v", k, err)
		}
		for _, v := range many {
			q = append(q, queryParam{k, v})
		}
		doc[k] = many[len(many)-1]
	}
	if err := candidatesSchema(claimsQueryVersion).Validate(doc); err != nil {
		return b, claims.Params{}, badRequest("Invalid query: %s", err)
	}
	cp, err := s.candidatesParams(q, claimsQueryVersion)
	if err != nil {
		return b, claims.Params{}, err
	}
	return b, claims.Params{
		ConsumerUUID:       b.ConsumerUUID,
		ProjectID:          b.ProjectID,
		UserID:             b.UserID,
		ConsumerType:       b.ConsumerType,
		ConsumerGeneration: b.ConsumerGeneration,
		Candidates:         cp,
		Avoid:              b.AvoidProviders,
		MaxAttempts:        b.MaxAttempts,
	}, nil
}

// claimCreate serves POST /claims: rank the candidates and claim the best
// one that still fits. 200 with the allocations written; 409 with
// berth.claims.not_placed and an explanation when nothing was placed, or
// placement.concurrent_update for a consumer generation mismatch.
func (s *Server) claimCreate(c echo.Context) error {
	_, p, err := s.claimParams(c, claimSchema)
	if err != nil {
		return err
	}
	r, err := s.claims.Claim(c.Request().Context(), p)
	if err != nil {
		return candidatesError(err)
	}
	return writeJSON(c, http.StatusOK, claimResponse(r))
}

// claimReschedule serves POST /claims/reschedule: claim again for an
// existing consumer, away from the roots it is on now, replacing its
// allocations atomically. consumer_generation, if given, must match.
func (s *Server) claimReschedule(c echo.Context) error {
	_, p, err := s.claimParams(c, rescheduleSchema)
	if err != nil {
		return err
	}
	r, err := s.claims.Reschedule(c.Request().Context(), p)
	if err != nil {
		return candidatesError(err)
	}
	return writeJSON(c, http.StatusOK, claimResponse(r))
}

// claimMove serves POST /claims/move: a migration claim. The new consumer
// migration_uuid takes over the consumer's current allocations and the
// consumer gets a destination away from its current roots, in one
// transaction. The response's "held" shows the migration consumer's.
func (s *Server) claimMove(c echo.Context) error {
	b, p, err := s.claimParams(c, moveSchema)
	if err != nil {
		return err
	}
	r, err := s.claims.Move(c.Request().Context(), p, b.MigrationUUID)
	if err != nil {
		return candidatesError(err)
	}
	return writeJSON(c, http.StatusOK, claimResponse(r))
}

// claimExplain serves POST /claims/explain: the ranking a claim would try,
// with scores and rejection counts. Nothing is written.
func (s *Server) claimExplain(c echo.Context) error {
	b, p, err := s.claimParams(c, explainSchema)
	if err != nil {
		return err
	}
	ex, err := s.claims.Explain(c.Request().Context(), p)
	if err != nil {
		return candidatesError(err)
	}
	limit := b.Limit
	if limit == 0 {
		limit = 10
	}
	r := ex.Ranking
	ranked := []any{}
	for i, sc := range r.Ranked {
		if i >= limit {
			break
		}
		ranked = append(ranked, map[string]any{
			"rank":               i,
			"root_provider_uuid": sc.Cand.Root(),
			"score":              sc.Score,
			"weights":            sc.Weights,
			"allocations":        allocationsJSON(candidateAllocations(sc.Cand)),
			"mappings":           sc.Cand.Mappings,
		})
	}
	out := map[string]any{
		"candidates_considered": r.Considered,
		"candidates_ranked":     len(r.Ranked),
		"rejections":            rejectionsJSON(r.Rejections),
		"chosen_by_scriptlet":   r.Chosen,
		"ranked":                ranked,
		"refused":               nil,
	}
	if ex.Refusal != "" {
		out["refused"] = ex.Refusal
	}
	return writeJSON(c, http.StatusOK, out)
}

func claimResponse(r *claims.Result) map[string]any {
	attempts := make([]any, len(r.Attempts))
	for i, a := range r.Attempts {
		var e any
		if a.Error != "" {
			e = a.Error
		}
		attempts[i] = map[string]any{"root_provider_uuid": a.Root, "providers": a.Providers, "error": e}
	}
	out := map[string]any{
		"consumer_uuid":         r.ConsumerUUID,
		"allocations":           allocationsJSON(r.Allocations),
		"mappings":              r.Mappings,
		"root_provider_uuid":    r.Root,
		"score":                 r.Score,
		"attempts":              attempts,
		"candidates_considered": r.Considered,
		"rejections":            rejectionsJSON(r.Rejections),
	}
	if len(r.With) > 0 {
		held := map[string]any{}
		for _, w := range r.With {
			held[w.ConsumerUUID] = map[string]any{"allocations": allocationsJSON(w.Allocations)}
		}
		out["held"] = held
	}
	return out
}

// allocationsJSON renders allocations as PUT /allocations takes them:
// provider uuid -> {"resources": {class: amount}}.
func allocationsJSON(allocs []ledger.ProviderResources) map[string]any {
	out := make(map[string]any, len(allocs))
	for _, pr := range allocs {
		res := make(map[string]int64, len(pr.Resources))
		for _, r := range pr.Resources {
			res[r.Class] = r.Amount
		}
		out[pr.ProviderUUID] = map[string]any{"resources": res}
	}
	return out
}

func candidateAllocations(c *scheduler.Candidate) []ledger.ProviderResources {
	out := make([]ledger.ProviderResources, 0, len(c.Allocations))
	for _, a := range c.Allocations {
		pr := ledger.ProviderResources{ProviderUUID: a.ProviderUUID}
		for class, n := range a.Resources {
			pr.Resources = append(pr.Resources, ledger.Resource{Class: class, Amount: n})
		}
		out = append(out, pr)
	}
	return out
}

// rejectionsJSON lists every filter that ran, in order, with its counts.
func rejectionsJSON(counts []scheduler.FilterCount) []any {
	out := make([]any, len(counts))
	for i, fc := range counts {
		out[i] = map[string]any{"unit": fc.Unit, "kind": "filter", "removed": fc.Removed, "remaining": fc.Remaining, "reasons": fc.Reasons}
	}
	return out
}
