package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/scheduler"
)

// Error is an HTTP error raised by this package: a status, a Placement error
// code (empty means placement.undefined_code) and a message for the user.
type Error struct {
	Status int
	Code   string
	Msg    string
	// Allow is sent as the Allow header of a 405.
	Allow string
	// RetryAfter, if positive, is sent as the Retry-After header (seconds).
	RetryAfter int
	// NoDetail renders webob's template with an empty detail, whatever
	// Msg says (Placement's microversioned 405 raises
	// HTTPMethodNotAllowed without a message).
	NoDetail bool
	// NoVary drops the Vary header. Placement's microversion middleware
	// adds Vary only to what its application returns; an error raised
	// past the handlers' webob wrapper gets the version header alone:
	// routing's 404, the Content-Type check, and the object layer's
	// NotFound and the policy's refusal, which escape the handler and
	// which PlacementHandler turns into a 404 or 403 (see toError and
	// authorize).
	NoVary bool
	// PreVersion drops the OpenStack-API-Version header and Vary: the
	// error is raised by what runs before Placement's microversion
	// middleware (authentication).
	PreVersion bool
	// Body is the layout of a JSON body: Placement's {"errors": [...]}
	// unless the error comes from a middleware outside Placement's
	// error formatter.
	Body errorBody
	// Steps, when set, go in the JSON error object as "steps": the
	// selection steps of a claim that placed nothing, the counts its
	// detail words, for programs (a Berth extension; Placement clients
	// ignore the member).
	Steps []stepJSON
	// Refusal, when set, goes in the JSON error object as "refusal": the
	// reason of the scriptlet that refused a claim (a Berth extension).
	Refusal string
}

func (e *Error) Error() string { return e.Msg }

// errorBody is the layout of an error's JSON body.
type errorBody uint8

const (
	// placementBody is Placement's {"errors": [{status, title, detail,
	// code, request_id}]}.
	placementBody errorBody = iota
	// webobBody is webob's own {"message", "code", "title"}, the body of
	// noauth2's 401.
	webobBody
	// keystoneBody is keystonemiddleware's {"error": {"code", "title",
	// "message"}}, the body of its 401.
	keystoneBody
)

func newError(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return newError(http.StatusBadRequest, "", format, args...)
}

func notFound(format string, args ...any) *Error {
	return newError(http.StatusNotFound, "", format, args...)
}

// caughtNotFound is the answer of a Placement handler that catches the
// object layer's NotFound for the provider or class it looked up and
// raises its own 404, worded by format with the NotFound's message as
// the last argument; the answer has Vary, unlike the NotFound's own.
// Any other err is returned as it is.
func caughtNotFound(err error, format string, args ...any) error {
	if le, ok := fault.As(err); ok && escapesHandler(le) {
		return notFound(format, append(args, le.Msg)...)
	}
	return err
}

// escapesHandler reports whether le is the object layer's NotFound for
// a provider or class looked up by the uuid or name a request names,
// which Placement's handlers let escape unless they catch it
// (caughtNotFound).
func escapesHandler(le *fault.Error) bool {
	return errors.Is(le, fault.ErrProviderNotFound) || errors.Is(le, fault.ErrClassNotFound)
}

// retryAfterUnavailable is the Retry-After (seconds) of a 503 for a
// database outage: long enough not to hammer a restarting server, short
// enough that clients come back soon after it is up.
const retryAfterUnavailable = 2

// errorCodeVersion is the first microversion whose error bodies carry "code".
const errorCodeVersion = 23

// toError maps any error a handler returns to an *Error: the one table
// from error kinds to HTTP statuses.
func toError(c echo.Context, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var np *claims.NotPlacedError
	if errors.As(err, &np) {
		code := fault.CodeNoValidHost
		if np.Reason == claims.ConflictsExhausted {
			code = fault.CodeClaimConflict
		}
		return &Error{Status: http.StatusConflict, Code: code, Msg: np.Error(), Steps: stepsJSON(np.Steps), Refusal: np.Refusal}
	}
	var mm *claims.MismatchError
	if errors.As(err, &mm) {
		return &Error{Status: http.StatusConflict, Code: fault.CodeClaimMismatch, Msg: mm.Error()}
	}
	// A compile error's detail says where: "Scriptlet x does not compile:
	// line 3, column 5: ...".
	var se *scheduler.CompileError
	if errors.As(err, &se) {
		return &Error{Status: http.StatusBadRequest, Code: fault.CodeScriptletInvalid, Msg: se.Error()}
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
		case errors.Is(le, fault.ErrUnavailable):
			return &Error{Status: http.StatusServiceUnavailable, Code: le.Code, Msg: le.Msg, RetryAfter: retryAfterUnavailable}
		}
		// A provider or class lookup's NotFound that a handler returns
		// as it is escapes it, as in Placement: no Vary.
		return &Error{Status: status, Code: le.Code, Msg: le.Msg, NoVary: escapesHandler(le)}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusMethodNotAllowed:
			// Placement's handle_405 names no method in its detail.
			return &Error{Status: he.Code, Msg: "The method specified is not allowed for this resource.", Allow: allowHeader(c)}
		case http.StatusNotFound:
			return &Error{Status: he.Code, NoVary: true}
		case http.StatusRequestEntityTooLarge:
			return &Error{Status: he.Code, Msg: "Request body too large."}
		}
		return &Error{Status: he.Code, Msg: fmt.Sprint(he.Message)}
	}
	return &Error{Status: http.StatusInternalServerError, Msg: "An internal error occurred."}
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

// errorHandler writes err in Placement's error format and logs it: 5xx as
// errors, everything else at debug level.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := toError(c, err)
	req := c.Request()
	s.logError(c, e, err)
	setErrorHeaders(c.Response().Header(), e)
	we := webobError{status: e.Status, detail: e.Msg, env: webobEnvOf(req)}
	if e.NoDetail {
		we.detail = ""
	}
	title := webobClassOf(e.Status).title

	if req.Method == http.MethodHead {
		// webob answers HEAD with no body and the exception's own
		// content type, whatever the Accept header says.
		c.Response().Header().Set(echo.HeaderContentType, "text/html; charset=UTF-8")
		_ = c.NoContent(e.Status)
		return
	}
	if e.Body == keystoneBody {
		// keystonemiddleware answers in JSON whatever the Accept header.
		inner := newJSONObject()
		inner.set("code", e.Status)
		inner.set("title", title)
		inner.set("message", e.Msg)
		body := newJSONObject()
		body.set("error", inner)
		_ = writeJSON(c, e.Status, body)
		return
	}
	// webob's generate_response: the error formatters (Placement's or
	// webob's JSON) only apply when the client prefers JSON.
	switch preferredErrorType(acceptHeader(req)) {
	case "text/html":
		_ = c.Blob(e.Status, "text/html; charset=UTF-8", []byte(we.html()))
		return
	case "text/plain":
		_ = c.Blob(e.Status, "text/plain; charset=UTF-8", []byte(we.plain()))
		return
	}
	if e.Body == webobBody {
		// webob's own JSON formatter: the body unstripped.
		body := newJSONObject()
		body.set("message", we.message())
		body.set("code", we.statusLine())
		body.set("title", title)
		_ = writeJSON(c, e.Status, body)
		return
	}
	item := placementErrorItem(c, e, we.detailText(), title)
	_ = writeJSON(c, e.Status, map[string]any{"errors": []any{item}})
}

// logError logs the answer e to a failed request: 5xx as errors, the
// database's outages through s.outage, everything else at debug level.
func (s *Server) logError(c echo.Context, e *Error, err error) {
	req := c.Request()
	// The request's context carries its request and trace ids into the
	// log line (instrument.LogHandler).
	log := s.log.With("method", req.Method, "path", req.URL.Path, "status", e.Status)
	switch {
	case e.Status == http.StatusServiceUnavailable && e.Code == fault.CodeDatabaseUnavailable:
		s.outage.log(req.Context(), log, err)
	case e.Status >= 500:
		// One line: pgx joins a connect error's per-host causes with "\n\t".
		log.ErrorContext(req.Context(), "request failed", "error", fault.Detail(err))
	default:
		log.DebugContext(req.Context(), "request refused", "detail", e.Msg)
	}
}

// setErrorHeaders sets the headers e's answer carries whatever its body:
// the microversion's, Retry-After and Allow.
func setErrorHeaders(h http.Header, e *Error) {
	if e.NoVary || e.PreVersion {
		dropVaryVersion(h)
	}
	if e.PreVersion {
		h.Del(headerAPIVersion)
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Status == http.StatusMethodNotAllowed && e.Allow != "" {
		h.Set(echo.HeaderAllow, e.Allow)
	}
}

// placementErrorItem is e as one item of Placement's errors list: status,
// title, detail, request_id, Berth's steps and refusal, and the code from
// the microversion that has codes.
func placementErrorItem(c echo.Context, e *Error, detail, title string) map[string]any {
	item := map[string]any{
		"status": e.Status,
		"title":  title,
		"detail": detail,
	}
	if id := requestID(c); id != "" {
		item["request_id"] = id
	}
	if e.Steps != nil {
		item["steps"] = e.Steps
	}
	if e.Refusal != "" {
		item["refusal"] = e.Refusal
	}
	if v, ok := c.Get(ctxVersion).(Version); ok && v.AtLeast(errorCodeVersion) {
		code := e.Code
		if code == "" {
			code = fault.CodeUndefined
		}
		item["code"] = code
	}
	if _, ok := c.Get(ctxVersion).(Version); !ok && e.Status == http.StatusNotAcceptable {
		// The microversion was refused: say which ones exist.
		item["max_version"], item["min_version"] = MaxVersion.String(), MinVersion.String()
	}
	return item
}

// dropVaryVersion removes the Vary the microversion middleware added,
// keeping any other (CORS's Vary: Origin, which Placement's CORS
// middleware adds outside it).
func dropVaryVersion(h http.Header) {
	var keep []string
	for _, v := range h.Values(echo.HeaderVary) {
		if !strings.EqualFold(v, "openstack-api-version") {
			keep = append(keep, v)
		}
	}
	h.Del(echo.HeaderVary)
	for _, v := range keep {
		h.Add(echo.HeaderVary, v)
	}
}

// preferredErrorType picks the media type of an error body as webob
// does: the first of text/html and application/json the Accept header
// admits (HTML on a tie), text/plain when it admits neither.
func preferredErrorType(accept string) string {
	if offers := acceptableOffers(accept, "text/html", echo.MIMEApplicationJSON); len(offers) > 0 {
		return offers[0]
	}
	return "text/plain"
}
