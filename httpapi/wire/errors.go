package wire

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/fault"
)

// Error is an HTTP error of the API: a status, a Placement error code
// (empty means placement.undefined_code) and a message for the user.
// Handlers return it, or any error the server's error table maps to one;
// WriteError writes it.
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
	// which PlacementHandler turns into a 404 or 403 (see CaughtNotFound
	// and the server's authorize).
	NoVary bool
	// PreVersion drops the OpenStack-API-Version header and Vary: the
	// error is raised by what runs before Placement's microversion
	// middleware (authentication).
	PreVersion bool
	// Body is the layout of a JSON body: Placement's {"errors": [...]}
	// unless the error comes from a middleware outside Placement's
	// error formatter.
	Body ErrorBody
	// Steps, when set, go in the JSON error object as "steps": the
	// selection steps of a claim that placed nothing, the counts its
	// detail words, for programs (a Berth extension; Placement clients
	// ignore the member), as the claim's answer writes them.
	Steps any
	// Refusal, when set, goes in the JSON error object as "refusal": the
	// reason of the scriptlet that refused a claim (a Berth extension).
	Refusal string
	// Domains, when set, go in the JSON error object as "domains": per
	// domain of a gang that was not placed, how many members fit at most
	// and what stopped the rest (a Berth extension).
	Domains any
}

func (e *Error) Error() string { return e.Msg }

// ErrorBody is the layout of an error's JSON body.
type ErrorBody uint8

const (
	// PlacementBody is Placement's {"errors": [{status, title, detail,
	// code, request_id}]}.
	PlacementBody ErrorBody = iota
	// WebobBody is webob's own {"message", "code", "title"}, the body of
	// noauth2's 401.
	WebobBody
	// KeystoneBody is keystonemiddleware's {"error": {"code", "title",
	// "message"}}, the body of its 401.
	KeystoneBody
)

// NewError is an Error of status and code whose message is format with
// args.
func NewError(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// BadRequest is a 400 without a code.
func BadRequest(format string, args ...any) *Error {
	return NewError(http.StatusBadRequest, "", format, args...)
}

// NotFound is a 404 without a code.
func NotFound(format string, args ...any) *Error {
	return NewError(http.StatusNotFound, "", format, args...)
}

// CaughtNotFound is the answer of a Placement handler that catches the
// object layer's NotFound for the provider or class it looked up and
// raises its own 404, worded by format with the NotFound's message as
// the last argument; the answer has Vary, unlike the NotFound's own.
// Any other err is returned as it is.
func CaughtNotFound(err error, format string, args ...any) error {
	if le, ok := fault.As(err); ok && EscapesHandler(le) {
		return NotFound(format, append(args, le.Msg)...)
	}
	return err
}

// EscapesHandler reports whether le is the object layer's NotFound for
// a provider or class looked up by the uuid or name a request names,
// which Placement's handlers let escape unless they catch it
// (CaughtNotFound).
func EscapesHandler(le *fault.Error) bool {
	return errors.Is(le, fault.ErrProviderNotFound) || errors.Is(le, fault.ErrClassNotFound)
}

// errorCodeVersion is the first microversion whose error bodies carry "code".
const errorCodeVersion = 23

// WriteError writes e, the answer to the request of c whose id is
// requestID, in the layout the request asks for: webob's HTML page or
// plain text when the client prefers them, else JSON (Placement's, or
// the layout e.Body names); nothing but the headers for HEAD.
func WriteError(c echo.Context, e *Error, requestID string) {
	req := c.Request()
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
	if e.Body == KeystoneBody {
		// keystonemiddleware answers in JSON whatever the Accept header.
		inner := NewObject()
		inner.Set("code", e.Status)
		inner.Set("title", title)
		inner.Set("message", e.Msg)
		body := NewObject()
		body.Set("error", inner)
		_ = WriteJSON(c, e.Status, body)
		return
	}
	// webob's generate_response: the error formatters (Placement's or
	// webob's JSON) only apply when the client prefers JSON.
	switch preferredErrorType(AcceptHeader(req)) {
	case "text/html":
		_ = c.Blob(e.Status, "text/html; charset=UTF-8", []byte(we.html()))
		return
	case "text/plain":
		_ = c.Blob(e.Status, "text/plain; charset=UTF-8", []byte(we.plain()))
		return
	}
	if e.Body == WebobBody {
		// webob's own JSON formatter: the body unstripped.
		body := NewObject()
		body.Set("message", we.message())
		body.Set("code", we.statusLine())
		body.Set("title", title)
		_ = WriteJSON(c, e.Status, body)
		return
	}
	body := &placementErrors{Errors: [1]placementErrorItem{newPlacementErrorItem(c, e, we.detailText(), title, requestID)}}
	_ = WriteJSON(c, e.Status, body)
}

// setErrorHeaders sets the headers e's answer carries whatever its body:
// the microversion's, Retry-After and Allow.
func setErrorHeaders(h http.Header, e *Error) {
	if e.NoVary || e.PreVersion {
		dropVaryVersion(h)
	}
	if e.PreVersion {
		h.Del(HeaderAPIVersion)
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Status == http.StatusMethodNotAllowed && e.Allow != "" {
		h.Set(echo.HeaderAllow, e.Allow)
	}
}

// placementErrors is Placement's JSON error body: {"errors": [item]}.
type placementErrors struct {
	Errors [1]placementErrorItem `json:"errors"`
}

// placementErrorItem is one item of Placement's errors list, its members
// in the order of their names, as a JSON object's members are written:
// status, title, detail, request_id, Berth's steps, refusal and domains,
// the code from the microversion that has codes, and the versions that
// exist when the microversion was refused. Those of a later microversion
// or of an extension are left out when empty (steps and domains when
// nil).
type placementErrorItem struct {
	Code       string `json:"code,omitempty"`
	Detail     string `json:"detail"`
	Domains    any    `json:"domains,omitempty"`
	MaxVersion string `json:"max_version,omitempty"`
	MinVersion string `json:"min_version,omitempty"`
	Refusal    string `json:"refusal,omitempty"`
	RequestID  string `json:"request_id,omitempty"`
	Status     int    `json:"status"`
	Steps      any    `json:"steps,omitempty"`
	Title      string `json:"title"`
}

// newPlacementErrorItem is e as one item of Placement's errors list.
func newPlacementErrorItem(c echo.Context, e *Error, detail, title, requestID string) placementErrorItem {
	item := placementErrorItem{
		Status:    e.Status,
		Title:     title,
		Detail:    detail,
		RequestID: requestID,
		Steps:     e.Steps,
		Refusal:   e.Refusal,
		Domains:   e.Domains,
	}
	v, negotiated := Negotiated(c)
	if negotiated && v.AtLeast(errorCodeVersion) {
		item.Code = e.Code
		if item.Code == "" {
			item.Code = fault.CodeUndefined
		}
	}
	if !negotiated && e.Status == http.StatusNotAcceptable {
		// The microversion was refused: say which ones exist.
		item.MaxVersion, item.MinVersion = MaxVersion.String(), MinVersion.String()
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
	// The usual header (and no header, which AcceptHeader answers as
	// JSON) prefers JSON as parsing it would say
	// (TestPreferredErrorTypeJSON).
	if accept == echo.MIMEApplicationJSON {
		return accept
	}
	if offers := AcceptableOffers(accept, "text/html", echo.MIMEApplicationJSON); len(offers) > 0 {
		return offers[0]
	}
	return "text/plain"
}

// ServerErrorBody is Placement's error body of status saying detail,
// for request id: the answer of what runs outside the API's router (the
// probes, net/http's own refusals).
func ServerErrorBody(status int, detail, id string) []byte {
	body, _ := encodeJSON(new(bytes.Buffer), map[string]any{"errors": []any{map[string]any{
		"status":     status,
		"title":      webobClassOf(status).title,
		"detail":     webobError{status: status, detail: detail}.detailText(),
		"code":       fault.CodeUndefined,
		"request_id": id,
	}}})
	return body
}
