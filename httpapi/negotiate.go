package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// acceptable reports whether an Accept header admits mediaType
// (wildcards and q-values considered; q=0 excludes).
func acceptable(accept, mediaType string) bool {
	typ, sub, _ := strings.Cut(mediaType, "/")
	for _, r := range strings.Split(accept, ",") {
		parts := strings.Split(r, ";")
		rng := strings.ToLower(strings.TrimSpace(parts[0]))
		q := 1.0
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		if q <= 0 {
			continue
		}
		rt, rs, _ := strings.Cut(rng, "/")
		if (rt == "*" || rt == typ) && (rs == "*" || rs == sub) {
			return true
		}
	}
	return false
}

// requireJSONAccept refuses requests whose Accept header rules out JSON,
// the only media type this API produces.
func requireJSONAccept(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if a := c.Request().Header.Get(echo.HeaderAccept); a != "" && !acceptable(a, "application/json") {
			return newError(http.StatusNotAcceptable, "", "Only application/json is provided")
		}
		return next(c)
	}
}

// checkContentHeaders runs before routing: a body needs a content type, and
// Content-Length must be an integer.
func checkContentHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Header.Get(headerInvalidContentLength) != "" {
			c.Response().Header().Set(echo.HeaderConnection, "close")
			return badRequest("content-length header must be an integer")
		}
		if cl := req.Header.Get(echo.HeaderContentLength); cl != "" {
			n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64)
			if err != nil {
				return badRequest("content-length header must be an integer")
			}
			if n > 0 && req.Header.Get(echo.HeaderContentType) == "" {
				return contentTypeRequired()
			}
		} else if req.ContentLength > 0 && req.Header.Get(echo.HeaderContentType) == "" {
			return contentTypeRequired()
		}
		return next(c)
	}
}

// requireJSONBody refuses a request body that is not declared as JSON.
func requireJSONBody(c echo.Context) error {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != echo.MIMEApplicationJSON {
		shown := ct
		if shown == "" {
			shown = "None"
		} else if err == nil {
			shown = mt
		}
		return newError(http.StatusUnsupportedMediaType, "",
			"The media type %s is not supported, use application/json", shown)
	}
	return nil
}

// contentTypeRequired is Placement's answer to a body without a
// Content-Type, which its content check raises outside the handler's
// wrapper: no Vary.
func contentTypeRequired() *Error {
	e := badRequest("content-type header required when content-length > 0")
	e.NoVary = true
	return e
}
