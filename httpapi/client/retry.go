package client

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// IsClaimWrite reports whether method path (path as Do takes it, with
// any query string) is one of the claim writes Berth recognises when they
// are repeated (claims/idempotent.go on the server): POST /claims, POST
// /claims/{consumer}/reschedule, /move, /move/confirm and /move/revert.
func IsClaimWrite(method, path string) bool {
	if method != http.MethodPost {
		return false
	}
	path, _, _ = strings.Cut(path, "?")
	if path == "/claims" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/claims/")
	if !ok {
		return false
	}
	_, op, ok := strings.Cut(rest, "/")
	return ok && (op == "reschedule" || op == "move" || op == "move/confirm" || op == "move/revert")
}

// maxRetryWait bounds the pause between two sends of a claim.
const maxRetryWait = 2 * time.Second

// retried sends a claim write, and again, with the same body, after no
// answer or a 503, up to c.retries more times. It stops when ctx is done
// (returning the last answer or error) and never retries a request that
// could not be built.
func (c *Client) retried(ctx context.Context, method, path string, body []byte, contentType string) (*Response, error) {
	wait := c.wait
	for attempt := 0; ; attempt++ {
		r, err := c.once(ctx, method, path, body, contentType)
		var na *NoAnswerError
		again := (err == nil && r.Status == http.StatusServiceUnavailable) || errors.As(err, &na)
		if !again || attempt == c.retries || ctx.Err() != nil {
			return r, err
		}
		pause := wait
		if r != nil {
			if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && time.Duration(s)*time.Second > pause {
				pause = min(time.Duration(s)*time.Second, maxRetryWait)
			}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, err
		case <-t.C:
		}
		wait = min(2*wait, maxRetryWait)
	}
}
