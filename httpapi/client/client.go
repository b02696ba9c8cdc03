package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Config configures a Client.
type Config struct {
	// URL is the endpoint's root: a URL ("http://127.0.0.1:8778",
	// "https://cloud.example/placement") or a bare host and port
	// ("127.0.0.1:8778"), which means http://. Trailing slashes are
	// dropped; request paths are appended to it.
	URL string
	// Token is sent as X-Auth-Token; "" sends none.
	Token string
	// Microversion is sent as "OpenStack-API-Version: placement
	// <Microversion>"; "" means "latest".
	Microversion string
	// HTTP sends the requests; nil means a client of its own over
	// http.DefaultTransport with no timeout. Its Timeout, or the request's
	// context, bounds a request: Client adds no deadline of its own.
	HTTP *http.Client
	// ClaimRetries is how many times a claim write (POST /claims, and a
	// consumer's reschedule, move, and a move's confirm and revert) is
	// sent again, with the same body, after it got no answer or a 503:
	// Berth recognises a repeated claim by its body and answers it with
	// the first one's outcome, so a retry never claims twice. 0 means
	// DefaultClaimRetries; a negative number, none. No other request is
	// sent twice.
	ClaimRetries int
	// RetryWait is the first pause before a retry, doubled for each next
	// one up to two seconds; a 503's Retry-After, when longer, is waited
	// instead (up to two seconds too). 0 means 100 milliseconds.
	RetryWait time.Duration
}

// DefaultClaimRetries is the retries of a claim write when
// Config.ClaimRetries is 0.
const DefaultClaimRetries = 3

// Client speaks to one endpoint. It is safe for concurrent use, as its
// *http.Client is.
type Client struct {
	base    string // BaseURL(Config.URL)
	token   string
	version string // the whole OpenStack-API-Version value
	http    *http.Client
	retries int           // of a claim write; 0: none
	wait    time.Duration // before the first retry
}

// New returns a client for cfg. It does not check the URL: a URL that
// cannot be parsed fails each request.
func New(cfg Config) *Client {
	mv := cfg.Microversion
	if mv == "" {
		mv = "latest"
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	retries := cfg.ClaimRetries
	switch {
	case retries == 0:
		retries = DefaultClaimRetries
	case retries < 0:
		retries = 0
	}
	wait := cfg.RetryWait
	if wait <= 0 {
		wait = 100 * time.Millisecond
	}
	return &Client{base: BaseURL(cfg.URL), token: cfg.Token, version: "placement " + mv, http: hc,
		retries: retries, wait: wait}
}

// BaseURL is the endpoint root s as requests are built on it: without
// trailing slashes, and with "http://" put before a bare "host:port" (any
// s without "://"). An empty s stays empty.
func BaseURL(s string) string {
	s = strings.TrimRight(s, "/")
	if s != "" && !strings.Contains(s, "://") {
		s = "http://" + s
	}
	return s
}

// URL is the endpoint root requests are sent to (BaseURL of Config.URL).
func (c *Client) URL() string { return c.base }

// Response is one whole answer.
type Response struct {
	Method, Path string // the request's, path with its query string
	Status       int
	Header       http.Header
	Body         []byte        // the whole body
	Elapsed      time.Duration // from sending the request to having read the whole body
}

// Do sends method path (path begins with "/" and holds any query string)
// with body, when not nil, as contentType, and reads the whole answer.
// Every status is an answer: Do returns an error only when there is none:
// the request could not be built (that error as is, e.g. a URL that does
// not parse), or it got no whole answer (a *NoAnswerError). A claim write
// is sent again after no answer or a 503, as Config.ClaimRetries says;
// the answer or error returned is the last one's.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, contentType string) (*Response, error) {
	if !IsClaimWrite(method, path) {
		return c.once(ctx, method, path, body, contentType)
	}
	return c.retried(ctx, method, path, body, contentType)
}

// once sends the request once (Do without retries).
func (c *Client) once(ctx context.Context, method, path string, body []byte, contentType string) (*Response, error) {
	return c.send(ctx, method, path, body, contentType, nil)
}

// Stream sends GET path once and copies the answer's body to w as it
// arrives instead of keeping it (Response.Body is nil): for answers too
// large to hold, or only timed, as a benchmark's throughput phase reads
// them. Its errors are Do's; one in writing to w is a *NoAnswerError
// (Reading).
func (c *Client) Stream(ctx context.Context, path string, w io.Writer) (*Response, error) {
	return c.send(ctx, http.MethodGet, path, nil, "", w)
}

// send sends the request once and reads the whole answer: into the
// Response's Body, or to w when w is not nil.
func (c *Client) send(ctx context.Context, method, path string, body []byte, contentType string, w io.Writer) (*Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("OpenStack-API-Version", c.version)
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &NoAnswerError{Err: err}
	}
	var b []byte
	if w != nil {
		_, err = io.Copy(w, resp.Body)
	} else {
		b, err = readBody(resp)
	}
	resp.Body.Close()
	if err != nil {
		return nil, &NoAnswerError{Reading: true, Err: err}
	}
	return &Response{Method: method, Path: path, Status: resp.StatusCode, Header: resp.Header, Body: b,
		Elapsed: time.Since(start)}, nil
}

// Send is Do with in, when not nil, encoded as a JSON body. An in that
// does not encode is json.Marshal's error, as is.
func (c *Client) Send(ctx context.Context, method, path string, in any) (*Response, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	return c.Do(ctx, method, path, body, "application/json")
}

// JSON is Send followed by the answer's check and decoding: a status
// other than 2xx is returned as an *Error (with the response), and a 2xx
// answer is decoded into out (see Response.Decode).
func (c *Client) JSON(ctx context.Context, method, path string, in, out any) (*Response, error) {
	r, err := c.Send(ctx, method, path, in)
	if err != nil {
		return nil, err
	}
	if r.Status/100 != 2 {
		return r, NewError(r)
	}
	return r, r.Decode(out)
}

// Decode decodes the JSON body into out. A nil out, or a body of nothing
// but white space (a 204), decodes nothing.
func (r *Response) Decode(out any) error {
	if out == nil || len(bytes.TrimSpace(r.Body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", r.Method, r.Path, err)
	}
	return nil
}

// readBody reads resp's body to its end (which gives a kept-alive
// connection back), in one buffer sized from Content-Length when the
// answer gives it.
func readBody(resp *http.Response) ([]byte, error) {
	size := 512
	if n := resp.ContentLength; n >= 0 && n < 64<<20 {
		size = int(n) + 1 // one byte more, so that the read finding EOF has room
	}
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
