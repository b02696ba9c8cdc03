package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"

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

func (v Version) String() string {
	if v.Major == 1 && v.Minor >= 0 && v.Minor < len(versionStrings) {
		return versionStrings[v.Minor]
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// AtLeast reports whether v is 1.minor or later.
func (v Version) AtLeast(minor int) bool { return v.Major > 1 || (v.Major == 1 && v.Minor >= minor) }

func (v Version) less(o Version) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

const (
	headerAPIVersion = "OpenStack-API-Version"
	// headerAPIVersionKey is headerAPIVersion as net/http keys it
	// (canonical): Get, Values and Set canonicalise a key that is not,
	// allocating every time.
	headerAPIVersionKey = "Openstack-Api-Version"
	serviceType         = "placement"
	ctxVersion          = "berth.version"
)

// parseVersionHeader extracts the placement entry from an
// OpenStack-API-Version header value such as "placement 1.20" or
// "compute 2.1, placement latest", as microversion_parse does: the last
// entry naming the service (case-insensitively) wins; an entry is split at
// its first run of whitespace, and the rest, trimmed, is the version;
// only "latest", in lower case, means the newest. No entry means the
// minimum version. The second result is the version as the client wrote
// it, for messages.
func parseVersionHeader(value string) (Version, string, error) {
	// The entries from the last, without splitting the value into a
	// slice first.
	for more := true; more; {
		var entry string
		if i := strings.LastIndexByte(value, ','); i >= 0 {
			entry, value = value[i+1:], value[:i]
		} else {
			entry, more = value, false
		}
		service, rest, ok := cutAnySpace(strings.TrimSpace(entry))
		if !ok || !strings.EqualFold(service, serviceType) {
			continue
		}
		v := strings.TrimSpace(rest)
		if v == "latest" {
			return MaxVersion, v, nil
		}
		maj, min, err := parsePyVersion(v)
		if err != nil {
			return Version{}, v, newError(http.StatusBadRequest, "", "Invalid microversion: invalid version string: %s; %s", v, err)
		}
		return Version{maj, min}, v, nil
	}
	return MinVersion, "", nil
}

// cutAnySpace splits s at its first whitespace character (Python's
// str.split(None, 1) on a stripped string).
func cutAnySpace(s string) (before, after string, found bool) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, "", false
	}
	return s[:i], strings.TrimLeftFunc(s[i:], unicode.IsSpace), true
}

// microversion negotiates the request's microversion, stores it in the
// context and sets the response headers, which every response carries,
// errors included.
func (s *Server) microversion(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Placement's microversion middleware refuses a bad header before
		// the application runs: no version header, no Vary.
		// Repeated headers fold into one value, joined by commas, as WSGI
		// does.
		v, raw, err := parseVersionHeader(strings.Join(c.Request().Header.Values(headerAPIVersionKey), ","))
		if err == nil && (v.less(MinVersion) || MaxVersion.less(v)) {
			err = newError(http.StatusNotAcceptable, "", "Invalid microversion: Unacceptable version header: %s", raw)
		}
		if err != nil {
			// Placement's auth middleware runs first: a request it
			// refuses gets its 401 whatever the version header says.
			if c.Request().URL.Path != "/" {
				if _, aerr := s.credentials(c); aerr != nil {
					return aerr
				}
			}
			return err
		}
		h := c.Response().Header()
		h.Add(echo.HeaderVary, "openstack-api-version")
		h.Set(headerAPIVersionKey, versionHeader(v))
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

// versionHeader is the OpenStack-API-Version value answering v.
func versionHeader(v Version) string {
	if v.Major == 1 && v.Minor >= 0 && v.Minor < len(versionHeaders) {
		return versionHeaders[v.Minor]
	}
	return serviceType + " " + v.String()
}

// versionHeaders are versionHeader's values, "placement 1.0" to the
// latest.
var versionHeaders = func() []string {
	out := make([]string, len(versionStrings))
	for i, v := range versionStrings {
		out[i] = serviceType + " " + v
	}
	return out
}()
