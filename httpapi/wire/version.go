package wire

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
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

// Less reports whether v comes before o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

const (
	// HeaderAPIVersion carries the microversion, asked and answered.
	HeaderAPIVersion = "OpenStack-API-Version"
	// HeaderAPIVersionKey is HeaderAPIVersion as net/http keys it
	// (canonical): Get, Values and Set canonicalise a key that is not,
	// allocating every time.
	HeaderAPIVersionKey = "Openstack-Api-Version"
	// HeaderRequestID carries a request's id, req-<uuid>, in answers.
	HeaderRequestID = "X-Openstack-Request-Id"
	serviceType     = "placement"
	// ContextKeyVersion is the key under which SetVersion records the
	// negotiated microversion (a *Version) in an echo.Context: a Context
	// that keeps it in a field of its own answers Get and Set of this key
	// from that field.
	ContextKeyVersion = "berth.version"
)

// ParseVersionHeader extracts the placement entry from an
// OpenStack-API-Version header value such as "placement 1.20" or
// "compute 2.1, placement latest", as microversion_parse does: the last
// entry naming the service (case-insensitively) wins; an entry is split at
// its first run of whitespace, and the rest, trimmed, is the version;
// only "latest", in lower case, means the newest. No entry means the
// minimum version. The second result is the version as the client wrote
// it, for messages.
func ParseVersionHeader(value string) (Version, string, error) {
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
			return Version{}, v, NewError(http.StatusBadRequest, "", "Invalid microversion: invalid version string: %s; %s", v, err)
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

// parsePyVersion parses "X.Y" as microversion_parse does, with Python's
// int() on each side of the first dot, and words a failure as Python does.
func parsePyVersion(v string) (major, minor int, err error) {
	left, right, ok := strings.Cut(v, ".")
	if major, err = pyInt(left); err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("Version.__new__() missing 1 required positional argument: 'minor'")
	}
	if minor, err = pyInt(right); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// pyInt is Python's int(s) for the ASCII forms a header can carry:
// surrounding whitespace, a sign, digits with single underscores between.
func pyInt(s string) (int, error) {
	badErr := func() error { return fmt.Errorf("invalid literal for int() with base 10: %s", jsonschema.PyRepr(s)) }
	t := strings.TrimSpace(s)
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	if t == "" || t[0] == '_' || t[len(t)-1] == '_' || strings.Contains(t, "__") {
		return 0, badErr()
	}
	n := 0
	for _, r := range t {
		if r == '_' {
			continue
		}
		if r < '0' || r > '9' || n > 1e8 {
			return 0, badErr()
		}
		n = n*10 + int(r-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// SetVersion records v as the request's negotiated microversion: a
// pointer into versionValues for the microversions this server speaks
// (a Version itself would be allocated to go into the context's store
// on every request).
func SetVersion(c echo.Context, v Version) {
	if v.Major == 1 && v.Minor >= 0 && v.Minor < len(versionValues) {
		c.Set(ContextKeyVersion, &versionValues[v.Minor])
		return
	}
	// A copy, so that v is on the heap only on this path.
	out := v
	c.Set(ContextKeyVersion, &out)
}

// versionValues are the microversions 1.0 to the latest, which
// SetVersion records by pointer; never written.
var versionValues = func() []Version {
	out := make([]Version, MaxVersion.Minor+1)
	for i := range out {
		out[i] = Version{1, i}
	}
	return out
}()

// VersionOf returns the negotiated microversion of the request (the
// minimum before negotiation).
func VersionOf(c echo.Context) Version {
	if v, ok := c.Get(ContextKeyVersion).(*Version); ok {
		return *v
	}
	return MinVersion
}

// Negotiated returns the request's microversion and whether it was
// negotiated (it is not when the header was refused).
func Negotiated(c echo.Context) (Version, bool) {
	if v, ok := c.Get(ContextKeyVersion).(*Version); ok {
		return *v, true
	}
	return Version{}, false
}

// VersionHeader is the OpenStack-API-Version value answering v.
func VersionHeader(v Version) string {
	if v.Major == 1 && v.Minor >= 0 && v.Minor < len(versionHeaders) {
		return versionHeaders[v.Minor]
	}
	return serviceType + " " + v.String()
}

// versionStrings are the microversions' strings, "1.0" to the latest.
var versionStrings = func() []string {
	out := make([]string, MaxVersion.Minor+1)
	for i := range out {
		out[i] = "1." + strconv.Itoa(i)
	}
	return out
}()

// versionHeaders are VersionHeader's values, "placement 1.0" to the
// latest.
var versionHeaders = func() []string {
	out := make([]string, len(versionStrings))
	for i, v := range versionStrings {
		out[i] = serviceType + " " + v
	}
	return out
}()
