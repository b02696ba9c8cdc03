package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// Principal is who a request acts for.
type Principal struct {
	Roles     []string
	ProjectID string
	UserID    string
}

// IsAdmin reports whether the principal holds the admin role.
func (p Principal) IsAdmin() bool { return slices.Contains(p.Roles, "admin") }

// Authentication strategies.
const (
	// AuthNoAuth2 trusts X-Auth-Token as "user[:project]", like Placement's
	// noauth2 strategy: user "admin" gets the admin role. For development only.
	AuthNoAuth2 = "noauth2"
	// AuthTokens accepts only the static tokens of Config.Tokens.
	AuthTokens = "tokens"
)

const (
	headerAuthToken = "X-Auth-Token"
	ctxPrincipal    = "berth.principal"
)

// authenticate resolves X-Auth-Token to a Principal. The version document
// at / needs no token.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().URL.Path == "/" {
			return next(c)
		}
		token := c.Request().Header.Get(headerAuthToken)
		if token == "" {
			return newError(http.StatusUnauthorized, "", "No X-Auth-Token header was supplied.")
		}
		var p Principal
		switch s.cfg.Auth {
		case AuthTokens:
			var ok bool
			if p, ok = s.cfg.Tokens[token]; !ok {
				return newError(http.StatusUnauthorized, "", "The X-Auth-Token is not valid.")
			}
		default:
			user, project, _ := strings.Cut(token, ":")
			if project == "" {
				project = user
			}
			p = Principal{UserID: user, ProjectID: project}
			if user == "admin" {
				p.Roles = []string{"admin"}
			}
		}
		c.Set(ctxPrincipal, p)
		return next(c)
	}
}

// authorize enforces the policy named rule. Every Placement operation is
// admin-only by default, as in Placement's legacy default policy.
func authorize(rule string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, _ := c.Get(ctxPrincipal).(Principal)
			if !p.IsAdmin() {
				return newError(http.StatusForbidden, "", "Policy does not allow %s to be performed.", rule)
			}
			return next(c)
		}
	}
}
