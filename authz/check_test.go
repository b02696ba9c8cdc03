package authz

import (
	"strings"
	"testing"
)

var (
	projectAdmin  = Credentials{Roles: []string{"admin", "member", "reader"}, ProjectID: "p1", UserID: "u1"}
	projectMember = Credentials{Roles: []string{"member", "reader"}, ProjectID: "p1", UserID: "u2"}
	projectReader = Credentials{Roles: []string{"reader"}, ProjectID: "p1", UserID: "u3"}
	altReader     = Credentials{Roles: []string{"reader"}, ProjectID: "p2", UserID: "u4"}
	serviceUser   = Credentials{Roles: []string{"service"}, ProjectID: "svc", UserID: "nova"}
	systemAdmin   = Credentials{Roles: []string{"admin", "member", "reader"}, SystemScope: "all", UserID: "u5"}
	systemReader  = Credentials{Roles: []string{"reader"}, SystemScope: "all", UserID: "u6"}
	nobody        = Credentials{UserID: "u7", ProjectID: "p1"}
	// A user's token with a service's X-Service-Token, in domain d1.
	novaForUser = Credentials{Roles: []string{"member", "reader"}, ProjectID: "p1", UserID: "u8",
		UserDomainID: "d1", ProjectDomainID: "d1", ServiceRoles: []string{"service"}, ServiceUserID: "nova", ServiceProjectID: "svc"}
	domainAdmin = Credentials{Roles: []string{"admin"}, DomainID: "d1", UserID: "u9"}
)

func TestCheckStrings(t *testing.T) {
	own := Target{"project_id": "p1", "user_id": "u1"}
	for _, tc := range []struct {
		check  string
		creds  Credentials
		target Target
		want   bool
	}{
		{"", nobody, own, true},
		{"@", nobody, own, true},
		{"!", projectAdmin, own, false},
		{"role:admin", projectAdmin, own, true},
		{"role:ADMIN", projectAdmin, own, true},
		{"role:admin", projectMember, own, false},
		{"role:admin", systemAdmin, own, true},
		{"role:%(role)s", projectReader, Target{"role": "reader"}, true},
		{"role:%(role)s", projectReader, Target{}, false},
		{"system_scope:all", systemReader, own, true},
		{"system_scope:all", projectAdmin, own, false},
		{"role:reader and system_scope:all", systemReader, own, true},
		{"role:reader and system_scope:all", projectReader, own, false},
		{"project_id:%(project_id)s", projectReader, own, true},
		{"project_id:%(project_id)s", altReader, own, false},
		{"project_id:%(project_id)s", projectReader, Target{}, false},
		// An empty credential never matches, not even an empty target.
		{"project_id:%(project_id)s", systemReader, Target{"project_id": ""}, false},
		{"user_id:%(user_id)s", projectAdmin, own, true},
		{"user_id:%(user_id)s", projectMember, own, false},
		{"roles:service", serviceUser, own, true},
		{"service_roles:service", novaForUser, own, true},
		{"service_roles:service", serviceUser, own, false},
		{"role:service", novaForUser, own, false},
		{"service_user_id:nova and service_project_id:svc", novaForUser, own, true},
		{"project_domain_id:d1 and user_domain_id:d1", novaForUser, own, true},
		{"domain_id:%(domain_id)s", domainAdmin, Target{"domain_id": "d1"}, true},
		{"domain_id:%(domain_id)s", novaForUser, Target{"domain_id": "d1"}, false},
		{"(role:member and project_id:%(project_id)s)", projectMember, own, true},
		{"(role:member and project_id:%(project_id)s)", altReader, own, false},
		{"role:admin or role:service", serviceUser, own, true},
		{"role:admin or role:service", projectReader, own, false},
		{"role:reader and project_id:%(project_id)s or role:admin", altReader, own, false},
		{"role:reader and project_id:%(project_id)s or role:admin", projectReader, own, true},
		{"role:reader and project_id:%(project_id)s or role:admin", systemAdmin, own, true},
		// and binds tighter than or; not tighter than and.
		{"role:service or role:reader and role:admin", projectReader, own, false},
		{"(role:service or role:reader) and role:admin", projectAdmin, own, true},
		{"not role:admin", projectReader, own, true},
		{"not role:admin and role:reader", projectAdmin, own, false},
		{"not (role:admin or role:member)", projectReader, own, true},
		{"not not role:reader", projectReader, own, true},
		{"((role:reader))", projectReader, own, true},
		{"role:admin AND role:reader", projectAdmin, own, true},
		{"'p1':%(project_id)s", nobody, own, true},
		{"'p2':%(project_id)s", nobody, own, false},
		{"True:%(enabled)s", nobody, Target{"enabled": "True"}, true},
	} {
		c, err := Parse(tc.check)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.check, err)
			continue
		}
		if got := c.eval(nil, tc.target, tc.creds); got != tc.want {
			t.Errorf("%q for %+v on %v = %v, want %v", tc.check, tc.creds, tc.target, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ check, want string }{
		{"role:admin or", "unexpected end"},
		{"and role:admin", `unexpected "and"`},
		{"(role:admin", "missing )"},
		{"role:admin)", `unexpected ")"`},
		{"role:admin role:reader", `unexpected "role:reader"`},
		{"admin", "is not KIND:MATCH"},
		{"http://example.com/check", "not supported"},
		{"is_admin_project:True", "unknown credential"},
		{"not", "unexpected end"},
	} {
		_, err := Parse(tc.check)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error mentioning %q", tc.check, err, tc.want)
		}
	}
}

func TestCheckStringRoundTrip(t *testing.T) {
	for _, s := range []string{
		"role:admin or role:service",
		"role:reader and project_id:%(project_id)s",
		"(role:admin or role:service) and not system_scope:all",
		"rule:a or (rule:b and rule:c)",
		"not (role:admin or role:member) and role:reader",
	} {
		c, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if c.String() != s {
			t.Errorf("String() = %q, want %q", c.String(), s)
		}
	}
}
