package authz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Enforcer answers policy questions for one rule set plus overrides. It is
// immutable and safe for concurrent use.
type Enforcer struct {
	set          string
	enforceScope bool
	checks       map[string]Check
	// scopes holds the scope_types of the registered rules; rules that an
	// override file adds have none and are never refused for scope.
	scopes map[string][]string
	unused []string
}

// New builds the enforcer of the built-in set name (one of Sets) with
// overrides: rule name to check string, as in an oslo.policy policy file.
// An override replaces the rule's check string outright (in the legacy set
// too: the deprecated default is no longer OR-ed in, as with
// oslo.policy); names that are not Placement rules define helper rules for
// "rule:" checks. New fails on a check string it cannot parse, a reference
// to an undefined rule or a cycle of rule references.
func New(name string, overrides map[string]string) (*Enforcer, error) {
	s, ok := sets[name]
	if !ok {
		return nil, fmt.Errorf("policy: unknown rule set %q (want one of %s)", name, strings.Join(Sets(), ", "))
	}
	e := &Enforcer{
		set:          name,
		enforceScope: s.enforceScope,
		checks:       map[string]Check{},
		scopes:       map[string][]string{},
	}
	source := map[string]string{}
	for _, r := range baseRules {
		source[r.Name] = s.check(r, false)
		e.scopes[r.Name] = r.Scopes
	}
	for _, r := range operationRules {
		source[r.Name] = s.check(r, true)
		e.scopes[r.Name] = r.Scopes
	}
	for rule, check := range overrides {
		source[rule] = check
	}
	var errs []string
	for rule, check := range source {
		c, err := Parse(check)
		if err != nil {
			errs = append(errs, fmt.Sprintf("rule %q: %v", rule, err))
			continue
		}
		e.checks[rule] = c
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("policy: %s", strings.Join(errs, "; "))
	}
	if err := e.checkReferences(); err != nil {
		return nil, err
	}
	referenced := map[string]bool{}
	for _, c := range e.checks {
		for _, ref := range references(c) {
			referenced[ref] = true
		}
	}
	for rule := range overrides {
		if _, registered := e.scopes[rule]; !registered && !referenced[rule] {
			e.unused = append(e.unused, rule)
		}
	}
	sort.Strings(e.unused)
	return e, nil
}

// checkReferences fails on "rule:" checks naming undefined rules and on
// cycles, so that evaluation always terminates.
func (e *Enforcer) checkReferences() error {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case visiting:
			return fmt.Errorf("policy: rules refer to each other in a cycle: %s", strings.Join(append(path, name), " -> "))
		case done:
			return nil
		}
		state[name] = visiting
		for _, ref := range references(e.checks[name]) {
			if _, ok := e.checks[ref]; !ok {
				return fmt.Errorf("policy: rule %q refers to undefined rule %q", name, ref)
			}
			if err := visit(ref, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = done
		return nil
	}
	names := make([]string, 0, len(e.checks))
	for name := range e.checks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := visit(name, nil); err != nil {
			return err
		}
	}
	return nil
}

// references lists the rules c names with "rule:".
func references(c Check) []string {
	switch c := c.(type) {
	case ruleCheck:
		return []string{c.name}
	case notCheck:
		return references(c.c)
	case andCheck:
		var out []string
		for _, x := range c.cs {
			out = append(out, references(x)...)
		}
		return out
	case orCheck:
		var out []string
		for _, x := range c.cs {
			out = append(out, references(x)...)
		}
		return out
	}
	return nil
}

// Set is the name of the enforcer's built-in rule set.
func (e *Enforcer) Set() string { return e.set }

// Unused lists the override names that are neither Placement rules nor
// referred to by any rule: most likely typos, worth a warning.
func (e *Enforcer) Unused() []string { return slices.Clone(e.unused) }

// Allowed reports whether creds may perform the operation guarded by rule
// on target. An unknown rule is refused. When the set enforces scope, a
// token whose scope (system or project) is not among the rule's scope
// types is refused before the check string is looked at, as
// oslo.policy's enforce_scope does.
func (e *Enforcer) Allowed(rule string, creds Credentials, target Target) bool {
	c, ok := e.checks[rule]
	if !ok {
		return false
	}
	if scopes := e.scopes[rule]; e.enforceScope && len(scopes) > 0 && !slices.Contains(scopes, creds.scope()) {
		return false
	}
	return c.eval(e.checks, target, creds)
}

// CheckString returns the effective check string of rule, normalised, and
// whether the rule exists.
func (e *Enforcer) CheckString(rule string) (string, bool) {
	c, ok := e.checks[rule]
	if !ok {
		return "", false
	}
	return c.String(), true
}

// LoadFile reads policy overrides from a file in oslo.policy's format: a
// single mapping from rule name to check string, in YAML (policy.yaml) or
// JSON (policy.json; chosen by a .json suffix or a leading "{"). A file
// with no rules (all comments, like oslopolicy-sample-generator's output)
// yields no overrides.
func LoadFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	// Decode into any and insist on strings: a YAML null would otherwise
	// become "", which allows everything.
	var doc map[string]any
	if strings.EqualFold(filepath.Ext(path), ".json") || bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		if len(bytes.TrimSpace(data)) > 0 {
			err = json.Unmarshal(data, &doc)
		}
	} else {
		err = yaml.Unmarshal(data, &doc)
	}
	if err != nil {
		return nil, fmt.Errorf("policy file %s: want a mapping of rule names to check strings: %w", path, err)
	}
	rules := make(map[string]string, len(doc))
	for rule, v := range doc {
		check, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("policy file %s: rule %q: check must be a string, not %v", path, rule, v)
		}
		rules[rule] = check
	}
	return rules, nil
}
