package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
)

// CORS as Placement does it with oslo.middleware's CORS middleware. The
// header lists are fixed: what a browser client of the Placement API needs.
var (
	// corsAllowMethods are the methods a preflight may ask for.
	corsAllowMethods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete}
	// corsAllowHeaders may be sent cross-origin, besides the simple
	// headers below.
	corsAllowHeaders = []string{headerAuthToken, wire.HeaderRequestID, wire.HeaderAPIVersion}
	// corsSimpleHeaders are oslo.middleware's always-allowed request
	// headers.
	corsSimpleHeaders = []string{"Accept", "Accept-Language", "Content-Type", "Cache-Control",
		"Content-Language", "Expires", "Last-Modified", "Pragma"}
	// corsExposeHeaders are the response headers scripts may read beyond
	// the simple ones.
	corsExposeHeaders = []string{wire.HeaderRequestID, wire.HeaderAPIVersion, echo.HeaderLocation}
)

// corsMaxAge is how long, in seconds, a browser may cache a preflight
// answer (oslo.middleware's default).
const corsMaxAge = "3600"

// ValidateOrigin checks that origin is "*" or a bare origin as browsers
// send it: scheme://host[:port], with no path, not even "/".
func ValidateOrigin(origin string) error {
	if origin == "*" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(origin, "?") {
		return fmt.Errorf("CORS origin %q: want scheme://host[:port] (http or https, no path) or *", origin)
	}
	return nil
}

// cors answers and decorates cross-origin requests, as oslo.middleware:
//
//   - Every OPTIONS request is answered 200 with an empty body (Placement
//     itself would answer 405); it is a preflight, and gets
//     Access-Control-Allow-* headers, if its Origin is allowed and the
//     method and headers it asks for are permitted.
//   - Other requests from an allowed origin get Access-Control-Allow-Origin,
//     -Allow-Credentials and -Expose-Headers on their response, errors
//     included.
//   - Requests from other origins get no CORS headers at all.
type cors struct {
	origins []string
}

func newCORS(origins []string) *cors { return &cors{origins: origins} }

// allowed returns the Access-Control-Allow-Origin value for origin, and
// whether it is allowed at all.
func (cr *cors) allowed(origin string) (string, bool) {
	switch {
	case origin == "":
		return "", false
	case slices.Contains(cr.origins, origin):
		return origin, true
	case slices.Contains(cr.origins, "*"):
		return "*", true
	}
	return "", false
}

// decorate sets on h the CORS headers of the answer to a request (not
// a preflight) whose headers are reqH, when its Origin is allowed. They
// are set before the handler writes; error answers keep them.
func (cr *cors) decorate(reqH, h http.Header) {
	if origin, ok := cr.allowed(reqH.Get("Origin")); ok {
		h.Add(echo.HeaderVary, echo.HeaderOrigin)
		h.Set(echo.HeaderAccessControlAllowOrigin, origin)
		h.Set(echo.HeaderAccessControlAllowCredentials, "true")
		h.Set(echo.HeaderAccessControlExposeHeaders, strings.Join(corsExposeHeaders, ","))
	}
}

// preflight sets the preflight answer headers on h when the request in
// reqH passes every step of the CORS preflight check (W3C CORS 6.2), and
// nothing otherwise.
func (cr *cors) preflight(reqH, h http.Header) {
	origin, ok := cr.allowed(reqH.Get(echo.HeaderOrigin))
	if !ok {
		return
	}
	method := reqH.Get(echo.HeaderAccessControlRequestMethod)
	if method == "" || !slices.Contains(corsAllowMethods, method) {
		return
	}
	var asked []string
	for _, v := range reqH.Values(echo.HeaderAccessControlRequestHeaders) {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				asked = append(asked, name)
			}
		}
	}
	for _, name := range asked {
		permitted := func(p string) bool { return strings.EqualFold(p, name) }
		if !slices.ContainsFunc(corsAllowHeaders, permitted) && !slices.ContainsFunc(corsSimpleHeaders, permitted) {
			return
		}
	}
	h.Add(echo.HeaderVary, echo.HeaderOrigin)
	h.Set(echo.HeaderAccessControlAllowOrigin, origin)
	h.Set(echo.HeaderAccessControlAllowCredentials, "true")
	h.Set(echo.HeaderAccessControlMaxAge, corsMaxAge)
	h.Set(echo.HeaderAccessControlAllowMethods, method)
	if len(asked) > 0 {
		h.Set(echo.HeaderAccessControlAllowHeaders, strings.Join(asked, ","))
	}
}
