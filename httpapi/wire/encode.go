package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
)

// Answers.
//
// An answer is written as Placement's Python service writes it: WriteJSON
// encodes a value as encoding/json does (map keys sorted, HTML
// characters not escaped, no trailing newline), with PyFloat64 and
// PyNumber for the numbers json.dumps writes otherwise, and Object for
// the objects whose members keep the order they were set in. The
// answers of the busiest routes are appended by hand instead, into a
// pooled buffer (WriteAppended, with the Append functions here), byte
// for byte what WriteJSON writes of the same value; where an appender
// cannot be sure of that (a non-finite float, a key twice), it reports
// false and the route answers through WriteJSON.

// WriteJSON writes v as the JSON body of a response.
func WriteJSON(c echo.Context, status int, v any) error {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledAnswer {
			jsonBuffers.Put(buf)
		}
	}()
	b, err := encodeJSON(buf, v)
	if err != nil {
		return err
	}
	return WriteJSONBody(c, status, b)
}

// WriteJSONBody answers status with the JSON body b, as echo's Blob
// does (a Content-Type already set is kept), without allocating the
// Content-Type header's value.
func WriteJSONBody(c echo.Context, status int, b []byte) error {
	res := c.Response()
	h := res.Header()
	if v := h[echo.HeaderContentType]; len(v) == 0 || v[0] == "" {
		h[echo.HeaderContentType] = jsonContentType
	}
	res.WriteHeader(status)
	_, err := res.Write(b)
	return err
}

// jsonContentType is the Content-Type of a JSON answer, one value every
// answer's header shares: net/http and echo never write into a header's
// values, and an Add appends to a copy (its capacity is its length).
var jsonContentType = []string{echo.MIMEApplicationJSON}

// jsonBuffers pools WriteJSON's buffers.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeJSON encodes v into buf as WriteJSON answers it: compact, HTML
// characters not escaped, no trailing newline.
func encodeJSON(buf *bytes.Buffer, v any) ([]byte, error) {
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// SetCacheHeaders marks a GET response as not cacheable and gives its last
// modification time, from microversion 1.15 on.
func SetCacheHeaders(c echo.Context, lastModified time.Time) {
	if !VersionOf(c).AtLeast(15) {
		return
	}
	if lastModified.IsZero() {
		lastModified = time.Now()
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Last-Modified", lastModified.UTC().Format(http.TimeFormat))
}

// answerBufs pools the buffers hand-written answers are appended to.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledAnswer is the largest buffer put back in answerBufs and
// jsonBuffers.
const maxPooledAnswer = 64 << 10

// WriteAppended answers with status and the JSON that app appends, and
// reports true, unless app reports false: then it has written nothing.
func WriteAppended(c echo.Context, status int, app func([]byte) ([]byte, bool)) (bool, error) {
	bp := answerBufs.Get().(*[]byte)
	b, ok := app((*bp)[:0])
	var err error
	if ok {
		err = WriteJSONBody(c, status, b)
	}
	if cap(b) <= maxPooledAnswer {
		*bp = b[:0]
		answerBufs.Put(bp)
	}
	return ok, err
}

// AppendGoString appends s as encoding/json encodes a string with HTML
// escaping off (SetEscapeHTML(false)): quotes, backslashes and control
// characters escaped (\b, \f, \n, \r and \t short, the others \u00XX),
// invalid UTF-8 as \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func AppendGoString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendHTMLString appends s as json.Marshal encodes a string (HTML
// escaping on): as AppendGoString, with <, > and & as \u003c, \u003e
// and \u0026. Object encodes its keys so.
func AppendHTMLString(b []byte, s string) []byte {
	if !strings.ContainsAny(s, "<>&") {
		return AppendGoString(b, s)
	}
	for _, c := range AppendGoString(nil, s) {
		switch c {
		case '<':
			b = append(b, `\u003c`...)
		case '>':
			b = append(b, `\u003e`...)
		case '&':
			b = append(b, `\u0026`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// AppendPyNumber appends what PyNumber(lit) marshals to, or reports
// false where that fails.
func AppendPyNumber(b []byte, lit string) ([]byte, bool) {
	if !strings.ContainsAny(lit, ".eE") {
		return append(b, lit...), true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return b, false
	}
	return AppendPyFloat(b, f)
}

// AppendPyFloat appends what PyFloat64(f) marshals to, or reports false
// where that fails.
func AppendPyFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	return append(b, jsonschema.PyFloat(f)...), true
}

// AppendStrings appends list as encoding/json encodes a []string with
// HTML escaping off (nil is null).
func AppendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendGoString(b, s)
	}
	return append(b, ']')
}

// PyFloat64 marshals like Python's json.dumps of a float: 1.0, not 1.
type PyFloat64 float64

func (f PyFloat64) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
		// inf or nan have no JSON form; never stored, but do not emit junk.
		return nil, errors.New("float out of JSON range")
	}
	return []byte(jsonschema.PyFloat(float64(f))), nil
}

// PyNumber is a JSON number as Python's json module reads and writes it
// back: an integer literal stays that integer; any other number is a float
// and is written as Python's repr of it.
type PyNumber string

func (n PyNumber) MarshalJSON() ([]byte, error) {
	if !strings.ContainsAny(string(n), ".eE") {
		return []byte(n), nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil, err
	}
	return PyFloat64(f).MarshalJSON()
}
