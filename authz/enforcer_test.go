package authz

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mustNew(t *testing.T, set string, overrides map[string]string) *Enforcer {
	t.Helper()
	e, err := New(set, overrides)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ownTarget is Placement's default target: the caller's own project.
func ownTarget(c Credentials) Target { return Target{"project_id": c.ProjectID, "user_id": c.UserID} }

// TestSets checks each built-in set on representative rules against the
// principals of Placement's RBAC functional tests.
func TestSets(t *testing.T) {
	const (
		list    = "placement:resource_providers:list"
		reshape = "placement:reshaper:reshape"
		usages  = "placement:usages"
	)
	p1 := Target{"project_id": "p1"}
	who := map[string]Credentials{
		"project admin": projectAdmin, "project member": projectMember, "project reader": projectReader,
		"alt reader": altReader, "service": serviceUser, "system admin": systemAdmin,
		"system reader": systemReader, "nobody": nobody,
	}
	type row struct {
		rule   string
		target Target // nil: the caller's own project
		allow  []string
	}
	for _, tc := range []struct {
		set  string
		rows []row
	}{
		{SetAdmin, []row{
			{list, nil, []string{"project admin", "system admin"}},
			{reshape, nil, []string{"project admin", "system admin"}},
			{usages, p1, []string{"project admin", "system admin"}},
		}},
		{SetSecure, []row{
			{list, nil, []string{"project admin", "service"}},
			{reshape, nil, []string{"service"}},
			{usages, p1, []string{"project admin", "project member", "project reader", "service"}},
			{usages, Target{}, []string{"project admin", "service"}},
		}},
		{SetLegacy, []row{
			{list, nil, []string{"project admin", "service"}},
			{reshape, nil, []string{"project admin", "service"}},
			{usages, p1, []string{"project admin", "project member", "project reader", "service"}},
		}},
		{SetOpen, []row{
			{list, nil, []string{"project admin", "project member", "project reader", "alt reader", "service",
				"system admin", "system reader", "nobody"}},
			{reshape, nil, []string{"project admin", "project member", "project reader", "alt reader", "service",
				"system admin", "system reader", "nobody"}},
		}},
	} {
		e := mustNew(t, tc.set, nil)
		for _, r := range tc.rows {
			for name, c := range who {
				target := r.target
				if target == nil {
					target = ownTarget(c)
				}
				want := false
				for _, a := range r.allow {
					want = want || a == name
				}
				if got := e.Allowed(r.rule, c, target); got != want {
					t.Errorf("%s: %s for %s on %v = %v, want %v", tc.set, r.rule, name, target, got, want)
				}
			}
		}
	}
}

func TestEveryOperationRuleIsDefinedInEverySet(t *testing.T) {
	for _, set := range Sets() {
		e := mustNew(t, set, nil)
		for _, rule := range OperationRules() {
			if _, ok := e.CheckString(rule); !ok {
				t.Errorf("%s: no rule %s", set, rule)
			}
			// The admin role of a project passes every rule of every set but
			// one: the secure reshaper is for the service role only.
			if got := e.Allowed(rule, projectAdmin, ownTarget(projectAdmin)); !got && (set != SetSecure || rule != "placement:reshaper:reshape") {
				t.Errorf("%s: project admin refused %s", set, rule)
			}
		}
	}
	if e := mustNew(t, SetAdmin, nil); e.Allowed("placement:no_such_rule", projectAdmin, nil) {
		t.Error("an unknown rule was allowed")
	}
}

func TestLegacyCheckStrings(t *testing.T) {
	e := mustNew(t, SetLegacy, nil)
	got, _ := e.CheckString("placement:reshaper:reshape")
	if want := "rule:service_api or rule:admin_api"; got != want {
		t.Errorf("legacy reshape = %q, want %q", got, want)
	}
	got, _ = e.CheckString(RuleAdminAPI)
	if got != "role:admin" {
		t.Errorf("legacy admin_api = %q", got)
	}
}

func TestOverrides(t *testing.T) {
	e := mustNew(t, SetLegacy, map[string]string{
		// Replaces the rule outright: the deprecated default no longer
		// applies, so the project admin loses it.
		"placement:reshaper:reshape": "rule:service_api",
		// A helper rule, and an operation rule that uses it.
		"readers":                           "role:reader",
		"placement:resource_providers:list": "rule:readers or rule:admin_api",
		"placement:typo":                    "@",
	})
	if e.Allowed("placement:reshaper:reshape", projectAdmin, ownTarget(projectAdmin)) {
		t.Error("overridden reshape still allows the admin")
	}
	if !e.Allowed("placement:resource_providers:list", projectReader, ownTarget(projectReader)) {
		t.Error("overridden list refuses a reader")
	}
	// Scope is still enforced for registered rules.
	if e.Allowed("placement:resource_providers:list", systemReader, Target{}) {
		t.Error("a system-scoped reader passed a project-scoped rule")
	}
	if got := e.Unused(); !reflect.DeepEqual(got, []string{"placement:typo"}) {
		t.Errorf("Unused = %v", got)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		set       string
		overrides map[string]string
		want      string
	}{
		{"strict", nil, "unknown rule set"},
		{SetSecure, map[string]string{"placement:usages": "role:"}, ""},
		{SetSecure, map[string]string{"placement:usages": "role:a or"}, `rule "placement:usages"`},
		{SetSecure, map[string]string{"placement:usages": "rule:nope"}, `refers to undefined rule "nope"`},
		{SetSecure, map[string]string{"a": "rule:b", "b": "rule:a", "placement:usages": "rule:a"}, "cycle"},
		{SetSecure, map[string]string{"placement:usages": "rule:placement:usages"}, "cycle"},
	} {
		_, err := New(tc.set, tc.overrides)
		if tc.want == "" {
			if err != nil {
				t.Errorf("New(%s, %v): %v", tc.set, tc.overrides, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s, %v) = %v, want an error mentioning %q", tc.set, tc.overrides, err, tc.want)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	want := map[string]string{
		"placement:usages":                  "role:reader and project_id:%(project_id)s",
		"placement:resource_providers:list": "role:admin or role:service",
	}
	for name, content := range map[string]string{
		"policy.yaml": `# Placement policy overrides
"placement:usages": "role:reader and project_id:%(project_id)s"
# list providers
placement:resource_providers:list: role:admin or role:service
`,
		"policy.json": `{"placement:usages": "role:reader and project_id:%(project_id)s",
	"placement:resource_providers:list": "role:admin or role:service"}`,
		"policy.conf": `{"placement:usages": "role:reader and project_id:%(project_id)s", "placement:resource_providers:list": "role:admin or role:service"}`,
	} {
		got, err := LoadFile(write(name, content))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v", name, got)
		}
	}
	if got, err := LoadFile(write("empty.yaml", "# all defaults\n#\"placement:usages\": \"@\"\n")); err != nil || len(got) != 0 {
		t.Errorf("commented-out file: %v, %v", got, err)
	}
	for name, content := range map[string]string{
		"null.yaml":  "placement:usages:\n",
		"list.yaml":  "- role:admin\n",
		"bad.json":   `{"placement:usages": }`,
		"nested.yml": "placement:usages:\n  a: b\n",
	} {
		if got, err := LoadFile(write(name, content)); err == nil {
			t.Errorf("%s: no error, got %v", name, got)
		}
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file: no error")
	}
}
