package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultMicroversion is the Placement microversion every request sends
// unless told otherwise: 1.39 is the highest that Placement 8.0.0 serves and
// has everything the tool uses (same_subtree 1.36, consumer_type 1.38).
const DefaultMicroversion = "1.39"

// ErrTimeout is returned (wrapped) when a request does not complete within
// the client's timeout.
var ErrTimeout = errors.New("timeout")

// StatusError is an HTTP answer with an unexpected status code.
type StatusError struct {
	Method, Path string
	Code         int
	Body         string // first bytes of the response body
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Code, e.Body)
}

// IsStatus reports whether err is a StatusError with the given code.
func IsStatus(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}

// Client speaks the Placement API to one endpoint. It is safe for concurrent
// use.
type Client struct {
	base         string
	token        string
	microversion string
	timeout      time.Duration
	http         *http.Client
	requests     atomic.Int64
}

// Requests is the number of requests the client has sent.
func (c *Client) Requests() int { return int(c.requests.Load()) }

// ClientConfig configures a Client.
type ClientConfig struct {
	URL          string        // endpoint root, e.g. http://127.0.0.1:8778
	Token        string        // sent as X-Auth-Token
	Microversion string        // OpenStack-API-Version: placement <this>; default DefaultMicroversion
	Timeout      time.Duration // per request, including reading the body; 0 means none
	Conns        int           // kept-alive (idle) connections per host; default 16
	// NoKeepAlive opens a connection per request. A synchronous server
	// with fewer processes than clients (uwsgi, Placement's reference
	// setup) serves a kept-alive connection until it goes idle, so the
	// other clients wait behind it; see docs/benchmarks.md.
	NoKeepAlive bool
}

// NewClient returns a client for cfg.URL. With keep-alive it sends its
// requests through keepAliveTransport, the tool's own cheap transport (see
// there why); with NoKeepAlive through net/http's Transport, a connection
// per request, where the connection's cost dwarfs the transport's.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Microversion == "" {
		cfg.Microversion = DefaultMicroversion
	}
	if cfg.Conns <= 0 {
		cfg.Conns = 16
	}
	std := &http.Transport{
		Proxy:               nil, // loopback benchmarks never go through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Conns * 2,
		MaxIdleConnsPerHost: cfg.Conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableKeepAlives:   cfg.NoKeepAlive,
	}
	var rt http.RoundTripper = std
	if !cfg.NoKeepAlive {
		rt = newKeepAliveTransport(cfg.Conns, std) // std serves https:// only
	}
	// The timeout is applied by Do as a context deadline: http.Client's own
	// Timeout would start a goroutine and a timer per request for a
	// transport it does not know.
	return &Client{
		base:         strings.TrimRight(cfg.URL, "/"),
		token:        cfg.Token,
		microversion: cfg.Microversion,
		timeout:      cfg.Timeout,
		http:         &http.Client{Transport: rt},
	}
}

// CloseIdleConnections closes the client's idle kept-alive connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Response is a completed request: its status, its body and how long it
// took from sending to having read the whole body.
type Response struct {
	Code    int
	Body    []byte
	Elapsed time.Duration
}

// Do sends method path (path includes any query string) with in marshalled
// as JSON when non-nil, and reads the whole answer. A status outside want
// (default: any 2xx) is returned as a *StatusError together with the
// response. A client timeout is returned wrapping ErrTimeout.
func (c *Client) Do(ctx context.Context, method, path string, in any, want ...int) (*Response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Auth-Token", c.token)
	req.Header.Set("OpenStack-API-Version", "placement "+c.microversion)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.requests.Add(1)
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, wrapTimeout(method, path, err)
	}
	b, err := readBody(resp)
	resp.Body.Close()
	elapsed := time.Since(start)
	if err != nil {
		return nil, wrapTimeout(method, path, err)
	}
	r := &Response{Code: resp.StatusCode, Body: b, Elapsed: elapsed}
	ok := len(want) == 0 && r.Code/100 == 2
	for _, w := range want {
		ok = ok || r.Code == w
	}
	if !ok {
		snippet := string(b)
		if len(snippet) > 300 {
			snippet = snippet[:300] + "..."
		}
		return r, &StatusError{Method: method, Path: path, Code: r.Code, Body: snippet}
	}
	return r, nil
}

// JSON is Do followed by unmarshalling a successful answer into out (when
// out is non-nil and the body is not empty).
func (c *Client) JSON(ctx context.Context, method, path string, in, out any, want ...int) (*Response, error) {
	r, err := c.Do(ctx, method, path, in, want...)
	if err != nil {
		return r, err
	}
	if out != nil && len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return r, fmt.Errorf("%s %s: decoding answer: %w", method, path, err)
		}
	}
	return r, nil
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

func wrapTimeout(method, path string, err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%s %s: %w (%v)", method, path, ErrTimeout, err)
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}
