package wire

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Reading a request body.
//
// A JSON body is read whole before it is decoded (decode.go), and while
// its request runs it is held several times over: as bytes, as the
// document the schema validates, as the typed body, and (a claim's)
// encoded again to be recorded. So a body's size is bounded twice:
//
//   - A body is read into a buffer of its Content-Length (one
//     allocation), not a growing one; a Content-Length past the limit is
//     refused (413) without keeping a byte of it (discardBody). A body
//     without a length (chunked) is read as it comes, up to the limit.
//   - A body of LargeBodyBytes or more holds its size of the server's
//     body budget (Budget; package admission keeps it) from before it is
//     read until its request ends, so that a few large bodies at once
//     cannot grow the process without bound.
//
// docs/security.md lists these bounds with the decoding bounds.

// LargeBodyBytes is the size from which a body holds a share of the
// budget.
const LargeBodyBytes = 1 << 20

// Budget bounds the large bodies held at once.
type Budget interface {
	// Hold takes n bytes of the budget for the request of c until its
	// request ends, waiting for them a bounded time, or refuses.
	Hold(c echo.Context, n int64) error
}

// Read reads the request body, which must be declared as JSON, and
// checks it before it is decoded (CheckJSON). See above for what
// reading it costs.
func (b *Bodies) Read(c echo.Context) ([]byte, error) {
	if err := requireJSONBody(c); err != nil {
		return nil, err
	}
	req := c.Request()
	limit := b.maxBytes
	if req.ContentLength > limit {
		discardBody(req.Body, req.ContentLength, limit)
		return nil, bodyTooLarge(limit)
	}
	var body []byte
	var err error
	if req.ContentLength >= 0 {
		if req.ContentLength >= LargeBodyBytes {
			if err := b.budget.Hold(c, req.ContentLength); err != nil {
				return nil, err
			}
		}
		// Exactly its length, at most limit: the body needs no
		// http.MaxBytesReader.
		body = make([]byte, req.ContentLength)
		_, err = io.ReadFull(req.Body, body)
	} else {
		body, err = b.readUnsized(c, http.MaxBytesReader(c.Response(), req.Body, limit), limit)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		var he *Error
		switch {
		case errors.As(err, &mbe):
			return nil, bodyTooLarge(mbe.Limit)
		case errors.As(err, &he):
			return nil, he
		}
		return nil, BadRequest("Could not read the request body.")
	}
	if err := CheckJSON(body); err != nil {
		return nil, err
	}
	return body, nil
}

// requireJSONBody refuses a request body that is not declared as JSON.
// As webob's req.content_type, the media type is everything before the
// first ";", compared as it is: no trimming, no case folding.
func requireJSONBody(c echo.Context) error {
	mt, _, _ := strings.Cut(c.Request().Header.Get(echo.HeaderContentType), ";")
	if mt != echo.MIMEApplicationJSON {
		if mt == "" {
			mt = "None"
		}
		return NewError(http.StatusUnsupportedMediaType, "",
			"The media type %s is not supported, use application/json", mt)
	}
	return nil
}

// readUnsized reads a body sent without a Content-Length: its first
// LargeBodyBytes freely, the rest holding the share of a body of limit
// bytes (its size is not known before it is read).
func (b *Bodies) readUnsized(c echo.Context, r io.Reader, limit int64) ([]byte, error) {
	head, err := readAll(io.LimitReader(r, LargeBodyBytes))
	if err != nil || len(head) < LargeBodyBytes {
		return head, err
	}
	if err := b.budget.Hold(c, limit); err != nil {
		return nil, err
	}
	rest, err := readAll(r)
	return append(head, rest...), err
}

// readAll is io.ReadAll with a buffer that doubles as it fills: io.ReadAll
// grows a large buffer by a quarter at a time, and so allocates several
// times the body's size in all.
func readAll(r io.Reader) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// maxDiscardFactor bounds the body of a refused request that is read
// and thrown away, in multiples of the body limit.
const maxDiscardFactor = 4

// discardBody reads and throws away a body of length bytes refused
// unread, through a small buffer, when it is at most maxDiscardFactor
// times limit: a client that sends its whole body before it reads the
// answer (most do) would otherwise find the connection reset under it
// and never see the 413. A longer body is left unread and the connection
// closes after the answer.
func discardBody(body io.Reader, length, limit int64) {
	if length <= maxDiscardFactor*limit {
		_, _ = io.Copy(io.Discard, io.LimitReader(body, length))
	}
}

// bodyTooLarge is the 413 of a body past limit bytes.
func bodyTooLarge(limit int64) *Error {
	return NewError(http.StatusRequestEntityTooLarge, "", "Request body larger than %d bytes.", limit)
}
