package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/admission"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/uuid"
)

// The small middleware of the request chain (server.go, New): the
// request id, the request's deadline, the refusal of methods a path does
// not have, and the checks of the content headers. Microversion negotiation
// (microversion.go), the log line, span and metrics (telemetry.go),
// authentication and authorisation (auth.go) and CORS (cors.go) have
// files of their own.

const ctxRequestID = "berth.request_id"

// assignRequestID gives every request an id of the form req-<uuid>, returned
// in X-Openstack-Request-Id and carried in error bodies and logs.
func assignRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := uuid.NewPrefixed("req-")
		c.Set(ctxRequestID, id)
		c.Response().Header().Set(wire.HeaderRequestID, id)
		return next(c)
	}
}

func requestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// deadline ends the request's context after cfg.RequestTimeout (see
// Config.RequestTimeout).
func (s *Server) deadline(next echo.HandlerFunc) echo.HandlerFunc {
	if s.cfg.RequestTimeout < 0 {
		return next
	}
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.RequestTimeout)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// rejectMethod prepares the 405 of a method a known path does not have:
// its Allow header lists the path's methods in Placement's order, and
// OPTIONS is refused too, as Placement does, instead of echo's automatic
// 204.
func (s *Server) rejectMethod(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Get(echo.ContextKeyHeaderAllow) == nil {
			return next(c)
		}
		if allow, ok := s.allow[c.Path()]; ok {
			c.Set(echo.ContextKeyHeaderAllow, allow)
		}
		if c.Request().Method == http.MethodOptions {
			return echo.ErrMethodNotAllowed
		}
		return next(c)
	}
}

// checkContentHeaders runs before routing: a body needs a content type, and
// Content-Length must be an integer.
func checkContentHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Header.Get(admission.HeaderInvalidContentLength) != "" {
			c.Response().Header().Set(echo.HeaderConnection, "close")
			return wire.BadRequest("content-length header must be an integer")
		}
		if cl := req.Header.Get(echo.HeaderContentLength); cl != "" {
			n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64)
			if err != nil {
				return wire.BadRequest("content-length header must be an integer")
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

// contentTypeRequired is Placement's answer to a body without a
// Content-Type, which its content check raises outside the handler's
// wrapper: no Vary.
func contentTypeRequired() *wire.Error {
	e := wire.BadRequest("content-type header required when content-length > 0")
	e.NoVary = true
	return e
}

// requireJSONAccept refuses requests whose Accept header rules out JSON,
// the only media type this API produces. A header webob cannot parse
// rules out nothing.
func requireJSONAccept(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(wire.AcceptableOffers(wire.AcceptHeader(c.Request()), echo.MIMEApplicationJSON)) == 0 {
			return wire.NewError(http.StatusNotAcceptable, "", "Only application/json is provided")
		}
		return next(c)
	}
}
