package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

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

// Bounds on what a JSON request body may decode to. A body is read whole
// (up to the server's body limit, body.go) and then decoded into generic
// values for schema validation and into the handler's typed body, which
// costs far more memory than the body: many small array items cost many
// times their bytes as values, and every byte of its strings is copied at
// each decoding. CheckJSON counts before anything is built. The
// bounds are far above any Placement or Berth request (a reshaper body
// for a large tree has a few tens of thousands of values, a few MiB of
// strings at most; a scriptlet's source is at most 1 MiB).
const (
	maxJSONValues    = 250_000 // values of every kind, object keys included
	maxJSONItems     = 100_000 // items of one array or members of one object
	maxJSONString    = 2 << 20 // bytes of one decoded string
	maxJSONTextBytes = 8 << 20 // bytes of all decoded strings (keys included) and numbers
	// maxJSONDepth is encoding/json's own nesting limit: deeper bodies
	// are left to its error.
	maxJSONDepth = 10_000
)

// CheckJSON refuses, before the body is decoded (step 2 of decode.go;
// Bodies.Read runs it on every body it reads): bytes that are not
// UTF-8 (with the message Placement gives,
// Python's UnicodeDecodeError); \u escapes of lone UTF-16 surrogates
// (encoding/json would store U+FFFD for them, so different invalid names
// would collide); and bodies past the bounds above (413). Malformed JSON
// is left to parseJSONDoc, which words its errors as Python does.
func CheckJSON(body []byte) error {
	// The charset parameter is not looked at: Placement decodes the bytes
	// as JSON whatever the Content-Type says, and so does this.
	if err := checkUTF8(body); err != nil {
		return BadRequest("Malformed JSON: %v", err)
	}
	return scanJSON(body)
}

// checkUTF8 reports the first invalid UTF-8 sequence in b as Python's
// strict UTF-8 decoder does: "'utf-8' codec can't decode byte 0xff in
// position 10: invalid start byte".
func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		if r, n := utf8.DecodeRune(b[i:]); r != utf8.RuneError || n > 1 {
			i += n
			continue
		}
		// The longest prefix of a valid sequence that starts at i, as
		// CPython reports it.
		lo, hi, need := byte(0x80), byte(0xBF), 0
		switch c := b[i]; {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			lo, need = 0xA0, 2
		case c == 0xED:
			hi, need = 0x9F, 2
		case c >= 0xE1 && c <= 0xEF:
			need = 2
		case c == 0xF0:
			lo, need = 0x90, 3
		case c == 0xF4:
			hi, need = 0x8F, 3
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		default:
			return utf8Error(b, i, i, "invalid start byte")
		}
		end := i // last byte of the valid prefix
		for k := 1; k <= need; k++ {
			if i+k >= len(b) {
				return utf8Error(b, i, len(b)-1, "unexpected end of data")
			}
			if c := b[i+k]; c < lo || c > hi {
				return utf8Error(b, i, end, "invalid continuation byte")
			}
			lo, hi, end = 0x80, 0xBF, i+k
		}
		i += need + 1 // not reached for an invalid sequence
	}
	return nil
}

func utf8Error(b []byte, start, end int, reason string) error {
	if start == end {
		return fmt.Errorf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", b[start], start, reason)
	}
	return fmt.Errorf("'utf-8' codec can't decode bytes in position %d-%d: %s", start, end, reason)
}

// tooLarge is the answer to a body past a decoding bound.
func tooLarge(format string, args ...any) *Error {
	return NewError(http.StatusRequestEntityTooLarge, "", "JSON body too large to decode: "+format, args...)
}

// scanJSON counts the values, container items and string lengths of a
// JSON text without building anything, and checks \u escapes. It stops at
// the first syntax it does not expect, leaving the error to the decoder.
func scanJSON(b []byte) error {
	var items []int           // per open container, the commas seen
	values, textBytes := 0, 0 // textBytes: of strings and numbers, as decoded
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			continue
		case '[', '{':
			if len(items) >= maxJSONDepth {
				return nil
			}
			items = append(items, 0)
		case ']', '}':
			if len(items) == 0 {
				return nil
			}
			items = items[:len(items)-1]
			continue
		case ',':
			if len(items) == 0 {
				return nil
			}
			if items[len(items)-1]++; items[len(items)-1] >= maxJSONItems {
				return tooLarge("an array or object has more than %d items.", maxJSONItems)
			}
			continue
		case '"':
			end, n, err := scanString(b, i+1)
			if err != nil {
				return err
			}
			if end < 0 {
				return nil
			}
			if textBytes += n; textBytes > maxJSONTextBytes {
				return tooLarge("strings and numbers of more than %d bytes in all.", maxJSONTextBytes)
			}
			i = end
		default:
			// A number or literal: up to the next delimiter. A number is
			// kept as its text (json.Number) when decoded.
			start := i
			for i+1 < len(b) && !jsonDelimiter[b[i+1]] {
				i++
			}
			if textBytes += i + 1 - start; textBytes > maxJSONTextBytes {
				return tooLarge("strings and numbers of more than %d bytes in all.", maxJSONTextBytes)
			}
		}
		if values++; values > maxJSONValues {
			return tooLarge("more than %d values.", maxJSONValues)
		}
	}
	return nil
}

// jsonDelimiter marks the bytes that end a number or literal in scanJSON.
var jsonDelimiter = func() (d [256]bool) {
	for _, c := range []byte(" \t\n\r,:]}[{\"") {
		d[c] = true
	}
	return d
}()

// scanString checks the string whose contents start at b[start] and
// returns the index of its closing quote and its decoded length in bytes,
// or -1 if it has none or a malformed escape (the decoder's error then).
func scanString(b []byte, start int) (int, int, error) {
	n := 0 // decoded bytes
	for i := start; i < len(b); i++ {
		if n > maxJSONString {
			return 0, 0, tooLarge("a string is longer than %d bytes.", maxJSONString)
		}
		switch b[i] {
		case '"':
			return i, n, nil
		case '\\':
			if i+1 >= len(b) {
				return -1, 0, nil
			}
			if b[i+1] != 'u' {
				i++
				n++
				continue
			}
			r, ok := hex4(b, i+2)
			if !ok {
				return -1, 0, nil
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if low, ok := hex4(b, i+8); ok && b[i+6] == '\\' && b[i+7] == 'u' && low >= 0xDC00 && low <= 0xDFFF {
					i += 11
					n += 4
					continue
				}
				return 0, 0, loneSurrogate(b, i, r)
			case r >= 0xDC00 && r <= 0xDFFF:
				return 0, 0, loneSurrogate(b, i, r)
			}
			i += 5
			n += utf8.RuneLen(r)
		default:
			n++
		}
	}
	return -1, 0, nil
}

func loneSurrogate(b []byte, i int, r rune) error {
	return BadRequest("Malformed JSON: invalid \\u%04x escape at char %d: a lone UTF-16 surrogate is not a character",
		r, utf8.RuneCount(b[:i]))
}
