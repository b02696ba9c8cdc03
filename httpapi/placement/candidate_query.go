package placement

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
)

// The candidate query: what GET /allocation_candidates asks, read from
// its query string (FromQuery: GET /allocation_candidates, and Berth's
// GET /capacity), or from the JSON of a claim's selection fields
// (FromSelection: Berth's claims and the scriptlet test), with
// Placement's rules and messages for each microversion. The groups
// themselves are read in request_groups.go.

// CandidateQuery holds the server's settings of every candidate search.
type CandidateQuery struct {
	// Randomize shuffles allocation candidates instead of returning
	// them in a deterministic order.
	Randomize bool
	// Max caps how many allocation candidates one request may generate
	// before limit is applied.
	Max int
}

// Params is a candidate search at microversion v with the server's
// settings, before the request's own parameters.
func (cq CandidateQuery) Params(v wire.Version) engine.CandidatesParams {
	return engine.CandidatesParams{
		NestedAware: v.AtLeast(29),
		Randomize:   cq.Randomize,
		Max:         cq.Max,
	}
}

// FromQuery reads an allocation candidates request from q, the query
// parameters of GET /allocation_candidates, at microversion v.
func (cq CandidateQuery) FromQuery(q OrderedQuery, v wire.Version) (engine.CandidatesParams, error) {
	params := cq.Params(v)
	if err := parseRequestWide(q, &params); err != nil {
		return params, err
	}
	groups, err := parseRequestGroups(q, v, params.SameSubtrees)
	if err != nil {
		return params, err
	}
	params.Groups = groups
	return params, applyGroupPolicy(&params, q.all("group_policy"))
}

// Selection is a candidate query as a claim's body writes it (its
// selection fields, docs/claims.md, decoded where the body's type puts
// them), each field read as the query parameter of the same name.
type Selection struct {
	// Group is the unsuffixed group.
	Group        *SelectionGroup
	RootRequired []string
	SameSubtree  []string
	GroupPolicy  string
	// Groups are the suffixed groups, by suffix, in the order written.
	Groups *wire.OrderedMap[SelectionGroup]
}

// FromSelection builds the candidate search of sel, checked as GET
// /allocation_candidates checks its query at microversion v, with the
// same messages: request-wide fields first, then the groups (the
// unsuffixed one, then "groups" in the order written), then the checks
// across groups. selected is false when sel has no selection field.
func (cq CandidateQuery) FromSelection(sel Selection, v wire.Version) (p engine.CandidatesParams, selected bool, err error) {
	p = cq.Params(v)
	selected = len(sel.RootRequired) > 0 || len(sel.SameSubtree) > 0 || sel.GroupPolicy != "" || sel.Group.selects()
	for _, suffix := range sel.Groups.Keys {
		g := sel.Groups.Values[suffix]
		selected = selected || g.selects()
	}
	if len(sel.RootRequired) > 0 {
		// One comma-separated list, as in the query: messages quote it whole.
		if err := parseRootRequired(strings.Join(sel.RootRequired, ","), &p); err != nil {
			return p, selected, err
		}
	}
	if err := parseSameSubtrees(sel.SameSubtree, &p); err != nil {
		return p, selected, err
	}
	var groups []*parsedGroup
	add := func(g *SelectionGroup, suffix string) error {
		if !g.selects() {
			return nil
		}
		pg, err := g.parse(suffix, v)
		if err == nil {
			groups = append(groups, pg)
		}
		return err
	}
	if err := add(sel.Group, ""); err != nil {
		return p, selected, err
	}
	for _, suffix := range sel.Groups.Keys {
		g := sel.Groups.Values[suffix]
		if err := add(&g, suffix); err != nil {
			return p, selected, err
		}
	}
	if p.Groups, err = checkGroups(groups, v, p.SameSubtrees); err != nil {
		return p, selected, err
	}
	var policy []string
	if sel.GroupPolicy != "" {
		policy = []string{sel.GroupPolicy}
	}
	return p, selected, applyGroupPolicy(&p, policy)
}

// candidatesSchemas are Placement's query schemas for GET
// /allocation_candidates, newest first: the first whose microversion the
// request reaches applies.
var candidatesSchemas = func() []struct {
	minor  int
	schema *jsonschema.Schema
} {
	group := func(pat string) string {
		var b strings.Builder
		for i, p := range []string{"resources", "required", "member_of", "in_tree"} {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(`"^` + p + `(` + pat + `)?$": {"type": "string"}`)
		}
		return b.String()
	}
	const limit = `"limit": {"type": ["integer", "string"], "pattern": "^[1-9][0-9]*$", "minimum": 1, "minLength": 1}`
	const policy = `"group_policy": {"type": "string", "enum": ["none", "isolate"]}`
	numbered, named := `[1-9][0-9]*`, `[a-zA-Z0-9_-]{1,64}`
	// Before 1.31 the suffixed keys exclude in_tree.
	noInTree := strings.Replace(group(numbered), `, "^in_tree(`+numbered+`)?$": {"type": "string"}`, "", 1)
	obj := func(props, patterns, required string) string {
		s := `{"type": "object", "properties": {` + props + `}`
		if patterns != "" {
			s += `, "patternProperties": {` + patterns + `}`
		}
		if required != "" {
			s += `, "required": [` + required + `]`
		}
		return s + `, "additionalProperties": false}`
	}
	return []struct {
		minor  int
		schema *jsonschema.Schema
	}{
		{36, jsonschema.Must(obj(limit+", "+policy+`, "root_required": {"type": ["string"]}, "same_subtree": {"type": ["string"]}`, group(named), ""))},
		{35, jsonschema.Must(obj(limit+", "+policy+`, "root_required": {"type": ["string"]}`, group(named), ""))},
		{33, jsonschema.Must(obj(limit+", "+policy, group(named), ""))},
		{31, jsonschema.Must(obj(limit+", "+policy, group(numbered), ""))},
		{25, jsonschema.Must(obj(limit+", "+policy, noInTree, ""))},
		{21, jsonschema.Must(obj(`"resources": {"type": "string"}, `+limit+`, "required": {"type": ["string"]}, "member_of": {"type": ["string"]}`, "", `"resources"`))},
		{17, jsonschema.Must(obj(`"resources": {"type": "string"}, `+limit+`, "required": {"type": ["string"]}`, "", `"resources"`))},
		{16, jsonschema.Must(obj(`"resources": {"type": "string"}, `+limit, "", `"resources"`))},
		{10, jsonschema.Must(obj(`"resources": {"type": "string"}`, "", `"resources"`))},
	}
}()

// CandidatesSchema is the query schema of GET /allocation_candidates at
// microversion v.
func CandidatesSchema(v wire.Version) *jsonschema.Schema {
	for _, s := range candidatesSchemas {
		if v.AtLeast(s.minor) {
			return s.schema
		}
	}
	return candidatesSchemas[len(candidatesSchemas)-1].schema
}

// applyGroupPolicy sets p's group policy from the values of group_policy
// (the first counts, as in Placement); without one, a request of several
// suffixed groups is refused.
func applyGroupPolicy(p *engine.CandidatesParams, values []string) error {
	if len(values) > 0 {
		p.Isolate = values[0] == "isolate"
		return nil
	}
	suffixed := 0
	for _, g := range p.Groups {
		if g.Suffix != "" {
			suffixed++
		}
	}
	if suffixed > 1 {
		return wire.BadRequest(`The "group_policy" parameter is required when specifying more than one "resources{N}" parameter.`)
	}
	return nil
}

// CandidatesError words the ledger's unknown-name errors as Placement
// does for allocation candidates; any other err is returned as it is.
func CandidatesError(err error) error {
	var ue *engine.UnknownNameError
	if errors.As(err, &ue) {
		if ue.Trait {
			return wire.BadRequest("%s", ue.Error())
		}
		return wire.BadRequest("Invalid resource class in resources parameter: %s", ue.Error())
	}
	return err
}

// parseRequestWide reads the parameters that apply to the whole request:
// limit, root_required and same_subtree (Placement's
// RequestWideParams.from_request). Repeated limit and group_policy keep
// their first value, as in Placement.
func parseRequestWide(q OrderedQuery, p *engine.CandidatesParams) error {
	if limits := q.all("limit"); len(limits) > 0 {
		n, err := strconv.Atoi(strings.TrimSpace(limits[0]))
		if err != nil || n < 1 {
			return wire.BadRequest("Invalid query string parameters: %q is not a valid limit", limits[0])
		}
		p.Limit = n
	}
	if rr := q.all("root_required"); len(rr) > 0 {
		if len(rr) > 1 {
			return wire.NewError(http.StatusBadRequest, fault.CodeQueryDuplicateKey,
				"Query parameter 'root_required' may be specified only once.")
		}
		if err := parseRootRequired(rr[0], p); err != nil {
			return err
		}
	}
	return parseSameSubtrees(q.all("same_subtree"), p)
}

// parseRootRequired reads the value of root_required, a comma-separated
// list of traits, "!" forbidding one.
func parseRootRequired(val string, p *engine.CandidatesParams) error {
	required, forbidden, err := parseTraits(val, true, false)
	if err != nil {
		return err
	}
	isForbidden := make(map[string]bool, len(forbidden))
	for _, t := range forbidden {
		isForbidden[t] = true
	}
	rootRequired := uniqueStrings{list: p.RootRequired}
	var conflicts uniqueStrings
	for _, any := range required {
		rootRequired.add(any[0])
		if isForbidden[any[0]] {
			conflicts.add(any[0])
		}
	}
	p.RootRequired = rootRequired.list
	if len(conflicts.list) > 0 {
		return wire.NewError(http.StatusBadRequest, fault.CodeQueryBadValue,
			"Conflicting required and forbidden traits found in root_required: %s", strings.Join(conflicts.list, ", "))
	}
	p.RootForbidden = forbidden
	return nil
}

// parseSameSubtrees reads the values of same_subtree, each a
// comma-separated set of group suffixes.
func parseSameSubtrees(values []string, p *engine.CandidatesParams) error {
	for _, val := range values {
		var set uniqueStrings
		for _, s := range strings.Split(val, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				return wire.NewError(http.StatusBadRequest, fault.CodeQueryBadValue,
					"Empty string (unsuffixed group) can not be specified in `same_subtree` ")
			}
			set.add(s)
		}
		p.SameSubtrees = append(p.SameSubtrees, set.list)
	}
	return nil
}
