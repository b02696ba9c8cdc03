package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/keystone"
)

// KeystoneAuthenticator validates Keystone tokens for AuthKeystone;
// *keystone.Client is the one berthd uses.
type KeystoneAuthenticator interface {
	// Authenticate validates a request's X-Auth-Token and, if not empty,
	// X-Service-Token. Its errors wrap keystone.ErrNoToken,
	// ErrInvalidToken or ErrUnavailable.
	Authenticate(ctx context.Context, userToken, serviceToken string) (keystone.Auth, error)
	// AuthURL is the Identity endpoint named in 401 challenges.
	AuthURL() string
	// Ready reports whether Keystone answers (for /readyz).
	Ready(ctx context.Context) error
}

var _ KeystoneAuthenticator = (*keystone.Client)(nil)

const (
	headerServiceToken    = "X-Service-Token"
	headerWWWAuthenticate = "WWW-Authenticate"
	// retryAfterIdentity is the Retry-After (seconds) of that 503.
	retryAfterIdentity = 5
)

// keystoneCredentials validates the request's tokens with Keystone (cached)
// and returns the identity the policy engine sees, as keystonemiddleware
// and oslo.context make it: the user's token's user, project, domains,
// system scope and roles (implied ones included), and the service token's
// user, project and roles. A missing, invalid or expired token is 401 with
// Keystone's WWW-Authenticate challenge; Keystone out of reach is 503
// with Retry-After, never 401.
func (s *Server) keystoneCredentials(c echo.Context) (authz.Credentials, error) {
	h := c.Request().Header
	a, err := s.cfg.Keystone.Authenticate(c.Request().Context(), h.Get(headerAuthToken), h.Get(headerServiceToken))
	switch {
	case err == nil:
	case errors.Is(err, keystone.ErrNoToken), errors.Is(err, keystone.ErrInvalidToken):
		// keystonemiddleware's answer, whatever the reason (which goes
		// to the debug log).
		c.Response().Header().Set(headerWWWAuthenticate, `Keystone uri="`+s.cfg.Keystone.AuthURL()+`"`)
		s.log.DebugContext(c.Request().Context(), "token refused", "invalid", errors.Is(err, keystone.ErrInvalidToken))
		e := unauthenticated("The request you have made requires authentication.")
		e.Body = wire.KeystoneBody
		return authz.Credentials{}, e
	default:
		// The cause names the token by its hash only (keystone.TokenHash).
		s.log.WarnContext(c.Request().Context(), "token not validated: keystone unavailable", "error", err)
		return authz.Credentials{}, &wire.Error{Status: http.StatusServiceUnavailable, Code: fault.CodeIdentityUnavailable,
			Msg: "The identity service could not validate the token; try again later.", RetryAfter: retryAfterIdentity}
	}
	u := a.User
	p := authz.Credentials{
		Roles: u.Roles, UserID: u.UserID, ProjectID: u.ProjectID, SystemScope: u.SystemScope,
		DomainID: u.DomainID, UserDomainID: u.UserDomainID, ProjectDomainID: u.ProjectDomainID, ExpiresAt: u.ExpiresAt,
	}
	if svc := a.Service; svc != nil {
		p.ServiceRoles, p.ServiceUserID, p.ServiceProjectID = svc.Roles, svc.UserID, svc.ProjectID
	}
	return p, nil
}

// keystoneReady is the Keystone part of /readyz: nil without AuthKeystone.
func (s *Server) keystoneReady(ctx context.Context) error {
	if s.cfg.Auth != AuthKeystone || s.cfg.Keystone == nil {
		return nil
	}
	return s.cfg.Keystone.Ready(ctx)
}
