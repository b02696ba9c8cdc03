package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Error is an answer with a status other than the caller expected (for
// JSON, anything but 2xx). It keeps the body as it came and decodes it
// only when asked (Items, Code, RequestID, Error): a caller that looks at
// the status alone, as the load tool does at each lost claim race, pays
// for no decoding.
type Error struct {
	Method, Path string // the request's
	Status       int
	Body         []byte
}

// ErrorItem is one entry of Placement's "errors" list.
type ErrorItem struct {
	Status    int    `json:"status"`
	Title     string `json:"title"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
	// Refusal is Berth's: the reason of the scriptlet that refused a
	// claim (409 berth.no_valid_host).
	Refusal string `json:"refusal"`
	// Domains is Berth's, for a refused gang: per domain how many members
	// fit and what stopped the rest.
	Domains []DomainOutcome `json:"domains,omitempty"`
}

// NewError is the *Error of answer r.
func NewError(r *Response) *Error {
	return &Error{Method: r.Method, Path: r.Path, Status: r.Status, Body: r.Body}
}

// Items decodes the body's errors: Placement's format ({"errors":
// [...]}), webob's own, {"message", "code", "title"}, which a refusal
// raised outside Placement's error formatter has (noauth2's 401), and
// keystonemiddleware's 401, {"error": {"code", "title", "message"}}. Any
// other body has none (nil).
func (e *Error) Items() []ErrorItem {
	var doc struct {
		Errors []ErrorItem `json:"errors"`
	}
	var webob struct{ Message, Code, Title string }
	var km struct {
		Error struct {
			Code           int
			Title, Message string
		}
	}
	switch {
	case json.Unmarshal(e.Body, &doc) == nil && len(doc.Errors) > 0:
		return doc.Errors
	case json.Unmarshal(e.Body, &webob) == nil && webob.Title != "" && strings.HasPrefix(webob.Code, strconv.Itoa(e.Status)+" "):
		return []ErrorItem{{Status: e.Status, Title: webob.Title, Detail: strings.ReplaceAll(webob.Message, "<br />", "\n")}}
	case json.Unmarshal(e.Body, &km) == nil && km.Error.Code == e.Status && km.Error.Title != "":
		return []ErrorItem{{Status: e.Status, Title: km.Error.Title, Detail: km.Error.Title + "\n\n" + km.Error.Message}}
	}
	return nil
}

// Error reads as one line per error: status, code, and the detail without
// the fixed explanation Placement puts before it, e.g.
// "409 Conflict (berth.no_valid_host): 10 providers; 10 lacked VCPU 64".
// A body in no known format is quoted (its first five lines) after the
// request and the status.
func (e *Error) Error() string {
	head := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	items := e.Items()
	if len(items) == 0 {
		body := strings.TrimSpace(string(e.Body))
		if body == "" {
			return fmt.Sprintf("%s %s: %s", e.Method, e.Path, head)
		}
		return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, head, firstLines(body, 5))
	}
	var lines []string
	for _, it := range items {
		s := head
		if it.Code != "" && it.Code != "placement.undefined_code" {
			s += " (" + it.Code + ")"
		}
		if d := Detail(it.Detail); d != "" {
			s += ": " + d
		}
		if e.Status == http.StatusNotFound && Detail(it.Detail) == "" {
			s += fmt.Sprintf(": %s %s (no such object, or a server without this endpoint)", e.Method, e.Path)
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// Code is the first error's code, "" if none.
func (e *Error) Code() string {
	if items := e.Items(); len(items) > 0 {
		return items[0].Code
	}
	return ""
}

// RequestID is the first error's request id, "" if none.
func (e *Error) RequestID() string {
	if items := e.Items(); len(items) > 0 {
		return items[0].RequestID
	}
	return ""
}

// IsStatus reports whether err is (or wraps) an *Error with the given
// status.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// Detail strips the fixed first paragraph (webob's explanation of the
// status) from a Placement error detail and joins the rest on one line.
func Detail(d string) string {
	if _, rest, ok := strings.Cut(d, "\n\n"); ok {
		d = rest
	} else if _, known := explanationSet[strings.TrimSpace(d)]; known {
		d = ""
	}
	d = strings.Join(strings.Fields(d), " ")
	// jsonschema's messages go on to quote the whole schema and instance:
	// the first sentence says what is wrong.
	if i := strings.Index(d, " Failed validating "); i > 0 {
		d = d[:i]
	}
	return d
}

// explanationSet holds the explanations that make up a whole detail when
// the server had nothing to add (Placement's 404 on an unknown route).
var explanationSet = map[string]struct{}{
	"The resource could not be found.":    {},
	"Access was denied to this resource.": {},
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, " ")
}

// NoAnswerError is a request that got no whole answer. Either it could
// not be sent or answered (the connection was refused or broke, the
// client's timeout or the context's deadline passed, the context was
// cancelled): Err is then the *url.Error http.Client returned, which names
// the method and URL and tells a timeout (net.Error); or the answer came
// but its body could not be read to the end (Reading): Err is the read's
// error.
type NoAnswerError struct {
	Reading bool
	Err     error
}

func (e *NoAnswerError) Error() string {
	if e.Reading {
		return "reading the answer: " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *NoAnswerError) Unwrap() error { return e.Err }
