package httpapi

import (
	"bytes"
	"io"
	"iter"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/berthd/berth/ledger/engine"
	"github.com/labstack/echo/v4"
)

// Streaming answers.
//
// A list of every provider of a large cloud is written as it is encoded,
// element by element, through a small buffer, instead of being built first
// as generic maps and encoded in one piece: at 100,000 providers the
// latter held hundreds of MiB at once (docs/performance.md). The bytes are
// the same as writeJSON's: compact JSON, object keys in sorted order (as
// encoding/json writes a map's), HTML characters not escaped, no trailing
// newline.

// streamFlushBytes is how much encoded JSON is buffered before it is
// written to the client.
const streamFlushBytes = 32 << 10

// listStream writes `{"<key>":[e1,e2,...]}` to w, an element at a time.
type listStream struct {
	w   io.Writer
	buf bytes.Buffer
	n   int
	err error
}

func newListStream(w io.Writer, key string) *listStream {
	ls := &listStream{w: w}
	ls.buf.Grow(streamFlushBytes + 1024)
	ls.buf.WriteString(`{`)
	ls.buf.Write(appendGoString(ls.buf.AvailableBuffer(), key))
	ls.buf.WriteString(`:[`)
	return ls
}

func (ls *listStream) flush() {
	if ls.err == nil && ls.buf.Len() > 0 {
		_, ls.err = ls.w.Write(ls.buf.Bytes())
	}
	ls.buf.Reset()
}

// add appends one element's JSON with app, which must append exactly
// one valid JSON value.
func (ls *listStream) add(app func([]byte) []byte) {
	if ls.err != nil {
		return
	}
	if ls.n > 0 {
		ls.buf.WriteByte(',')
	}
	ls.n++
	ls.buf.Write(app(ls.buf.AvailableBuffer()))
	if ls.buf.Len() >= streamFlushBytes {
		ls.flush()
	}
}

// close ends the list and writes what is left.
func (ls *listStream) close() error {
	ls.buf.WriteString(`]}`)
	ls.flush()
	return ls.err
}

// providerRels lists the links of a provider at microversion v, after self.
// The slice is shared: callers must not change it.
func providerRels(v Version) []string {
	switch {
	case v.AtLeast(11):
		return providerRelsByVersion[3]
	case v.AtLeast(6):
		return providerRelsByVersion[2]
	case v.AtLeast(1):
		return providerRelsByVersion[1]
	}
	return providerRelsByVersion[0]
}

// providerRelsByVersion are the links after self before 1.1, from 1.1
// (aggregates), from 1.6 (traits) and from 1.11 (allocations).
var providerRelsByVersion = [...][]string{
	{"inventories", "usages"},
	{"inventories", "usages", "aggregates"},
	{"inventories", "usages", "aggregates", "traits"},
	{"inventories", "usages", "aggregates", "traits", "allocations"},
}

// writeProviderList writes GET /resource_providers' answer for providers
// at microversion v to w, streaming (see listStream). It writes what
// writeJSON(c, 200, {"resource_providers": [providerJSON(c, p)...]})
// would: each provider is appended by hand, keys sorted as encoding/json
// writes a map's, strings escaped as it escapes them, which costs a
// fraction of a reflective encoding at 100,000 providers (the tests
// compare the bytes with providerJSON's at every microversion).
func writeProviderList(w io.Writer, v Version, providers iter.Seq[engine.Provider]) error {
	rels := providerRels(v)
	ls := newListStream(w, "resource_providers")
	tree := v.AtLeast(14)
	for p := range providers {
		ls.add(func(b []byte) []byte { return appendProvider(b, p, rels, tree) })
	}
	return ls.close()
}

// appendProvider appends what writeJSON writes of providerJSON(c, p) at
// a microversion whose links after self are rels (providerRels) and
// that has the tree fields if tree (from 1.14).
func appendProvider(b []byte, p engine.Provider, rels []string, tree bool) []byte {
	b = append(b, `{"generation":`...)
	b = strconv.AppendInt(b, p.Generation, 10)
	b = append(b, `,"links":[{"href":`...)
	self := len(b)
	b = appendGoString(b, providerURL(p.UUID))
	selfHref := b[self+1 : len(b)-1] // the escaped href, without quotes
	b = append(b, `,"rel":"self"}`...)
	for _, rel := range rels {
		b = append(b, `,{"href":"`...)
		b = append(b, selfHref...)
		b = append(b, '/')
		b = append(b, rel...) // rel names need no escaping
		b = append(b, `","rel":"`...)
		b = append(b, rel...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"name":`...)
	b = appendGoString(b, p.Name)
	if tree {
		b = append(b, `,"parent_provider_uuid":`...)
		if p.ParentUUID != "" {
			b = appendGoString(b, p.ParentUUID)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"root_provider_uuid":`...)
		b = appendGoString(b, p.RootUUID)
	}
	b = append(b, `,"uuid":`...)
	b = appendGoString(b, p.UUID)
	return append(b, '}')
}

// appendGoString appends s as encoding/json encodes a string with HTML
// escaping off (SetEscapeHTML(false)): quotes, backslashes and control
// characters escaped (\b, \f, \n, \r and \t short, the others \u00XX),
// invalid UTF-8 as \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func appendGoString(b []byte, s string) []byte {
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

// streamJSON starts a 200 JSON answer whose body write writes.
func streamJSON(c echo.Context, write func(io.Writer) error) error {
	r := c.Response()
	r.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	r.WriteHeader(http.StatusOK)
	return write(r)
}
