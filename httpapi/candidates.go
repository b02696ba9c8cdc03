package httpapi

import (
	"errors"
	"io"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/engine"
)

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

func candidatesSchema(v Version) *jsonschema.Schema {
	for _, s := range candidatesSchemas {
		if v.AtLeast(s.minor) {
			return s.schema
		}
	}
	return candidatesSchemas[len(candidatesSchemas)-1].schema
}

// allocationCandidates serves GET /allocation_candidates.
func (s *Server) allocationCandidates(c echo.Context) error {
	v := version(c)
	if err := validateQuery(c, candidatesSchema(v)); err != nil {
		return err
	}
	q := parseOrderedQuery(c.Request().URL.RawQuery)
	params, err := s.candidatesParams(q, v)
	if err != nil {
		return err
	}
	cands, err := s.store.AllocationCandidates(c.Request().Context(), params)
	if err != nil {
		return candidatesError(err)
	}
	instrument.Candidates(c.Request().Context(), "allocation_candidates", len(cands.Requests))
	setCacheHeaders(c, time.Now())
	buf := jsonBufs.Get().(*[]byte)
	defer jsonBufs.Put(buf)
	return streamJSON(c, func(w io.Writer) error {
		var err error
		*buf, err = writeCandidates(w, (*buf)[:0], cands, params.Groups, v)
		return err
	})
}

// writeCandidates writes appendCandidates' answer to w, streaming: the
// body goes out in pieces of about streamFlushBytes, through buf, instead
// of being held whole. It returns buf for reuse.
func writeCandidates(w io.Writer, buf []byte, c *engine.Candidates, groups []engine.RequestGroup, v Version) ([]byte, error) {
	var err error
	spill := func(b []byte) []byte {
		if err == nil {
			_, err = w.Write(b)
		}
		return b[:0]
	}
	buf = encodeCandidates(buf, c, groups, v, spill)
	buf = spill(buf)
	return buf, err
}

// candidatesParams reads an allocation candidates request from q, the
// query parameters of GET /allocation_candidates, at microversion v.
func (s *Server) candidatesParams(q orderedQuery, v Version) (engine.CandidatesParams, error) {
	params := s.newCandidatesParams(v)
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

// newCandidatesParams is a candidate search at microversion v with the
// server's settings, before the request's own parameters.
func (s *Server) newCandidatesParams(v Version) engine.CandidatesParams {
	return engine.CandidatesParams{
		NestedAware: v.AtLeast(29),
		Randomize:   s.cfg.RandomizeCandidates,
		Max:         s.cfg.MaxCandidates,
	}
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
		return badRequest(`The "group_policy" parameter is required when specifying more than one "resources{N}" parameter.`)
	}
	return nil
}

// candidatesError words the ledger's unknown-name errors as Placement
// does for allocation candidates.
func candidatesError(err error) error {
	var ue *engine.UnknownNameError
	if errors.As(err, &ue) {
		if ue.Trait {
			return badRequest("%s", ue.Error())
		}
		return badRequest("Invalid resource class in resources parameter: %s", ue.Error())
	}
	return err
}

// parseRequestWide reads the parameters that apply to the whole request:
// limit, root_required and same_subtree (Placement's
// RequestWideParams.from_request). Repeated limit and group_policy keep
// their first value, as in Placement.
func parseRequestWide(q orderedQuery, p *engine.CandidatesParams) error {
	if limits := q.all("limit"); len(limits) > 0 {
		n, err := strconv.Atoi(strings.TrimSpace(limits[0]))
		if err != nil || n < 1 {
			return badRequest("Invalid query string parameters: %q is not a valid limit", limits[0])
		}
		p.Limit = n
	}
	if rr := q.all("root_required"); len(rr) > 0 {
		if len(rr) > 1 {
			return newError(http.StatusBadRequest, fault.CodeQueryDuplicateKey,
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
		return newError(http.StatusBadRequest, fault.CodeQueryBadValue,
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
				return newError(http.StatusBadRequest, fault.CodeQueryBadValue,
					"Empty string (unsuffixed group) can not be specified in `same_subtree` ")
			}
			set.add(s)
		}
		p.SameSubtrees = append(p.SameSubtrees, set.list)
	}
	return nil
}

// jsonBufs recycles response buffers: a candidates response for thousands
// of providers runs to megabytes.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// appendCandidates writes the response body for microversion v directly as
// JSON: allocation_requests as a list of lists before 1.12 and of dicts
// after, with mappings from 1.34; provider_summaries with traits from 1.17,
// every inventory (not just the requested classes) from 1.27 and the tree
// from 1.29.
func appendCandidates(b []byte, c *engine.Candidates, groups []engine.RequestGroup, v Version) []byte {
	return encodeCandidates(b, c, groups, v, nil)
}

// encodeCandidates is appendCandidates; between elements, when spill is
// not nil and b holds streamFlushBytes or more, it hands b to spill and
// goes on with what spill returns.
func encodeCandidates(b []byte, c *engine.Candidates, groups []engine.RequestGroup, v Version, spill func([]byte) []byte) []byte {
	b = append(b, `{"allocation_requests": [`...)
	for i := range c.Requests {
		if spill != nil && len(b) >= streamFlushBytes {
			b = spill(b)
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		if v.AtLeast(12) {
			b = appendRequestDict(b, c, i, v)
		} else {
			b = appendRequestList(b, c, i)
		}
	}
	b = append(b, `], "provider_summaries": {`...)
	requested := requestedClasses(groups, v)
	for i := range c.Summaries {
		if spill != nil && len(b) >= streamFlushBytes {
			b = spill(b)
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendSummary(b, c, i, requested, v)
	}
	return append(b, "}}"...)
}

// appendRequestDict writes c's allocation request i as a dict (1.12
// on): allocations by provider uuid, and from 1.34 the mappings.
func appendRequestDict(b []byte, c *engine.Candidates, i int, v Version) []byte {
	ar := &c.Requests[i]
	b = append(b, `{"allocations": {`...)
	for j, a := range ar.Allocations {
		if j > 0 {
			b = append(b, ", "...)
		}
		b = appendGoString(b, a.ProviderUUID)
		b = append(b, `: {"resources": `...)
		b = appendAmounts(b, a.Resources)
		b = append(b, '}')
	}
	b = append(b, '}')
	if v.AtLeast(34) {
		b = append(b, `, "mappings": {`...)
		for j, m := range ar.Mappings {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = appendGoString(b, m.Suffix)
			b = append(b, ": ["...)
			for k, u := range m.ProviderUUIDs {
				if k > 0 {
					b = append(b, ", "...)
				}
				b = appendGoString(b, u)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendRequestList writes c's allocation request i as a list of
// allocations (before 1.12).
func appendRequestList(b []byte, c *engine.Candidates, i int) []byte {
	ar := &c.Requests[i]
	b = append(b, `{"allocations": [`...)
	for j, a := range ar.Allocations {
		if j > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"resource_provider": {"uuid": `...)
		b = appendGoString(b, a.ProviderUUID)
		b = append(b, `}, "resources": `...)
		b = appendAmounts(b, a.Resources)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// requestedClasses are the classes groups request, which are all a
// summary lists before 1.27; nil (every class) from 1.27.
func requestedClasses(groups []engine.RequestGroup, v Version) map[string]bool {
	if v.AtLeast(27) {
		return nil
	}
	requested := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Resources {
			requested[r.Class] = true
		}
	}
	return requested
}

// appendSummary writes c's provider summary i, its key included: the
// resources (only those in requested unless it is nil), from 1.17 the
// traits and from 1.29 the tree.
func appendSummary(b []byte, c *engine.Candidates, i int, requested map[string]bool, v Version) []byte {
	ps := &c.Summaries[i]
	b = appendGoString(b, ps.UUID)
	b = append(b, `: {"resources": {`...)
	n := 0
	for _, r := range ps.Resources {
		if requested != nil && !requested[r.Class] {
			continue
		}
		if n > 0 {
			b = append(b, ", "...)
		}
		n++
		b = appendGoString(b, r.Class)
		b = append(b, `: {"capacity": `...)
		b = appendCapacity(b, r.Total, r.Reserved, r.AllocationRatio)
		b = append(b, `, "used": `...)
		b = strconv.AppendInt(b, r.Used, 10)
		b = append(b, '}')
	}
	b = append(b, '}')
	if v.AtLeast(17) {
		b = append(b, `, "traits": [`...)
		for k, t := range ps.Traits {
			if k > 0 {
				b = append(b, ", "...)
			}
			b = appendGoString(b, t)
		}
		b = append(b, ']')
	}
	if v.AtLeast(29) {
		b = append(b, `, "parent_provider_uuid": `...)
		if ps.ParentUUID == "" {
			b = append(b, "null"...)
		} else {
			b = appendGoString(b, ps.ParentUUID)
		}
		b = append(b, `, "root_provider_uuid": `...)
		b = appendGoString(b, ps.RootUUID)
	}
	return append(b, '}')
}

// appendCapacity writes a provider summary's capacity as Placement
// computes it, int((total - reserved) * allocation_ratio): the float
// product truncated, in full however large (a Python int has no bounds;
// ratios go up to 3.4e38).
func appendCapacity(b []byte, total, reserved int64, ratio float64) []byte {
	c := math.Trunc(float64(total-reserved) * ratio)
	if math.Abs(c) < 1<<62 {
		return strconv.AppendInt(b, int64(c), 10)
	}
	i, _ := new(big.Float).SetFloat64(c).Int(nil)
	return i.Append(b, 10)
}

// appendAmounts writes {"CLASS": n, ...}.
func appendAmounts(b []byte, rs []engine.ResourceAmount) []byte {
	b = append(b, '{')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendGoString(b, r.Class)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, r.Amount, 10)
	}
	return append(b, '}')
}
