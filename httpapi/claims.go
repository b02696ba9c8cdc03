package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// Berth's claims extension: select and claim in one request, reschedule,
// move, confirm and revert. These routes exist at every microversion
// (Placement has no equivalent); error bodies carry a "code" from 1.23 on,
// as for every route. The contract is in docs/claims.md.

// claimsQueryVersion is the microversion whose GET /allocation_candidates
// rules the selection fields of a claim follow: always the latest.
var claimsQueryVersion = MaxVersion

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
	strs := `{"type": "array", "items": {"type": "string", "minLength": 1}}`
	group := `"resources": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "integer"}},
		"required": ` + strs + `,
		"member_of": ` + strs + `,
		"in_tree": {"type": "string", "minLength": 1}`
	return `{
	"type": "object",
	"properties": {` + extra + `
		"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"name": {"type": "string", "maxLength": 255},
		"consumer_type": {"type": "string", "pattern": "` + consumerTypePattern + `", "minLength": 1, "maxLength": 255},
		"consumer_generation": {"type": ["integer", "null"]},
		` + group + `,
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
		},
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
		"dry_run": {"type": "boolean"}` + lease + `
	},
	` + required + `
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

// groupBody is one request group in JSON form.
type groupBody struct {
	Resources orderedMap[json.Number] `json:"resources"`
	Required  []string                `json:"required"`
	MemberOf  []string                `json:"member_of"`
	InTree    string                  `json:"in_tree"`
}

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
	groupBody
	RootRequired     []string              `json:"root_required"`
	SameSubtree      []string              `json:"same_subtree"`
	GroupPolicy      string                `json:"group_policy"`
	Groups           orderedMap[groupBody] `json:"groups"`
	ExcludeProviders []string              `json:"exclude_providers"`
	Target           string                `json:"target"`
	Policy           string                `json:"policy"`
	Reason           string                `json:"reason"`
	Properties       map[string]any        `json:"properties"`
	Instance         map[string]any        `json:"instance"`
	Keys             []struct {
		Name   string   `json:"name"`
		Value  float64  `json:"value"`
		Weight *float64 `json:"weight"`
		System bool     `json:"system"`
	} `json:"keys"`
	Alternates  *int `json:"alternates"`
	MaxAttempts int  `json:"max_attempts"`
	DryRun      bool `json:"dry_run"`
	// LeaseSeconds is the raw value of lease_seconds (parseLease).
	LeaseSeconds json.RawMessage `json:"lease_seconds"`
}

// selects reports whether g has any selection field.
func (g *groupBody) selects() bool {
	return len(g.Resources.Keys) > 0 || len(g.Required) > 0 || len(g.MemberOf) > 0 || g.InTree != ""
}

// parse reads g as the request group suffix: each field's values as GET
// /allocation_candidates reads the parameter of that name at microversion
// v, with the same messages, in the same order (resources, required,
// member_of, in_tree).
func (g *groupBody) parse(suffix string, v Version) (*parsedGroup, error) {
	pg := &parsedGroup{RequestGroup: engine.RequestGroup{Suffix: suffix}}
	var resources resourceList
	for _, class := range g.Resources.Keys {
		amount := g.Resources.Values[class].String()
		if strings.ContainsAny(class, ",:") {
			// The query syntax's separators: never in a class name.
			return nil, badlyFormedResources(class + ":" + amount)
		}
		if err := resources.add(class, amount); err != nil {
			return nil, err
		}
	}
	pg.Resources = resources.list
	var err error
	if len(g.Required) > 0 {
		if pg.RequiredTraits, pg.ForbiddenTraits, err = requiredTraits(g.Required, v); err != nil {
			return nil, err
		}
		pg.hasRequired = len(pg.RequiredTraits) > 0
	}
	if len(g.MemberOf) > 0 {
		if pg.MemberOf, pg.ForbiddenAggregates, err = memberOf(g.MemberOf, suffix, v); err != nil {
			return nil, err
		}
		pg.hasMemberOf = len(pg.MemberOf) > 0 || len(pg.ForbiddenAggregates) > 0
	}
	if g.InTree != "" {
		if pg.InTree, err = parseInTree(g.InTree); err != nil {
			return nil, err
		}
	}
	return pg, nil
}

// candidates builds the candidate search of the claim's selection fields,
// checked as GET /allocation_candidates checks its query at microversion
// v, with the same messages: request-wide fields first, then the groups
// (the unsuffixed one, then "groups" in the order written), then the
// checks across groups. selected is false when b has no selection field.
func (s *Server) claimCandidates(b *claimBody, v Version) (p engine.CandidatesParams, selected bool, err error) {
	p = s.newCandidatesParams(v)
	selected = len(b.RootRequired) > 0 || len(b.SameSubtree) > 0 || b.GroupPolicy != "" || b.groupBody.selects()
	for _, suffix := range b.Groups.Keys {
		g := b.Groups.Values[suffix]
		selected = selected || g.selects()
	}
	if len(b.RootRequired) > 0 {
		// One comma-separated list, as in the query: messages quote it whole.
		if err := parseRootRequired(strings.Join(b.RootRequired, ","), &p); err != nil {
			return p, selected, err
		}
	}
	if err := parseSameSubtrees(b.SameSubtree, &p); err != nil {
		return p, selected, err
	}
	var groups []*parsedGroup
	add := func(g *groupBody, suffix string) error {
		if !g.selects() {
			return nil
		}
		pg, err := g.parse(suffix, v)
		if err == nil {
			groups = append(groups, pg)
		}
		return err
	}
	if err := add(&b.groupBody, ""); err != nil {
		return p, selected, err
	}
	for _, suffix := range b.Groups.Keys {
		g := b.Groups.Values[suffix]
		if err := add(&g, suffix); err != nil {
			return p, selected, err
		}
	}
	if p.Groups, err = checkGroups(groups, v, p.SameSubtrees); err != nil {
		return p, selected, err
	}
	var policy []string
	if b.GroupPolicy != "" {
		policy = []string{b.GroupPolicy}
	}
	return p, selected, applyGroupPolicy(&p, policy)
}

// claimParams decodes the body of a claim route into claims.Params. The
// selection fields are checked as GET /allocation_candidates checks its
// query at the latest microversion; for reschedule and move they may be
// left out (the consumer's current resources then).
func (s *Server) claimParams(c echo.Context, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	body, err := s.readBody(c)
	if err != nil {
		return claimBody{}, claims.Params{}, err
	}
	return s.claimParamsFrom(c.Param("consumer_uuid"), body, schema, kind)
}

// claimParamsFrom is claimParams of the body read; consumer is the path's
// consumer uuid (reschedule and move).
func (s *Server) claimParamsFrom(consumer string, body []byte, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	var b claimBody
	if err := decodeJSON(body, schema, &b); err != nil {
		return b, claims.Params{}, err
	}
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
			return b, p, badRequest("Malformed consumer_uuid: %s", p.ConsumerUUID)
		}
	}
	if kind != sampleKind {
		p.Request = body
		var err error
		if p.LeaseSeconds, err = parseLease(b.LeaseSeconds); err != nil {
			return b, p, err
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
	cp, selected, err := s.claimCandidates(&b, claimsQueryVersion)
	if !selected && onConsumer {
		return b, p, nil // what the consumer holds now
	}
	if err != nil {
		return b, p, err
	}
	p.Candidates = cp
	return b, p, nil
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
		return nil, newError(http.StatusBadRequest, fault.CodeInvalidLease,
			"Invalid lease_seconds %s: want an integer number of seconds, or null for no lease.", v)
	}
	return &n, nil
}

// reusedFields are the request fields a reschedule or move takes from the
// consumer's stored claim when its body leaves them out, in the order the
// answer lists them: the selection, where not to place, and what the
// policy and scriptlets see (instance, LXD's request, as LXD gives a
// scriptlet the instance it moves). Not reused: the owner, type and
// generation (the consumer's own, as before), target (it pinned where the
// consumer is), reason, alternates, max_attempts, dry_run and
// lease_seconds (the stored claim's lease carries over by its own rules).
var reusedFields = []string{"resources", "required", "member_of", "in_tree", "groups", "root_required",
	"same_subtree", "group_policy", "exclude_providers", "name", "properties", "instance", "keys", "policy"}

// claimOnConsumer decodes the body of a reschedule or move (kind) and
// redoes the consumer's stored request under it: every field of
// reusedFields that the body leaves out is taken from the request stored
// with the consumer's claim (a body field, even empty, overrides its
// stored one). The merged request is checked as a body would be, and is
// what the write stores. A consumer without a stored claim (allocations
// written through the Placement API) gets today's defaults: what it holds
// now. The answer says which it was (claims.Reused).
func (s *Server) claimOnConsumer(c echo.Context, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	body, err := s.readBody(c)
	if err != nil {
		return claimBody{}, claims.Params{}, err
	}
	return s.redoStored(c.Request().Context(), c.Param("consumer_uuid"), body, schema, kind)
}

// redoStored is claimOnConsumer of the body read, for consumer.
func (s *Server) redoStored(ctx context.Context, consumer string, body []byte, schema *jsonschema.Schema, kind int) (claimBody, claims.Params, error) {
	b, p, err := s.claimParamsFrom(consumer, body, schema, kind)
	if err != nil {
		return b, p, err
	}
	stored, err := s.claims.StoredRequest(ctx, p.ConsumerUUID)
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
			if b, p, err = s.claimParamsFrom(consumer, merged, schema, kind); err != nil {
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
			return nil, nil, badRequest("Malformed JSON: %v", err)
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

// claimCreate serves POST /claims: rank the candidates and claim the best
// one that still fits. 200 with what was written (or, for a dry run,
// would be); 409 berth.no_valid_host when nothing was placed, or
// placement.concurrent_update for a consumer generation mismatch.
func (s *Server) claimCreate(c echo.Context) error {
	_, p, err := s.claimParams(c, claimSchema, claimKind)
	if err != nil {
		return err
	}
	r, err := s.claims.Claim(c.Request().Context(), p)
	if err != nil {
		return candidatesError(err)
	}
	return writeJSON(c, http.StatusOK, claimResponse(r))
}

// claimReschedule serves POST /claims/{consumer_uuid}/reschedule: claim
// again, away from every provider the consumer failed on, replacing its
// allocations atomically.
func (s *Server) claimReschedule(c echo.Context) error {
	b, p, err := s.claimOnConsumer(c, rescheduleSchema, rescheduleKind)
	if err != nil {
		return err
	}
	r, err := s.claims.Reschedule(c.Request().Context(), p, b.FailedProvider)
	if err != nil {
		return candidatesError(err)
	}
	return writeJSON(c, http.StatusOK, claimResponse(r))
}

// claimMove serves POST /claims/{consumer_uuid}/move: a migration claim.
// The migration consumer takes over the consumer's current allocations
// and the consumer gets a destination away from its current roots, in
// one transaction.
func (s *Server) claimMove(c echo.Context) error {
	b, p, err := s.claimOnConsumer(c, moveSchema, moveKind)
	if err != nil {
		return err
	}
	r, err := s.claims.Move(c.Request().Context(), p, b.MigrationUUID)
	if err != nil {
		return candidatesError(err)
	}
	return writeJSON(c, http.StatusOK, claimResponse(r))
}

// claimConfirm serves POST /claims/{consumer_uuid}/move/confirm.
func (s *Server) claimConfirm(c echo.Context) error {
	return s.moveEnd(c, s.claims.Confirm)
}

// claimRevert serves POST /claims/{consumer_uuid}/move/revert.
func (s *Server) claimRevert(c echo.Context) error {
	return s.moveEnd(c, s.claims.Revert)
}

// moveEnd decodes the optional body of confirm and revert and runs end.
func (s *Server) moveEnd(c echo.Context, end func(ctx context.Context, consumer, migration string) (*claims.Holding, error)) error {
	consumer := c.Param("consumer_uuid")
	if !uuid.Valid(consumer) {
		return badRequest("Malformed consumer_uuid: %s", consumer)
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b struct {
		MigrationUUID string `json:"migration_uuid"`
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := decodeJSON(body, moveEndSchema, &b); err != nil {
			return err
		}
	}
	h, err := end(c.Request().Context(), consumer, b.MigrationUUID)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, map[string]any{
		"consumer_uuid":       h.ConsumerUUID,
		"consumer_generation": h.ConsumerGeneration,
		"allocations":         allocationsJSON(h.Allocations),
	})
}

// claimAnswer is the answer to a claim. Its fields are in name order, the
// order encoding/json gives a map's keys, so the answer reads as it did
// when it was built from maps; structs cost fewer allocations.
type claimAnswer struct {
	Allocations        map[string]any      `json:"allocations"`
	Alternates         []alternateJSON     `json:"alternates"`
	Attempts           int                 `json:"attempts"`
	ConsumerGeneration int64               `json:"consumer_generation"`
	ConsumerUUID       string              `json:"consumer_uuid"`
	DryRun             bool                `json:"dry_run"`
	Mappings           map[string][]string `json:"mappings"`
	Migration          *migrationJSON      `json:"migration,omitempty"`
	// Quota is a dry run's quota check (docs/quotas.md).
	Quota *quotaJSON `json:"quota,omitempty"`
	// Ranking and ScriptletLog are set (possibly to empty slices) for dry
	// runs only.
	Ranking any `json:"ranking,omitempty"`
	// Reused is set for reschedules and moves: what their request took
	// from the consumer's stored claim or allocations.
	Reused           *reusedJSON `json:"reused,omitempty"`
	RootProviderName string      `json:"root_provider_name"`
	RootProviderUUID string      `json:"root_provider_uuid"`
	Score            float64     `json:"score"`
	ScriptletLog     any         `json:"scriptlet_log,omitempty"`
	Steps            []stepJSON  `json:"steps"`
}

type alternateJSON struct {
	Allocations      map[string]any      `json:"allocations"`
	Mappings         map[string][]string `json:"mappings"`
	RootProviderName string              `json:"root_provider_name"`
	RootProviderUUID string              `json:"root_provider_uuid"`
	Score            float64             `json:"score"`
}

type rankedJSON struct {
	Allocations      map[string]any     `json:"allocations"`
	Rank             int                `json:"rank"`
	RootProviderName string             `json:"root_provider_name"`
	RootProviderUUID string             `json:"root_provider_uuid"`
	Score            float64            `json:"score"`
	Weights          map[string]float64 `json:"weights"`
}

type logLineJSON struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// quotaJSON is a dry run's quota check: whether the claim would pass,
// and per limited resource of its project what it would add, what the
// project holds and the limit.
type quotaJSON struct {
	Fits      bool                         `json:"fits"`
	ProjectID string                       `json:"project_id"`
	Resources map[string]quotaResourceJSON `json:"resources"`
}

type quotaResourceJSON struct {
	Limit     int64 `json:"limit"`
	Requested int64 `json:"requested"`
	Used      int64 `json:"used"`
}

type reusedJSON struct {
	Fields []string `json:"fields"`
	From   string   `json:"from"`
}

type migrationJSON struct {
	Allocations  map[string]any `json:"allocations"`
	ConsumerUUID string         `json:"consumer_uuid"`
}

type stepJSON struct {
	Kind      string         `json:"kind"`
	Reasons   map[string]int `json:"reasons"`
	Remaining int            `json:"remaining"`
	Removed   int            `json:"removed"`
	Unit      string         `json:"unit"`
}

func claimResponse(r *claims.Result) *claimAnswer {
	alternates := make([]alternateJSON, len(r.Alternates))
	for i, o := range r.Alternates {
		alternates[i] = alternateJSON{
			RootProviderUUID: o.Root,
			RootProviderName: o.RootName,
			Score:            o.Score,
			Allocations:      allocationsJSON(o.Allocations),
			Mappings:         o.Mappings,
		}
	}
	out := &claimAnswer{
		ConsumerUUID:       r.ConsumerUUID,
		ConsumerGeneration: r.ConsumerGeneration,
		Allocations:        allocationsJSON(r.Allocations),
		Mappings:           r.Mappings,
		RootProviderUUID:   r.Root,
		RootProviderName:   r.RootName,
		Score:              r.Score,
		Alternates:         alternates,
		Attempts:           r.Attempts,
		DryRun:             r.DryRun,
		Steps:              stepsJSON(r.Steps),
	}
	if r.DryRun {
		ranking := make([]rankedJSON, len(r.Ranking))
		for i, o := range r.Ranking {
			ranking[i] = rankedJSON{
				Rank:             i + 1,
				RootProviderUUID: o.Root,
				RootProviderName: o.RootName,
				Score:            o.Score,
				Weights:          o.Weights,
				Allocations:      allocationsJSON(o.Allocations),
			}
		}
		log := make([]logLineJSON, len(r.ScriptletLog))
		for i, l := range r.ScriptletLog {
			log[i] = logLineJSON{Level: l.Level, Message: l.Message}
		}
		out.Ranking, out.ScriptletLog = ranking, log
	}
	if q := r.Quota; q != nil {
		out.Quota = &quotaJSON{Fits: q.Fits, ProjectID: q.ProjectID, Resources: map[string]quotaResourceJSON{}}
		for name, rq := range q.Resources {
			out.Quota.Resources[name] = quotaResourceJSON{Limit: rq.Limit, Requested: rq.Requested, Used: rq.Used}
		}
	}
	if r.Reused != nil {
		out.Reused = &reusedJSON{From: r.Reused.From, Fields: r.Reused.Fields}
	}
	if r.Migration != nil {
		out.Migration = &migrationJSON{
			ConsumerUUID: r.Migration.ConsumerUUID,
			Allocations:  allocationsJSON(r.Migration.Allocations),
		}
	}
	return out
}

func stepsJSON(steps []claims.Step) []stepJSON {
	out := make([]stepJSON, len(steps))
	for i, st := range steps {
		reasons := st.Reasons
		if reasons == nil {
			reasons = map[string]int{}
		}
		out[i] = stepJSON{Unit: st.Unit, Kind: st.Kind, Removed: st.Removed, Remaining: st.Remaining, Reasons: reasons}
	}
	return out
}

// allocationsJSON renders allocations as PUT /allocations takes them:
// provider uuid -> {"resources": {class: amount}}.
func allocationsJSON(allocs []engine.Allocation) map[string]any {
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

// claimUpdateSchema is the body of PATCH /claims/{consumer_uuid}; its
// one value is checked by parseLease.
var claimUpdateSchema = jsonschema.Must(`{
	"type": "object",
	"properties": {"lease_seconds": {}},
	"required": ["lease_seconds"],
	"additionalProperties": false
}`)

// claimShow serves GET /claims/{consumer_uuid}: the consumer's stored
// claim (its request, where it landed, its state and lease) and what it
// holds now. 404 berth.no_claim for a consumer no claim placed.
func (s *Server) claimShow(c echo.Context) error {
	consumer := c.Param("consumer_uuid")
	if !uuid.Valid(consumer) {
		return badRequest("Malformed consumer_uuid: %s", consumer)
	}
	st, err := s.claims.Stored(c.Request().Context(), consumer)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, storedJSON(st))
}

// claimUpdate serves PATCH /claims/{consumer_uuid}: {"lease_seconds": N}
// renews the lease for N seconds from now, {"lease_seconds": null}
// confirms the claim (makes it permanent). It answers as GET does.
func (s *Server) claimUpdate(c echo.Context) error {
	consumer := c.Param("consumer_uuid")
	if !uuid.Valid(consumer) {
		return badRequest("Malformed consumer_uuid: %s", consumer)
	}
	var b struct {
		LeaseSeconds json.RawMessage `json:"lease_seconds"`
	}
	if err := s.decodeBody(c, claimUpdateSchema, &b); err != nil {
		return err
	}
	lease, err := parseLease(b.LeaseSeconds)
	if err != nil {
		return err
	}
	st, err := s.claims.Lease(c.Request().Context(), consumer, lease)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, storedJSON(st))
}

// storedClaimJSON is the answer of GET and PATCH /claims/{consumer_uuid},
// its fields in name order.
type storedClaimJSON struct {
	Allocations        map[string]any  `json:"allocations"`
	ConsumerGeneration int64           `json:"consumer_generation"`
	ConsumerUUID       string          `json:"consumer_uuid"`
	CreatedAt          string          `json:"created_at"`
	Expired            bool            `json:"expired"`
	LeaseExpiresAt     *string         `json:"lease_expires_at"`
	LeaseSeconds       *int64          `json:"lease_seconds"`
	MigrationUUID      *string         `json:"migration_uuid"`
	Op                 string          `json:"op"`
	Request            json.RawMessage `json:"request"`
	RootProviderUUID   *string         `json:"root_provider_uuid"`
	State              string          `json:"state"`
	UpdatedAt          string          `json:"updated_at"`
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
	return out
}
