package placement

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/engine"
)

// This file parses request groups (resources, required, member_of and
// in_tree, with or without a suffix) as the query parameters of GET
// /allocation_candidates and GET /resource_providers, or as the JSON of
// a claim's selection (SelectionGroup), with Placement's rules and
// messages for each microversion, and checks the groups of one request
// against each other.

// QueryParam is one key=value pair of a query string.
type QueryParam struct{ Key, Value string }

// OrderedQuery is a query string in the order it was written. Placement
// reports some errors in that order, which url.Values forgets.
type OrderedQuery []QueryParam

// ParseOrderedQuery splits a raw query string. Keys without "=" get an
// empty value; pairs that do not unescape are kept raw.
func ParseOrderedQuery(raw string) OrderedQuery {
	var q OrderedQuery
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		q = append(q, QueryParam{k, v})
	}
	return q
}

// all returns every value of key, in order.
func (q OrderedQuery) all(key string) []string {
	var out []string
	for _, p := range q {
		if p.Key == key {
			out = append(out, p.Value)
		}
	}
	return out
}

// byKey returns every value of each key, in order, in one pass over q:
// reading the values of each of many keys with all would cost the
// query's length once per key.
func (q OrderedQuery) byKey() map[string][]string {
	out := map[string][]string{}
	for _, p := range q {
		out[p.Key] = append(out[p.Key], p.Value)
	}
	return out
}

// last returns the last value of key, as webob's req.GET[key] does.
func (q OrderedQuery) last(key string) (string, bool) {
	for i := len(q) - 1; i >= 0; i-- {
		if q[i].Key == key {
			return q[i].Value, true
		}
	}
	return "", false
}

// parseResources parses "VCPU:2,MEMORY_MB:1024" (Placement's
// normalize_resources_qs_param). A class named twice keeps the last amount.
func parseResources(val string) ([]engine.ResourceAmount, error) {
	if strings.TrimSpace(val) == "" {
		return nil, wire.BadRequest("Badly formed resources parameter. Expected resources query string " +
			"parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
	}
	var out resourceList
	for _, rt := range strings.Split(val, ",") {
		parts := strings.Split(rt, ":")
		if len(parts) != 2 {
			return nil, badlyFormedResources(rt)
		}
		if err := out.add(parts[0], parts[1]); err != nil {
			return nil, err
		}
	}
	return out.list, nil
}

func badlyFormedResources(got string) error {
	return wire.BadRequest("Badly formed resources parameter. Expected resources query string "+
		"parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: %s.", got)
}

// resourceList collects the amounts of a request group's classes in the
// order first named; a class named again replaces its amount. Its index,
// built once the list is longer than indexAfter, keeps a long list
// linear; a short one is searched.
type resourceList struct {
	list []engine.ResourceAmount
	at   map[string]int // class -> index in list; nil while short
}

// indexAfter is the length past which a resourceList is indexed.
const indexAfter = 8

// index is the position in l of class name, -1 if absent.
func (l *resourceList) index(name string) int {
	if l.at != nil {
		if i, ok := l.at[name]; ok {
			return i
		}
		return -1
	}
	for i := range l.list {
		if l.list[i].Class == name {
			return i
		}
	}
	return -1
}

// add adds amountText of class name, replacing an amount of the same
// class. The amount must be a positive integer.
func (l *resourceList) add(name, amountText string) error {
	amount, err := strconv.ParseInt(strings.TrimSpace(amountText), 10, 64)
	if err != nil {
		return wire.BadRequest("Requested resource %s expected positive integer amount. Got: %s.", name, amountText)
	}
	if amount < 1 {
		return wire.BadRequest("Requested resource %s requires amount >= 1. Got: %d.", name, amount)
	}
	if i := l.index(name); i >= 0 {
		l.list[i].Amount = amount
		return nil
	}
	l.list = append(l.list, engine.ResourceAmount{Class: name, Amount: amount})
	switch {
	case l.at != nil:
		l.at[name] = len(l.list) - 1
	case len(l.list) > indexAfter:
		l.at = make(map[string]int, 2*len(l.list))
		for i := range l.list {
			l.at[l.list[i].Class] = i
		}
	}
	return nil
}

// parseTraits parses one value of a required parameter (Placement's
// normalize_traits_qs_param) into all-of any-of required traits and
// forbidden traits.
func parseTraits(val string, allowForbidden, allowAnyOf bool) (required [][]string, forbidden []string, err error) {
	if strings.HasPrefix(val, "in:") {
		if !allowAnyOf {
			return nil, nil, wire.BadRequest("Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "+
				"only supported since microversion 1.39. Got: %s", val)
		}
		var any uniqueStrings
		for _, t := range strings.Split(val[3:], ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				return nil, nil, wire.BadRequest("Invalid query string parameters: Expected 'required' parameter value "+
					"of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: %s", val)
			}
			if strings.HasPrefix(t, "!") {
				return nil, nil, wire.BadRequest("Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "+
					"does not support forbidden traits. Got: %s", val)
			}
			any.add(t)
		}
		return [][]string{any.list}, nil, nil
	}
	form := "HW_CPU_X86_VMX,CUSTOM_MAGIC"
	if allowForbidden {
		form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC"
	}
	var forb uniqueStrings
	for _, t := range strings.Split(val, ",") {
		t = strings.TrimSpace(t)
		// Placement strips any number of leading "!" (a documented quirk).
		name := strings.TrimLeft(t, "!")
		if t == "" || name == "" {
			return nil, nil, wire.BadRequest("Invalid query string parameters: Expected 'required' parameter value of "+
				"the form: %s. Got an empty trait in: %s", form, val)
		}
		if name != t {
			forb.add(name)
		} else {
			required = append(required, []string{t})
		}
	}
	if len(forb.list) > 0 && !allowForbidden {
		return nil, nil, wire.BadRequest("Invalid query string parameters: Expected 'required' parameter value of "+
			"the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s", val)
	}
	return required, forb.list, nil
}

// uniqueStrings collects strings in the order first added, each once.
// Past a few strings a set answers "seen?", so that adding n strings
// costs O(n), not the O(n²) of scanning the list each time: a query of
// thousands of traits must not cost a core.
type uniqueStrings struct {
	list []string
	seen map[string]struct{} // nil while list is short
}

// uniqueScanMax is the length up to which add scans list instead of
// keeping the set.
const uniqueScanMax = 8

func (u *uniqueStrings) add(s string) {
	if u.has(s) {
		return
	}
	u.list = append(u.list, s)
	if u.seen == nil && len(u.list) > uniqueScanMax {
		u.seen = make(map[string]struct{}, 2*len(u.list))
		for _, x := range u.list {
			u.seen[x] = struct{}{}
		}
	} else if u.seen != nil {
		u.seen[s] = struct{}{}
	}
}

func (u *uniqueStrings) has(s string) bool {
	if u.seen == nil {
		return slices.Contains(u.list, s)
	}
	_, ok := u.seen[s]
	return ok
}

// parseRequired reads every required<suffix> value (Placement's
// normalize_traits_qs_params): see requiredTraits.
func parseRequired(q OrderedQuery, key string, v wire.Version) (required [][]string, forbidden []string, err error) {
	return requiredTraits(q.all(key), v)
}

// requiredTraits reads the values of one group's required parameter:
// forbidden traits from 1.22, any-of and repeated values from 1.39
// (before, the last value alone counts).
func requiredTraits(values []string, v wire.Version) (required [][]string, forbidden []string, err error) {
	if !v.AtLeast(39) && len(values) > 1 {
		values = values[len(values)-1:]
	}
	var forb uniqueStrings
	for _, val := range values {
		r, f, err := parseTraits(val, v.AtLeast(22), v.AtLeast(39))
		if err != nil {
			return nil, nil, err
		}
		required = append(required, r...)
		for _, t := range f {
			forb.add(t)
		}
	}
	return required, forb.list, nil
}

// parseMemberOf reads every member_of<suffix> value (Placement's
// normalize_member_of_qs_params): see memberOf.
func parseMemberOf(q OrderedQuery, suffix string, v wire.Version) (required [][]string, forbidden []string, err error) {
	return memberOf(q.all("member_of"+suffix), suffix, v)
}

// memberOf reads the values of the group suffix's member_of parameter:
// several values from 1.24, forbidden aggregates ("!" and "!in:") from
// 1.32.
func memberOf(values []string, suffix string, v wire.Version) (required [][]string, forbidden []string, err error) {
	if !v.AtLeast(24) && len(values) > 1 {
		return nil, nil, wire.BadRequest("Multiple member_of%s parameters are not supported", suffix)
	}
	var forbAll uniqueStrings
	for _, val := range values {
		if strings.Contains(val, ",") && !strings.HasPrefix(val, "in:") && !strings.HasPrefix(val, "!in:") {
			return nil, nil, wire.BadRequest("Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "+
				"keyword using the valid microversion. Got: %s", val)
		}
		var req, forb []string
		switch {
		case strings.HasPrefix(val, "!in:"):
			forb = strings.Split(val[4:], ",")
		case strings.HasPrefix(val, "!"):
			forb = []string{val[1:]}
		case strings.HasPrefix(val, "in:"):
			req = strings.Split(val[3:], ",")
		default:
			req = []string{val}
		}
		for _, list := range [][]string{req, forb} {
			for _, u := range list {
				if !uuid.Valid(u) {
					return nil, nil, wire.BadRequest("Invalid query string parameters: Expected 'member_of' parameter to "+
						"contain valid UUID(s). Got: %s", u)
				}
			}
		}
		if len(req) > 0 {
			required = append(required, req)
		}
		if len(forb) > 0 {
			if !v.AtLeast(32) {
				return nil, nil, wire.BadRequest("Forbidden member_of%s parameters are not supported in the specified microversion", suffix)
			}
			for _, u := range forb {
				forbAll.add(u)
			}
		}
	}
	return required, forbAll.list, nil
}

// parseInTree checks an in_tree value.
func parseInTree(val string) (string, error) {
	t := strings.TrimSpace(val)
	if !uuid.Valid(t) {
		return "", wire.BadRequest("Invalid query string parameters: Expected 'in_tree' parameter to be a format of uuid. Got: %s", val)
	}
	return t, nil
}

// Group key patterns: numeric suffixes before 1.33, then up to 64 of
// [a-zA-Z0-9_-].
var (
	groupKeyPattern     = regexp.MustCompile(`^(resources|required|member_of|in_tree)([1-9][0-9]*)?$`)
	groupKeyPattern1_33 = regexp.MustCompile(`^(resources|required|member_of|in_tree)([a-zA-Z0-9_-]{1,64})?$`)
)

// parsedGroup is a request group with the facts the checks need.
type parsedGroup struct {
	engine.RequestGroup
	hasRequired, hasMemberOf bool
}

// parseRequestGroups reads the request groups of GET /allocation_candidates
// in the order their suffixes first appear (Placement's
// RequestGroup.dict_from_request) and applies Placement's consistency
// checks for the microversion. sameSubtrees are the suffix sets of
// same_subtree.
func parseRequestGroups(q OrderedQuery, v wire.Version, sameSubtrees [][]string) ([]engine.RequestGroup, error) {
	pattern := groupKeyPattern
	if v.AtLeast(33) {
		pattern = groupKeyPattern1_33
	}
	var groups []*parsedGroup
	bySuffix := map[string]*parsedGroup{}
	values := q.byKey()
	read := map[string]bool{} // required and member_of keys already read whole
	for _, p := range q {
		m := pattern.FindStringSubmatch(p.Key)
		if m == nil {
			continue
		}
		prefix, suffix := m[1], m[2]
		g := bySuffix[suffix]
		if g == nil {
			g = &parsedGroup{RequestGroup: engine.RequestGroup{Suffix: suffix}}
			bySuffix[suffix] = g
			groups = append(groups, g)
		}
		if (prefix == "required" || prefix == "member_of") && read[p.Key] {
			continue // every value of the key was read at its first
		}
		var err error
		switch prefix {
		case "resources":
			g.Resources, err = parseResources(p.Value)
		case "required":
			read[p.Key] = true
			g.RequiredTraits, g.ForbiddenTraits, err = requiredTraits(values[p.Key], v)
			g.hasRequired = len(g.RequiredTraits) > 0
		case "member_of":
			read[p.Key] = true
			g.MemberOf, g.ForbiddenAggregates, err = memberOf(values[p.Key], suffix, v)
			g.hasMemberOf = len(g.MemberOf) > 0 || len(g.ForbiddenAggregates) > 0
		case "in_tree":
			g.InTree, err = parseInTree(p.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	return checkGroups(groups, v, sameSubtrees)
}

// SelectionGroup is one request group in JSON form: the unsuffixed group
// of a claim's selection, or one of its "groups".
type SelectionGroup struct {
	Resources wire.OrderedMap[json.Number] `json:"resources"`
	Required  []string                     `json:"required"`
	MemberOf  []string                     `json:"member_of"`
	InTree    string                       `json:"in_tree"`
}

// selects reports whether g has any selection field.
func (g *SelectionGroup) selects() bool {
	return len(g.Resources.Keys) > 0 || len(g.Required) > 0 || len(g.MemberOf) > 0 || g.InTree != ""
}

// parse reads g as the request group suffix: each field's values as GET
// /allocation_candidates reads the parameter of that name at microversion
// v, with the same messages, in the same order (resources, required,
// member_of, in_tree).
func (g *SelectionGroup) parse(suffix string, v wire.Version) (*parsedGroup, error) {
	pg := &parsedGroup{RequestGroup: engine.RequestGroup{Suffix: suffix}}
	var resources resourceList
	if n := len(g.Resources.Keys); n > 0 {
		resources.list = make([]engine.ResourceAmount, 0, n)
	}
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

// checkGroups applies Placement's consistency checks for the
// microversion to the parsed groups of one request.
func checkGroups(groups []*parsedGroup, v wire.Version, sameSubtrees [][]string) ([]engine.RequestGroup, error) {
	if v.AtLeast(36) {
		if err := checkResourceless(groups, sameSubtrees); err != nil {
			return nil, err
		}
	} else if err := checkOrphans(groups); err != nil {
		return nil, err
	}
	if v.AtLeast(22) {
		if err := checkConflicts(groups); err != nil {
			return nil, err
		}
	}
	out := make([]engine.RequestGroup, len(groups))
	for i, g := range groups {
		out[i] = g.RequestGroup
	}
	return out, nil
}

// checkResourceless applies the rules of 1.36 on: some group has
// resources, and a group without resources must be in a same_subtree,
// whose suffixes must all be groups of the request.
func checkResourceless(groups []*parsedGroup, sameSubtrees [][]string) error {
	inSubtree := map[string]bool{}
	for _, st := range sameSubtrees {
		for _, s := range st {
			inSubtree[s] = true
		}
	}
	var resourceless []string
	for _, g := range groups {
		if len(g.Resources) == 0 {
			resourceless = append(resourceless, g.Suffix)
		}
	}
	if len(resourceless) == len(groups) {
		return wire.NewError(400, fault.CodeQueryMissingValue, "There must be at least one resources or resources[$S] parameter.")
	}
	var bad []string
	for _, s := range resourceless {
		if !inSubtree[s] {
			bad = append(bad, s)
		}
	}
	if len(bad) > 0 {
		return wire.NewError(400, fault.CodeQueryBadValue, "Resourceless suffixed group request should be specified in "+
			"`same_subtree` query param: bad group(s) - %s.", pyList(bad))
	}
	known := map[string]bool{}
	var all []string
	for _, g := range groups {
		known[g.Suffix] = true
		all = append(all, g.Suffix)
	}
	var unknown uniqueStrings
	for _, st := range sameSubtrees {
		for _, s := range st {
			if !known[s] {
				unknown.add(s)
			}
		}
	}
	if len(unknown.list) > 0 {
		return wire.NewError(400, fault.CodeQueryBadValue, "Real suffixes should be specified in `same_subtree`: "+
			"%s not found in %s.", pyList(unknown.list), pyList(all))
	}
	return nil
}

// checkOrphans applies the rules before 1.36: every group has resources.
func checkOrphans(groups []*parsedGroup) error {
	var orphans []string
	for _, g := range groups {
		if g.hasRequired && len(g.Resources) == 0 {
			orphans = append(orphans, "required"+g.Suffix)
		}
	}
	if len(orphans) > 0 {
		return wire.BadRequest("All traits parameters must be associated with resources.  "+
			"Found the following orphaned traits keys: %s", strings.Join(orphans, ", "))
	}
	for _, g := range groups {
		if g.hasMemberOf && len(g.Resources) == 0 {
			orphans = append(orphans, "member_of"+g.Suffix)
		}
	}
	if len(orphans) > 0 {
		return wire.BadRequest("All member_of parameters must be associated with resources. "+
			"Found the following orphaned member_of keys: %s", strings.Join(orphans, ", "))
	}
	for _, g := range groups {
		if len(g.Resources) == 0 {
			return wire.BadRequest("All request groups must specify resources.")
		}
	}
	if len(groups) == 0 {
		return wire.BadRequest("At least one request group (`resources` or `resources{$S}`) is required.")
	}
	return nil
}

// checkConflicts refuses an any-of set of required traits that are all
// forbidden in the same group.
func checkConflicts(groups []*parsedGroup) error {
	var conflicts []string
	for _, g := range groups {
		if len(g.ForbiddenTraits) == 0 {
			continue
		}
		forbidden := make(map[string]bool, len(g.ForbiddenTraits))
		for _, t := range g.ForbiddenTraits {
			forbidden[t] = true
		}
		for _, any := range g.RequiredTraits {
			all := true
			for _, t := range any {
				if !forbidden[t] {
					all = false
				}
			}
			if all {
				sorted := append([]string{}, any...)
				slices.Sort(sorted)
				conflicts = append(conflicts, fmt.Sprintf("required%s: (%s)", g.Suffix, strings.Join(sorted, ", ")))
			}
		}
	}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		return wire.BadRequest("Conflicting required and forbidden traits found in the following traits keys: %s",
			strings.Join(conflicts, ", "))
	}
	return nil
}

// pyList renders strings as a Python list literal: ['a', 'b'].
func pyList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "'" + s + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
