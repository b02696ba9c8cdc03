package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/berthd/berth/httpapi/client"
)

// Client speaks to one Placement endpoint at the latest microversion
// through httpapi/client, and says a request that got no answer the way the
// CLI's flags let the operator fix it (--url, --timeout).
type Client struct {
	api     *client.Client
	timeout time.Duration
}

// NewClient returns a client for the endpoint at url (a URL, or
// "host:port") that sends token as X-Auth-Token; every request is bounded
// by timeout (0: none).
func NewClient(url, token string, timeout time.Duration) *Client {
	return &Client{
		api:     client.New(client.Config{URL: url, Token: token, HTTP: &http.Client{Timeout: timeout}}),
		timeout: timeout,
	}
}

// Do sends one request and returns the body of a 2xx answer, or an
// *client.Error. body, when not nil, is sent with the given content
// type.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, contentType string) ([]byte, error) {
	r, err := c.api.Do(ctx, method, path, body, contentType)
	if err == nil && r.Status/100 != 2 {
		err = client.NewError(r)
	}
	return c.answer(ctx, method, path, r, err)
}

// JSON sends in (when not nil) as a JSON body and decodes a 2xx answer
// into out (when not nil). It returns the raw answer too, for -o json,
// also when decoding it failed.
func (c *Client) JSON(ctx context.Context, method, path string, in, out any) ([]byte, error) {
	r, err := c.api.JSON(ctx, method, path, in, out)
	return c.answer(ctx, method, path, r, err)
}

// answer is the body of a 2xx answer r, with err; or err alone, a request
// that got no answer being said in the CLI's words.
func (c *Client) answer(ctx context.Context, method, path string, r *client.Response, err error) ([]byte, error) {
	var na *client.NoAnswerError
	switch {
	case errors.As(err, &na):
		return nil, c.noAnswer(ctx, method, path, na)
	case r == nil || r.Status/100 != 2:
		return nil, err
	}
	return r.Body, err
}

func (c *Client) noAnswer(ctx context.Context, method, path string, na *client.NoAnswerError) error {
	if na.Reading {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, na.Err)
	}
	err := na.Err
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() && ctx.Err() == nil {
			return fmt.Errorf("%s %s: no answer within %s (--timeout)", method, path, c.timeout)
		}
		err = ue.Err
	}
	if ctx.Err() == nil {
		return fmt.Errorf("cannot reach %s (set --url or BERTH_URL): %w", c.api.URL(), err)
	}
	return err
}

// EndpointURL checks an endpoint as --url and BERTH_URL give it: an
// http:// or https:// URL, or a bare HOST:PORT (the form curl takes,
// "127.0.0.1:8778"), which means http://HOST:PORT. It returns the URL
// requests are built on (client.BaseURL).
func EndpointURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want http://HOST:PORT, https://HOST:PORT or HOST:PORT")
	}
	return client.BaseURL(s), nil
}
