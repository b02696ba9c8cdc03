package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// retryAfterUnavailable is the Retry-After (seconds) of a 503 for a
// database outage: long enough not to hammer a restarting server, short
// enough that clients come back soon after it is up.
const retryAfterUnavailable = 2

// toError maps any error a handler returns to a *wire.Error: the one
// table from error kinds to HTTP statuses.
func toError(c echo.Context, err error) *wire.Error {
	if e, ok := errors.AsType[*wire.Error](err); ok {
		return e
	}
	if np, ok := errors.AsType[*claims.NotPlacedError](err); ok {
		code := fault.CodeNoValidHost
		if np.Reason == claims.ConflictsExhausted {
			code = fault.CodeClaimConflict
		}
		return &wire.Error{Status: http.StatusConflict, Code: code, Msg: np.Error(), Steps: claims.StepsJSON(np.Steps), Refusal: np.Refusal}
	}
	if mm, ok := errors.AsType[*claims.MismatchError](err); ok {
		return &wire.Error{Status: http.StatusConflict, Code: fault.CodeClaimMismatch, Msg: mm.Error()}
	}
	// A compile error's detail says where: "Scriptlet x does not compile:
	// line 3, column 5: ...".
	if se, ok := errors.AsType[*scriptlet.CompileError](err); ok {
		return &wire.Error{Status: http.StatusBadRequest, Code: fault.CodeScriptletInvalid, Msg: se.Error()}
	}
	if le, ok := fault.As(err); ok {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(le, fault.ErrNotFound):
			status = http.StatusNotFound
		case errors.Is(le, fault.ErrConflict):
			status = http.StatusConflict
		case errors.Is(le, fault.ErrInvalid):
			status = http.StatusBadRequest
		case errors.Is(le, fault.ErrForbidden):
			status = http.StatusForbidden
		case errors.Is(le, fault.ErrUnavailable):
			return &wire.Error{Status: http.StatusServiceUnavailable, Code: le.Code, Msg: le.Msg, RetryAfter: retryAfterUnavailable}
		}
		// A provider or class lookup's NotFound that a handler returns
		// as it is escapes it, as in Placement: no Vary.
		return &wire.Error{Status: status, Code: le.Code, Msg: le.Msg, NoVary: wire.EscapesHandler(le)}
	}
	if he, ok := errors.AsType[*echo.HTTPError](err); ok {
		switch he.Code {
		case http.StatusMethodNotAllowed:
			// Placement's handle_405 names no method in its detail.
			return &wire.Error{Status: he.Code, Msg: "The method specified is not allowed for this resource.", Allow: allowHeader(c)}
		case http.StatusNotFound:
			return &wire.Error{Status: he.Code, NoVary: true}
		case http.StatusRequestEntityTooLarge:
			return &wire.Error{Status: he.Code, Msg: "Request body too large."}
		}
		return &wire.Error{Status: he.Code, Msg: fmt.Sprint(he.Message)}
	}
	return &wire.Error{Status: http.StatusInternalServerError, Msg: "An internal error occurred."}
}

// allowHeader lists the methods echo found for the request's path, without
// the OPTIONS method echo adds by itself.
func allowHeader(c echo.Context) string {
	allow, _ := c.Get(echo.ContextKeyHeaderAllow).(string)
	var out []string
	for _, m := range strings.Split(allow, ",") {
		if m = strings.TrimSpace(m); m != "" && m != http.MethodOptions {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// errorHandler writes err in Placement's error format (wire.WriteError)
// and logs it: 5xx as errors, everything else at debug level.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := toError(c, err)
	s.logError(c, e, err)
	wire.WriteError(c, e, requestID(c))
}

// logError logs the answer e to a failed request: 5xx as errors, the
// database's outages through s.outage, everything else at debug level.
func (s *Server) logError(c echo.Context, e *wire.Error, err error) {
	req := c.Request()
	// The request's context carries its request and trace ids into the
	// log line (instrument.LogHandler).
	ctx := req.Context()
	log := func() *slog.Logger { return s.log.With("method", req.Method, "path", req.URL.Path, "status", e.Status) }
	switch {
	case e.Status == http.StatusServiceUnavailable && e.Code == fault.CodeDatabaseUnavailable:
		s.outage.log(ctx, log(), err)
		s.meters.dbUnavailable.Add(ctx, 1)
	case e.Status >= 500:
		// One line: pgx joins a connect error's per-host causes with "\n\t".
		log().ErrorContext(ctx, "request failed", "error", fault.Detail(err))
	case s.log.Enabled(ctx, slog.LevelDebug):
		log().DebugContext(ctx, "request refused", "detail", e.Msg)
	}
}
