package httpapi

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/engine"
)

// This file parses the query parameters that describe request groups —
// resources, required, member_of and in_tree, with or without a suffix —
// for GET /allocation_candidates and GET /resource_providers, with
// Placement's rules and messages for each microversion.

// queryParam is one key=value pair of a query string.
type queryParam struct{ key, value string }

// orderedQuery is a query string in the order it was written. Placement
// reports some errors in that order, which url.Values forgets.
type orderedQuery []queryParam

// parseOrderedQuery splits a raw query string. Keys without "=" get an
// empty value; pairs that do not unescape are kept raw.
func parseOrderedQuery(raw string) orderedQuery {
	var q orderedQuery
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
		q = append(q, queryParam{k, v})
	}
	return q
}

// all returns every value of key, in order.
func (q orderedQuery) all(key string) []string {
	var out []string
	for _, p := range q {
		if p.key == key {
			out = append(out, p.value)
		}
	}
	return out
}

// last returns the last value of key, as webob's req.GET[key] does.
func (q orderedQuery) last(key string) (string, bool) {
	for i := len(q) - 1; i >= 0; i-- {
		if q[i].key == key {
			return q[i].value, true
		}
	}
	return "", false
}

// parseResources parses "VCPU:2,MEMORY_MB:1024" (Placement's
// normalize_resources_qs_param). A class named twice keeps the last amount.
func parseResources(val string) ([]engine.ResourceAmount, error) {
	if strings.TrimSpace(val) == "" {
		return nil, badRequest("Badly formed resources parameter. Expected resources query string " +
			"parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
	}
	var out []engine.ResourceAmount
	for _, rt := range strings.Split(val, ",") {
		parts := strings.Split(rt, ":")
		if len(parts) != 2 {
			return nil, badlyFormedResources(rt)
		}
		var err error
		if out, err = addResource(out, parts[0], parts[1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func badlyFormedResources(got string) error {
	return badRequest("Badly formed resources parameter. Expected resources query string "+
		"parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: %s.", got)
}

// addResource adds amountText of class name to out, replacing an amount
// of the same class. The amount must be a positive integer.
func addResource(out []engine.ResourceAmount, name, amountText string) ([]engine.ResourceAmount, error) {
	amount, err := strconv.ParseInt(strings.TrimSpace(amountText), 10, 64)
	if err != nil {
		return nil, badRequest("Requested resource %s expected positive integer amount. Got: %s.", name, amountText)
	}
	if amount < 1 {
		return nil, badRequest("Requested resource %s requires amount >= 1. Got: %d.", name, amount)
	}
	for i := range out {
		if out[i].Class == name {
			out[i].Amount = amount
			return out, nil
		}
	}
	return append(out, engine.ResourceAmount{Class: name, Amount: amount}), nil
}

// parseTraits parses one value of a required parameter (Placement's
// normalize_traits_qs_param) into all-of any-of required traits and
// forbidden traits.
func parseTraits(val string, allowForbidden, allowAnyOf bool) (required [][]string, forbidden []string, err error) {
	if strings.HasPrefix(val, "in:") {
		if !allowAnyOf {
			return nil, nil, badRequest("Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "+
				"only supported since microversion 1.39. Got: %s", val)
		}
		var any []string
		for _, t := range strings.Split(val[3:], ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				return nil, nil, badRequest("Invalid query string parameters: Expected 'required' parameter value "+
					"of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: %s", val)
			}
			if strings.HasPrefix(t, "!") {
				return nil, nil, badRequest("Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "+
					"does not support forbidden traits. Got: %s", val)
			}
			any = appendUnique(any, t)
		}
		return [][]string{any}, nil, nil
	}
	form := "HW_CPU_X86_VMX,CUSTOM_MAGIC"
	if allowForbidden {
		form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC"
	}
	for _, t := range strings.Split(val, ",") {
		t = strings.TrimSpace(t)
		// Placement strips any number of leading "!" (a documented quirk).
		name := strings.TrimLeft(t, "!")
		if t == "" || name == "" {
			return nil, nil, badRequest("Invalid query string parameters: Expected 'required' parameter value of "+
				"the form: %s. Got an empty trait in: %s", form, val)
		}
		if name != t {
			forbidden = appendUnique(forbidden, name)
		} else {
			required = append(required, []string{t})
		}
	}
	if len(forbidden) > 0 && !allowForbidden {
		return nil, nil, badRequest("Invalid query string parameters: Expected 'required' parameter value of "+
			"the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s", val)
	}
	return required, forbidden, nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// parseRequired reads every required<suffix> value (Placement's
// normalize_traits_qs_params): see requiredTraits.
func parseRequired(q orderedQuery, key string, v Version) (required [][]string, forbidden []string, err error) {
	return requiredTraits(q.all(key), v)
}

// requiredTraits reads the values of one group's required parameter:
// forbidden traits from 1.22, any-of and repeated values from 1.39
// (before, the last value alone counts).
func requiredTraits(values []string, v Version) (required [][]string, forbidden []string, err error) {
	if !v.AtLeast(39) && len(values) > 1 {
		values = values[len(values)-1:]
	}
	for _, val := range values {
		r, f, err := parseTraits(val, v.AtLeast(22), v.AtLeast(39))
		if err != nil {
			return nil, nil, err
		}
		required = append(required, r...)
		for _, t := range f {
			forbidden = appendUnique(forbidden, t)
		}
	}
	return required, forbidden, nil
}

// parseMemberOf reads every member_of<suffix> value (Placement's
// normalize_member_of_qs_params): see memberOf.
func parseMemberOf(q orderedQuery, suffix string, v Version) (required [][]string, forbidden []string, err error) {
	return memberOf(q.all("member_of"+suffix), suffix, v)
}

// memberOf reads the values of the group suffix's member_of parameter:
// several values from 1.24, forbidden aggregates ("!" and "!in:") from
// 1.32.
func memberOf(values []string, suffix string, v Version) (required [][]string, forbidden []string, err error) {
	if !v.AtLeast(24) && len(values) > 1 {
		return nil, nil, badRequest("Multiple member_of%s parameters are not supported", suffix)
	}
	for _, val := range values {
		if strings.Contains(val, ",") && !strings.HasPrefix(val, "in:") && !strings.HasPrefix(val, "!in:") {
			return nil, nil, badRequest("Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "+
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
		for _, u := range append(append([]string{}, req...), forb...) {
			if !uuid.Valid(u) {
				return nil, nil, badRequest("Invalid query string parameters: Expected 'member_of' parameter to "+
					"contain valid UUID(s). Got: %s", u)
			}
		}
		if len(req) > 0 {
			required = append(required, req)
		}
		if len(forb) > 0 {
			if !v.AtLeast(32) {
				return nil, nil, badRequest("Forbidden member_of%s parameters are not supported in the specified microversion", suffix)
			}
			for _, u := range forb {
				forbidden = appendUnique(forbidden, u)
			}
		}
	}
	return required, forbidden, nil
}

// parseInTree checks an in_tree value.
func parseInTree(val string) (string, error) {
	t := strings.TrimSpace(val)
	if !uuid.Valid(t) {
		return "", badRequest("Invalid query string parameters: Expected 'in_tree' parameter to be a format of uuid. Got: %s", val)
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
func parseRequestGroups(q orderedQuery, v Version, sameSubtrees [][]string) ([]engine.RequestGroup, error) {
	pattern := groupKeyPattern
	if v.AtLeast(33) {
		pattern = groupKeyPattern1_33
	}
	var groups []*parsedGroup
	bySuffix := map[string]*parsedGroup{}
	for _, p := range q {
		m := pattern.FindStringSubmatch(p.key)
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
		var err error
		switch prefix {
		case "resources":
			g.Resources, err = parseResources(p.value)
		case "required":
			g.RequiredTraits, g.ForbiddenTraits, err = parseRequired(q, p.key, v)
			g.hasRequired = len(g.RequiredTraits) > 0
		case "member_of":
			g.MemberOf, g.ForbiddenAggregates, err = parseMemberOf(q, suffix, v)
			g.hasMemberOf = len(g.MemberOf) > 0 || len(g.ForbiddenAggregates) > 0
		case "in_tree":
			g.InTree, err = parseInTree(p.value)
		}
		if err != nil {
			return nil, err
		}
	}
	return checkGroups(groups, v, sameSubtrees)
}

// checkGroups applies Placement's consistency checks for the
// microversion to the parsed groups of one request.
func checkGroups(groups []*parsedGroup, v Version, sameSubtrees [][]string) ([]engine.RequestGroup, error) {
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
		return newError(400, fault.CodeQueryMissingValue, "There must be at least one resources or resources[$S] parameter.")
	}
	var bad []string
	for _, s := range resourceless {
		if !inSubtree[s] {
			bad = append(bad, s)
		}
	}
	if len(bad) > 0 {
		return newError(400, fault.CodeQueryBadValue, "Resourceless suffixed group request should be specified in "+
			"`same_subtree` query param: bad group(s) - %s.", pyList(bad))
	}
	known := map[string]bool{}
	var all []string
	for _, g := range groups {
		known[g.Suffix] = true
		all = append(all, g.Suffix)
	}
	bad = nil
	for _, st := range sameSubtrees {
		for _, s := range st {
			if !known[s] {
				bad = appendUnique(bad, s)
			}
		}
	}
	if len(bad) > 0 {
		return newError(400, fault.CodeQueryBadValue, "Real suffixes should be specified in `same_subtree`: "+
			"%s not found in %s.", pyList(bad), pyList(all))
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
		return badRequest("All traits parameters must be associated with resources.  "+
			"Found the following orphaned traits keys: %s", strings.Join(orphans, ", "))
	}
	for _, g := range groups {
		if g.hasMemberOf && len(g.Resources) == 0 {
			orphans = append(orphans, "member_of"+g.Suffix)
		}
	}
	if len(orphans) > 0 {
		return badRequest("All member_of parameters must be associated with resources. "+
			"Found the following orphaned member_of keys: %s", strings.Join(orphans, ", "))
	}
	for _, g := range groups {
		if len(g.Resources) == 0 {
			return badRequest("All request groups must specify resources.")
		}
	}
	if len(groups) == 0 {
		return badRequest("At least one request group (`resources` or `resources{$S}`) is required.")
	}
	return nil
}

// checkConflicts refuses an any-of set of required traits that are all
// forbidden in the same group.
func checkConflicts(groups []*parsedGroup) error {
	var conflicts []string
	for _, g := range groups {
		for _, any := range g.RequiredTraits {
			all := true
			for _, t := range any {
				if !contains(g.ForbiddenTraits, t) {
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
		return badRequest("Conflicting required and forbidden traits found in the following traits keys: %s",
			strings.Join(conflicts, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pyList renders strings as a Python list literal: ['a', 'b'].
func pyList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "'" + s + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
