package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Version is a Placement microversion, 1.Minor. Placement has only ever
// had major version 1.
type Version struct{ Major, Minor int }

// The microversions this server speaks.
var (
	MinVersion = Version{1, 0}
	MaxVersion = Version{1, 39}
)

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v is 1.minor or later.
func (v Version) AtLeast(minor int) bool { return v.Major > 1 || (v.Major == 1 && v.Minor >= minor) }

func (v Version) less(o Version) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

const (
	headerAPIVersion = "OpenStack-API-Version"
	serviceType      = "placement"
	ctxVersion       = "berth.version"
)

// parseVersionHeader extracts the placement entry from an
// OpenStack-API-Version header value such as "placement 1.20" or
// "compute 2.1, placement latest". No entry means the minimum version.
func parseVersionHeader(value string) (Version, error) {
	for _, part := range strings.Split(value, ",") {
		fields := strings.Fields(part)
		if len(fields) != 2 || !strings.EqualFold(fields[0], serviceType) {
			continue
		}
		v := fields[1]
		if strings.EqualFold(v, "latest") {
			return MaxVersion, nil
		}
		maj, min, err := parsePyVersion(v)
		if err != nil {
			return Version{}, newError(http.StatusBadRequest, "", "Invalid microversion: invalid version string: %s; %s", v, err)
		}
		return Version{maj, min}, nil
	}
	return MinVersion, nil
}

// microversion negotiates the request's microversion, stores it in the
// context and sets the response headers, which every response carries,
// errors included.
func (s *Server) microversion(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Placement's microversion middleware refuses a bad header before
		// the application runs: no version header, no Vary.
		v, err := parseVersionHeader(c.Request().Header.Get(headerAPIVersion))
		if err == nil && (v.less(MinVersion) || MaxVersion.less(v)) {
			err = newError(http.StatusNotAcceptable, "", "Invalid microversion: Unacceptable version header: %s", v)
		}
		if err != nil {
			// Placement's auth middleware runs first: a request it
			// refuses gets its 401 whatever the version header says.
			if c.Request().URL.Path != "/" {
				if _, aerr := s.principal(c); aerr != nil {
					return aerr
				}
			}
			return err
		}
		h := c.Response().Header()
		h.Add(echo.HeaderVary, "openstack-api-version")
		h.Set(headerAPIVersion, serviceType+" "+v.String())
		c.Set(ctxVersion, v)
		return next(c)
	}
}

// version returns the negotiated microversion of the request.
func version(c echo.Context) Version {
	if v, ok := c.Get(ctxVersion).(Version); ok {
		return v
	}
	return MinVersion
}
