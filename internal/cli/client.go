package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client speaks to one Placement endpoint at the latest microversion.
type Client struct {
	url   string // without a trailing slash
	token string
	http  *http.Client
}

// NewClient returns a client for the endpoint at url that sends token as
// X-Auth-Token; every request is bounded by timeout (0: none). url is
// taken as EndpointURL takes it.
func NewClient(url, token string, timeout time.Duration) *Client {
	if u, err := EndpointURL(url); err == nil {
		url = u
	}
	return &Client{url: strings.TrimRight(url, "/"), token: token, http: &http.Client{Timeout: timeout}}
}

// EndpointURL reads an endpoint as --url and BERTH_URL give it: an
// http:// or https:// URL, or a bare HOST:PORT (the form curl takes,
// "127.0.0.1:8778"), which means http://HOST:PORT.
func EndpointURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want http://HOST:PORT, https://HOST:PORT or HOST:PORT")
	}
	return s, nil
}

// APIError is a non-2xx answer, with Placement's error body decoded when
// the server sent one.
type APIError struct {
	Method, Path string
	Status       int
	Errors       []APIErrorItem
	Body         string // the raw body when it was not Placement's format
}

// APIErrorItem is one entry of Placement's "errors" list.
type APIErrorItem struct {
	Status    int    `json:"status"`
	Title     string `json:"title"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
}

// Error reads as one line per error: status, code, and the detail without
// the fixed explanation Placement puts before it, e.g.
// "409 Conflict (berth.no_valid_host): 10 providers; 10 lacked VCPU 64".
func (e *APIError) Error() string {
	head := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	if len(e.Errors) == 0 {
		body := strings.TrimSpace(e.Body)
		if body == "" {
			return fmt.Sprintf("%s %s: %s", e.Method, e.Path, head)
		}
		return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, head, firstLines(body, 5))
	}
	var lines []string
	for _, it := range e.Errors {
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
func (e *APIError) Code() string {
	if len(e.Errors) == 0 {
		return ""
	}
	return e.Errors[0].Code
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

// Do sends one request and returns the body of a 2xx answer, or an
// *APIError. body, when not nil, is sent with the given content type.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, contentType string) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("OpenStack-API-Version", "placement latest")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			if ue.Timeout() && ctx.Err() == nil {
				return nil, fmt.Errorf("%s %s: no answer within %s (--timeout)", method, path, c.http.Timeout)
			}
			err = ue.Err
		}
		if ctx.Err() == nil {
			return nil, fmt.Errorf("cannot reach %s (set --url or BERTH_URL): %w", c.url, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return out, nil
	}
	e := &APIError{Method: method, Path: path, Status: resp.StatusCode}
	var doc struct {
		Errors []APIErrorItem `json:"errors"`
	}
	// webob's own format, {"message", "code", "title"}, is what a refusal
	// raised outside Placement's error formatter has (noauth2's 401);
	// keystonemiddleware's 401 is {"error": {"code", "title", "message"}}.
	var webob struct{ Message, Code, Title string }
	var km struct {
		Error struct {
			Code           int
			Title, Message string
		}
	}
	switch {
	case json.Unmarshal(out, &doc) == nil && len(doc.Errors) > 0:
		e.Errors = doc.Errors
	case json.Unmarshal(out, &webob) == nil && webob.Title != "" && strings.HasPrefix(webob.Code, strconv.Itoa(resp.StatusCode)+" "):
		e.Errors = []APIErrorItem{{Status: resp.StatusCode, Title: webob.Title, Detail: strings.ReplaceAll(webob.Message, "<br />", "\n")}}
	case json.Unmarshal(out, &km) == nil && km.Error.Code == resp.StatusCode && km.Error.Title != "":
		e.Errors = []APIErrorItem{{Status: resp.StatusCode, Title: km.Error.Title, Detail: km.Error.Title + "\n\n" + km.Error.Message}}
	default:
		e.Body = string(out)
	}
	return nil, e
}

// JSON sends in (when not nil) as a JSON body and decodes a 2xx answer
// into out (when not nil). It returns the raw answer too, for -o json.
func (c *Client) JSON(ctx context.Context, method, path string, in, out any) ([]byte, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	raw, err := c.Do(ctx, method, path, body, "application/json")
	if err != nil {
		return nil, err
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
		}
	}
	return raw, nil
}
