package httpapi

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
)

// microversion negotiates the request's microversion (wire.Version),
// stores it in the context and sets the response headers, which every
// response carries, errors included.
func (s *Server) microversion(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Placement's microversion middleware refuses a bad header before
		// the application runs: no version header, no Vary.
		// Repeated headers fold into one value, joined by commas, as WSGI
		// does.
		v, raw, err := wire.ParseVersionHeader(strings.Join(c.Request().Header.Values(wire.HeaderAPIVersionKey), ","))
		if err == nil && (v.Less(wire.MinVersion) || wire.MaxVersion.Less(v)) {
			err = wire.NewError(http.StatusNotAcceptable, "", "Invalid microversion: Unacceptable version header: %s", raw)
		}
		if err != nil {
			// Placement's auth middleware runs first: a request it
			// refuses gets its 401 whatever the version header says.
			if !public(c.Request().URL.Path) {
				if _, aerr := s.credentials(c); aerr != nil {
					return aerr
				}
			}
			return err
		}
		h := c.Response().Header()
		h.Add(echo.HeaderVary, "openstack-api-version")
		h.Set(wire.HeaderAPIVersionKey, wire.VersionHeader(v))
		wire.SetVersion(c, v)
		return next(c)
	}
}
