package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/httpapi/berthapi"
	"github.com/berthd/berth/httpapi/wire"
)

// Authentication strategies.
const (
	// AuthNoAuth2 is Placement's noauth2 strategy, for development and
	// tests: X-Auth-Token "user[:project]" is required and trusted as is;
	// the roles are X-Roles when the request has that header, else admin
	// for user "admin" and none for anyone else; X-Project-Id, when
	// present, overrides the token's project; OpenStack-System-Scope makes
	// the token system-scoped (with no project unless X-Project-Id names
	// one). Anyone who can reach berthd can claim any identity.
	AuthNoAuth2 = "noauth2"
	// AuthTokens accepts only the static tokens of Config.Tokens; identity
	// headers are ignored.
	AuthTokens = "tokens"
	// AuthKeystoneHeaders trusts the identity headers that an
	// authenticating proxy in front of berthd, such as keystonemiddleware's
	// auth_token, sets after validating the caller's token: it requires
	// X-Identity-Status: Confirmed and takes X-Roles, X-Project-Id,
	// X-User-Id and OpenStack-System-Scope as they are. Safe only when
	// nothing but that proxy can reach berthd, and the proxy strips these
	// headers from what clients send (keystonemiddleware does).
	AuthKeystoneHeaders = "keystone-headers"
	// AuthKeystone validates X-Auth-Token (and X-Service-Token) with
	// Keystone itself, as keystonemiddleware's auth_token does for
	// Placement: see auth_keystone.go and Config.Keystone.
	AuthKeystone = "keystone"
)

// AuthStrategies lists the authentication strategies.
func AuthStrategies() []string {
	return []string{AuthNoAuth2, AuthTokens, AuthKeystoneHeaders, AuthKeystone}
}

// Request headers carrying identity.
const (
	headerAuthToken      = "X-Auth-Token"
	headerRoles          = "X-Roles"
	headerProjectID      = "X-Project-Id"
	headerUserID         = "X-User-Id"
	headerSystemScope    = "OpenStack-System-Scope"
	headerSystemScopeKey = "Openstack-System-Scope" // canonical: see wire.HeaderAPIVersionKey
	headerIdentityStatus = "X-Identity-Status"
)

// public reports whether path needs no identity: the version document
// at / and the API's description at /openapi.json.
func public(path string) bool { return path == "/" || path == openAPIPath }

// principal is the identity of the request according to Config.Auth, or
// its refusal. Placement's auth middleware sits outside its microversion
// middleware, so a 401 carries no version header and no Vary (PreVersion).
func (s *Server) credentials(c echo.Context) (authz.Credentials, error) {
	h := c.Request().Header
	switch s.cfg.Auth {
	case AuthKeystone:
		return s.keystoneCredentials(c)
	case AuthKeystoneHeaders:
		// keystonemiddleware sets Invalid (with delay_auth_decision) or
		// answers 401 itself; no header at all means no proxy vouched
		// for the request.
		if h.Get(headerIdentityStatus) != "Confirmed" {
			return authz.Credentials{}, unauthenticated("The request was not authenticated by the identity proxy (no X-Identity-Status: Confirmed).")
		}
		return authz.Credentials{
			Roles:       splitRoles(h.Get(headerRoles)),
			ProjectID:   h.Get(headerProjectID),
			UserID:      h.Get(headerUserID),
			SystemScope: h.Get(headerSystemScopeKey),
		}, nil
	case AuthTokens:
		token := h.Get(headerAuthToken)
		if token == "" {
			return authz.Credentials{}, unauthenticated("No X-Auth-Token header was supplied.")
		}
		p, ok := s.cfg.Tokens[token]
		if !ok {
			return authz.Credentials{}, unauthenticated("The X-Auth-Token is not valid.")
		}
		return p, nil
	default:
		// Placement's NoAuthMiddleware wants the header, empty or not,
		// and refuses with a bare webob 401 in webob's own JSON.
		if _, ok := h[http.CanonicalHeaderKey(headerAuthToken)]; !ok {
			e := unauthenticated("")
			e.Body = wire.WebobBody
			return authz.Credentials{}, e
		}
		return noAuth2Credentials(h.Get(headerAuthToken), h), nil
	}
}

// unauthenticated is a 401 from the authentication step.
func unauthenticated(msg string) *wire.Error {
	e := wire.NewError(http.StatusUnauthorized, "", "%s", msg)
	e.PreVersion = true
	return e
}

// noAuth2Credentials is the identity Placement's NoAuthMiddleware and
// oslo.context make of a request: see AuthNoAuth2.
func noAuth2Credentials(token string, h http.Header) authz.Credentials {
	user, project, _ := strings.Cut(token, ":")
	if project == "" {
		project = user
	}
	p := authz.Credentials{UserID: user, SystemScope: h.Get(headerSystemScopeKey)}
	if _, ok := h[http.CanonicalHeaderKey(headerRoles)]; ok {
		p.Roles = splitRoles(h.Get(headerRoles))
	} else if user == "admin" {
		p.Roles = adminRoles[:1:1]
	}
	switch {
	case h.Get(headerProjectID) != "":
		p.ProjectID = h.Get(headerProjectID)
	case p.SystemScope == "":
		p.ProjectID = project
	}
	return p
}

// adminRoles are the roles of noauth2's admin user, one array every
// such request shares: nothing writes a caller's roles (an append copies
// them, its capacity being its length).
var adminRoles = [1]string{"admin"}

// splitRoles splits a comma-separated role list, dropping blanks.
func splitRoles(v string) []string {
	var roles []string
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); r != "" {
			roles = append(roles, r)
		}
	}
	return roles
}

// ruleTargets builds the policy target of the rules whose target is not
// the caller's own project and user (Placement's default target). GET
// /usages is checked against the project asked about, so that a project
// reader may see only its own project's usages; so is GET
// /limits/{project_id}, its limits; GET /limits and the registered limits
// name no project.
var ruleTargets = map[string]func(c echo.Context) authz.Target{
	"placement:usages": func(c echo.Context) authz.Target {
		t := authz.Target{}
		if q := c.QueryParams(); q.Has("project_id") {
			t["project_id"] = q.Get("project_id")
		}
		return t
	},
	"berth:limits:show": func(c echo.Context) authz.Target {
		return authz.Target{"project_id": c.Param("project_id")}
	},
	"berth:limits:list": func(echo.Context) authz.Target { return authz.Target{} },
}

// policyCheck is how a route's policy rule is checked: against the
// target its function builds of the request and the caller.
type policyCheck struct {
	target func(c echo.Context, p authz.Credentials) authz.Target
}

// authorize is the check of the policy rule named rule (one of
// Placement's rule names, see package authz; anything else panics),
// which the chain (routeStep.serve) enforces with the server's enforcer,
// answering 403 in Placement's words when it refuses.
func (s *Server) authorize(rule string) policyCheck {
	if !slices.Contains(authz.OperationRules(), rule) {
		panic("httpapi: route guarded by unknown policy rule " + rule)
	}
	if f, ok := ruleTargets[rule]; ok {
		return policyCheck{target: func(c echo.Context, _ authz.Credentials) authz.Target { return f(c) }}
	}
	return policyCheck{target: policyTarget}
}

// policyTarget is the default policy target of c's caller p: its own
// project and user. An API request's target is a map the request keeps
// for its next checks and requests (an enforcer only reads a target, and
// a request's checks run one at a time, on its goroutine).
func policyTarget(c echo.Context, p authz.Credentials) authz.Target {
	r, ok := c.(*request)
	if !ok {
		return authz.Target{"project_id": p.ProjectID, "user_id": p.UserID}
	}
	if r.target == nil {
		r.target = make(authz.Target, 2)
	}
	r.target["project_id"], r.target["user_id"] = p.ProjectID, p.UserID
	return r.target
}

// callerRules answers whether a request's caller, as authentication
// resolved it (chain.go), passes a rule beyond its route's, with the
// default target (a berthapi.Authorizer).
type callerRules struct{ enforcer *authz.Enforcer }

var _ berthapi.Authorizer = callerRules{}

func (r callerRules) Allowed(c echo.Context, rule string) bool {
	p := credentialsOf(c)
	return r.enforcer.Allowed(rule, p, policyTarget(c, p))
}
