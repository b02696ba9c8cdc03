package authz

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Credentials are what a request's principal brings to a check, as
// oslo.context's policy values.
type Credentials struct {
	// Roles are the principal's roles, as Keystone flattens them (admin
	// implies member implies reader only if the token says so).
	Roles []string
	// ProjectID is the project the token is scoped to; empty for a
	// system-scoped token.
	ProjectID string
	UserID    string
	// SystemScope is "all" for a system-scoped token, else empty.
	SystemScope string
	// DomainID is the domain of a domain-scoped token; UserDomainID and
	// ProjectDomainID are the user's and the project's domains.
	DomainID, UserDomainID, ProjectDomainID string
	// ServiceRoles, ServiceUserID and ServiceProjectID describe the
	// X-Service-Token of a service acting for the user (empty without).
	ServiceRoles                    []string
	ServiceUserID, ServiceProjectID string
	// ExpiresAt is when the token expires, if known (Keystone's tokens);
	// rules do not look at it.
	ExpiresAt time.Time
}

// scope is the token scope oslo.policy derives from the credentials.
func (c Credentials) scope() string {
	if c.SystemScope != "" {
		return ScopeSystem
	}
	return ScopeProject
}

// Target is the object of an operation, like oslo.policy's target dict:
// "%(key)s" in the right-hand side of a check is replaced by Target[key].
type Target map[string]string

// Check is a parsed check string.
type Check interface {
	// eval reports whether creds pass the check on target. Rules named by
	// "rule:" checks are looked up in rules; their references are acyclic
	// (Enforcer checks that when it is built).
	eval(rules map[string]Check, t Target, c Credentials) bool
	String() string
}

type (
	trueCheck  struct{}
	falseCheck struct{}
	notCheck   struct{ c Check }
	andCheck   struct{ cs []Check }
	orCheck    struct{ cs []Check }
	// ruleCheck is "rule:NAME": the result of another rule.
	ruleCheck struct{ name string }
	// roleCheck is "role:NAME": the principal holds the role (compared
	// case-insensitively, as oslo.policy does).
	roleCheck struct{ match string }
	// genericCheck is "KIND:MATCH" where KIND names a credential
	// (project_id, user_id, system_scope, roles) or is a literal.
	genericCheck struct {
		kind, match string
		literal     *string
	}
)

func (trueCheck) eval(map[string]Check, Target, Credentials) bool  { return true }
func (falseCheck) eval(map[string]Check, Target, Credentials) bool { return false }
func (n notCheck) eval(r map[string]Check, t Target, c Credentials) bool {
	return !n.c.eval(r, t, c)
}

func (a andCheck) eval(r map[string]Check, t Target, c Credentials) bool {
	for _, x := range a.cs {
		if !x.eval(r, t, c) {
			return false
		}
	}
	return true
}

func (o orCheck) eval(r map[string]Check, t Target, c Credentials) bool {
	for _, x := range o.cs {
		if x.eval(r, t, c) {
			return true
		}
	}
	return false
}

// eval of an undefined rule is false, as in oslo.policy; Enforcer refuses
// to be built with one anyway.
func (rc ruleCheck) eval(r map[string]Check, t Target, c Credentials) bool {
	sub, ok := r[rc.name]
	return ok && sub.eval(r, t, c)
}

func (rc roleCheck) eval(_ map[string]Check, t Target, c Credentials) bool {
	want, ok := substitute(rc.match, t)
	if !ok {
		return false
	}
	return slices.ContainsFunc(c.Roles, func(r string) bool { return strings.EqualFold(r, want) })
}

// eval compares the substituted match with the credential (or literal)
// named by kind. An empty credential never matches, so that a token
// without a project cannot pass "project_id:%(project_id)s" against a
// target without one either.
func (g genericCheck) eval(_ map[string]Check, t Target, c Credentials) bool {
	want, ok := substitute(g.match, t)
	if !ok {
		return false
	}
	if g.literal != nil {
		return *g.literal == want
	}
	switch g.kind {
	case "project_id":
		return c.ProjectID != "" && c.ProjectID == want
	case "user_id":
		return c.UserID != "" && c.UserID == want
	case "system_scope":
		return c.SystemScope != "" && c.SystemScope == want
	case "roles":
		return slices.Contains(c.Roles, want)
	case "service_roles":
		return slices.Contains(c.ServiceRoles, want)
	case "domain_id":
		return c.DomainID != "" && c.DomainID == want
	case "user_domain_id":
		return c.UserDomainID != "" && c.UserDomainID == want
	case "project_domain_id":
		return c.ProjectDomainID != "" && c.ProjectDomainID == want
	case "service_user_id":
		return c.ServiceUserID != "" && c.ServiceUserID == want
	case "service_project_id":
		return c.ServiceProjectID != "" && c.ServiceProjectID == want
	}
	return false
}

func (trueCheck) String() string    { return "@" }
func (falseCheck) String() string   { return "!" }
func (n notCheck) String() string   { return "not " + operand(n.c) }
func (rc ruleCheck) String() string { return "rule:" + rc.name }
func (rc roleCheck) String() string { return "role:" + rc.match }
func (g genericCheck) String() string {
	return g.kind + ":" + g.match
}
func (a andCheck) String() string { return joinChecks(a.cs, " and ") }
func (o orCheck) String() string  { return joinChecks(o.cs, " or ") }

func joinChecks(cs []Check, sep string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = operand(c)
	}
	return strings.Join(parts, sep)
}

// operand renders c as an operand of and, or or not: compound checks in
// parentheses, even where precedence would not need them.
func operand(c Check) string {
	switch c.(type) {
	case andCheck, orCheck:
		return "(" + c.String() + ")"
	}
	return c.String()
}

var substitution = regexp.MustCompile(`%\(([^)]*)\)s`)

// substitute replaces each %(key)s in s with target[key]. It reports false
// when a key is missing, which makes the check fail (oslo.policy's
// KeyError).
func substitute(s string, t Target) (string, bool) {
	if !strings.Contains(s, "%(") {
		return s, true
	}
	ok := true
	out := substitution.ReplaceAllStringFunc(s, func(m string) string {
		v, found := t[m[2:len(m)-2]]
		ok = ok && found
		return v
	})
	return out, ok
}

// credentialKinds are the left-hand sides a generic check may name.
var credentialKinds = []string{"project_id", "user_id", "system_scope", "roles",
	"domain_id", "user_domain_id", "project_domain_id", "service_roles", "service_user_id", "service_project_id"}

// Parse parses an oslo.policy check string: checks ("@", "!",
// "rule:NAME", "role:NAME", "project_id:%(project_id)s", "user_id:...",
// "system_scope:all", "'literal':%(key)s") combined with "not", "and" and
// "or" (binding in that order, tightest first) and parentheses. The empty
// string always passes, as in oslo.policy.
//
// Unlike oslo.policy, which logs a syntax error and denies, Parse returns
// an error, as it does for check kinds Berth cannot evaluate (http:, or a
// credential it does not know), so a bad policy file stops berthd at start.
func Parse(s string) (Check, error) {
	toks := tokenize(s)
	if len(toks) == 0 {
		return trueCheck{}, nil
	}
	p := &parser{toks: toks}
	c, err := p.or()
	if err != nil {
		return nil, fmt.Errorf("check %q: %w", s, err)
	}
	if p.pos < len(p.toks) {
		return nil, fmt.Errorf("check %q: unexpected %q", s, p.toks[p.pos])
	}
	return c, nil
}

// tokenize splits s into "(", ")", "and", "or", "not" and checks, as
// oslo.policy's _parse_tokenize: on white space, with parentheses peeled
// off the ends of each word.
func tokenize(s string) []string {
	var toks []string
	for _, w := range strings.Fields(s) {
		clean := strings.TrimLeft(w, "(")
		for range len(w) - len(clean) {
			toks = append(toks, "(")
		}
		w = clean
		clean = strings.TrimRight(w, ")")
		if clean != "" {
			if l := strings.ToLower(clean); l == "and" || l == "or" || l == "not" {
				clean = l
			}
			toks = append(toks, clean)
		}
		for range len(w) - len(clean) {
			toks = append(toks, ")")
		}
	}
	return toks
}

type parser struct {
	toks []string
	pos  int
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) or() (Check, error) {
	first, err := p.and()
	if err != nil {
		return nil, err
	}
	cs := []Check{first}
	for p.peek() == "or" {
		p.pos++
		c, err := p.and()
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	if len(cs) == 1 {
		return first, nil
	}
	return orCheck{cs}, nil
}

func (p *parser) and() (Check, error) {
	first, err := p.not()
	if err != nil {
		return nil, err
	}
	cs := []Check{first}
	for p.peek() == "and" {
		p.pos++
		c, err := p.not()
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	if len(cs) == 1 {
		return first, nil
	}
	return andCheck{cs}, nil
}

func (p *parser) not() (Check, error) {
	if p.peek() == "not" {
		p.pos++
		c, err := p.not()
		if err != nil {
			return nil, err
		}
		return notCheck{c}, nil
	}
	return p.atom()
}

func (p *parser) atom() (Check, error) {
	tok := p.peek()
	switch tok {
	case "":
		return nil, fmt.Errorf("unexpected end")
	case "(":
		p.pos++
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return c, nil
	case ")", "and", "or", "not":
		return nil, fmt.Errorf("unexpected %q", tok)
	}
	p.pos++
	return parseCheck(tok)
}

// parseCheck parses one check word.
func parseCheck(tok string) (Check, error) {
	switch tok {
	case "@":
		return trueCheck{}, nil
	case "!":
		return falseCheck{}, nil
	}
	kind, match, ok := strings.Cut(tok, ":")
	if !ok {
		return nil, fmt.Errorf("%q is not KIND:MATCH, @ or !", tok)
	}
	switch kind {
	case "rule":
		return ruleCheck{match}, nil
	case "role":
		return roleCheck{match}, nil
	case "http", "https":
		return nil, fmt.Errorf("%q: %s checks are not supported", tok, kind)
	}
	if lit, ok := literal(kind); ok {
		return genericCheck{kind: kind, match: match, literal: &lit}, nil
	}
	if !slices.Contains(credentialKinds, kind) {
		return nil, fmt.Errorf("%q: unknown credential %q (want one of %s, or a quoted literal)",
			tok, kind, strings.Join(credentialKinds, ", "))
	}
	return genericCheck{kind: kind, match: match}, nil
}

// literal interprets the left-hand side of a generic check as a Python
// literal, as oslo.policy does with ast.literal_eval: a quoted string, a
// number, True or False, compared as its str().
func literal(kind string) (string, bool) {
	if len(kind) >= 2 && (kind[0] == '\'' || kind[0] == '"') && kind[len(kind)-1] == kind[0] {
		return kind[1 : len(kind)-1], true
	}
	if _, err := strconv.ParseInt(kind, 10, 64); err == nil {
		return kind, true
	}
	if kind == "True" || kind == "False" {
		return kind, true
	}
	return "", false
}
