package wire

import (
	"bytes"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Streaming answers.
//
// A list of every provider of a large cloud is written as it is encoded,
// element by element, through a small buffer, instead of being built first
// as generic maps and encoded in one piece, which holds memory for every
// element at once (docs/performance.md). The bytes are the same as
// WriteJSON's: compact JSON, object keys in sorted order (as encoding/json
// writes a map's), HTML characters not escaped, no trailing newline.

// StreamFlushBytes is how much encoded JSON is buffered before it is
// written to the client.
const StreamFlushBytes = 32 << 10

// ListStream writes `{"<key>":[e1,e2,...]}` to w, an element at a time.
type ListStream struct {
	w   io.Writer
	buf bytes.Buffer
	n   int
	err error
}

// NewListStream starts the list of key on w.
func NewListStream(w io.Writer, key string) *ListStream {
	ls := &ListStream{w: w}
	ls.buf.Grow(StreamFlushBytes + 1024)
	ls.buf.WriteString(`{`)
	ls.buf.Write(AppendGoString(ls.buf.AvailableBuffer(), key))
	ls.buf.WriteString(`:[`)
	return ls
}

func (ls *ListStream) flush() {
	if ls.err == nil && ls.buf.Len() > 0 {
		_, ls.err = ls.w.Write(ls.buf.Bytes())
	}
	ls.buf.Reset()
}

// Add appends one element's JSON with app, which must append exactly
// one valid JSON value.
func (ls *ListStream) Add(app func([]byte) []byte) {
	if ls.err != nil {
		return
	}
	if ls.n > 0 {
		ls.buf.WriteByte(',')
	}
	ls.n++
	ls.buf.Write(app(ls.buf.AvailableBuffer()))
	if ls.buf.Len() >= StreamFlushBytes {
		ls.flush()
	}
}

// Close ends the list and writes what is left.
func (ls *ListStream) Close() error {
	ls.buf.WriteString(`]}`)
	ls.flush()
	return ls.err
}

// Stream starts a 200 JSON answer whose body write writes.
func Stream(c echo.Context, write func(io.Writer) error) error {
	r := c.Response()
	r.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	r.WriteHeader(http.StatusOK)
	return write(r)
}
