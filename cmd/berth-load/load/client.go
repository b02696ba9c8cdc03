package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/httpapi/client"
)

// DefaultMicroversion is the Placement microversion every request sends
// unless told otherwise: 1.39 is the highest that Placement 8.0.0 serves and
// has everything the tool uses (same_subtree 1.36, consumer_type 1.38).
const DefaultMicroversion = "1.39"

// ErrTimeout is returned (wrapped) when a request does not complete within
// the client's timeout.
var ErrTimeout = errors.New("timeout")

// Client speaks the Placement API to one endpoint. It is safe for concurrent
// use.
type Client struct {
	api      *client.Client
	http     *http.Client // api's, over the transport NewClient chose
	timeout  time.Duration
	requests atomic.Int64
}

// Requests is the number of requests the client has sent.
func (c *Client) Requests() int { return int(c.requests.Load()) }

// ClientConfig configures a Client.
type ClientConfig struct {
	URL          string        // endpoint root, e.g. http://127.0.0.1:8778 or 127.0.0.1:8778
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
	hc := &http.Client{Transport: rt}
	return &Client{
		api: client.New(client.Config{URL: cfg.URL, Token: cfg.Token, Microversion: cfg.Microversion, HTTP: hc,
			// The tool counts every answer as the server gave it.
			ClaimRetries: -1}),
		http:    hc,
		timeout: cfg.Timeout,
	}
}

// Discard sends GET path and reads the answer to its end without keeping
// it, as ab does: for a throughput phase that looks at the status only,
// where keeping megabytes of every answer would make the client the
// bottleneck. It returns the status and the time to the last byte. A
// client timeout is returned wrapping ErrTimeout.
func (c *Client) Discard(ctx context.Context, path string) (status int, elapsed time.Duration, err error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	c.requests.Add(1)
	r, err := c.api.Stream(ctx, path, io.Discard)
	if err != nil {
		return 0, 0, wrapTimeout(http.MethodGet, path, err)
	}
	return r.Status, r.Elapsed, nil
}

// CloseIdleConnections closes the client's idle kept-alive connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Do sends method path (path includes any query string) with in encoded
// as JSON when non-nil, and reads the whole answer. A status outside want
// (default: any 2xx) is returned as a *client.Error together with the
// response. A client timeout is returned wrapping ErrTimeout.
//
// This is the load tool's hot path, so it stays lean: it takes the client's
// Send, which checks no status, and checks want itself (often one status,
// 204, not any 2xx); the *client.Error of an unwanted status decodes
// nothing until asked, so a lost race that is only counted (a 409) costs
// one allocation, not the decoding of its body (BenchmarkClientRequest,
// BenchmarkErrorItems).
func (c *Client) Do(ctx context.Context, method, path string, in any, want ...int) (*client.Response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	c.requests.Add(1)
	r, err := c.api.Send(ctx, method, path, in)
	if err != nil {
		return nil, wrapTimeout(method, path, err)
	}
	ok := len(want) == 0 && r.Status/100 == 2
	for _, w := range want {
		ok = ok || r.Status == w
	}
	if !ok {
		return r, client.NewError(r)
	}
	return r, nil
}

// JSON is Do followed by decoding a successful answer into out (when out
// is non-nil and the body is not empty).
func (c *Client) JSON(ctx context.Context, method, path string, in, out any, want ...int) (*client.Response, error) {
	r, err := c.Do(ctx, method, path, in, want...)
	if err != nil {
		return r, err
	}
	return r, r.Decode(out)
}

func wrapTimeout(method, path string, err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%s %s: %w (%v)", method, path, ErrTimeout, err)
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}
