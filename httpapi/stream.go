package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/ledger"
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
	enc *json.Encoder
	n   int
	err error
}

func newListStream(w io.Writer, key string) *listStream {
	ls := &listStream{w: w}
	ls.enc = json.NewEncoder(&ls.buf)
	ls.enc.SetEscapeHTML(false)
	ls.buf.WriteString(`{`)
	_ = ls.enc.Encode(key) // a string always encodes
	ls.trimNewline()
	ls.buf.WriteString(`:[`)
	return ls
}

func (ls *listStream) trimNewline() {
	if b := ls.buf.Bytes(); len(b) > 0 && b[len(b)-1] == '\n' {
		ls.buf.Truncate(len(b) - 1)
	}
}

// add encodes one element.
func (ls *listStream) add(v any) {
	if ls.err != nil {
		return
	}
	if ls.n > 0 {
		ls.buf.WriteByte(',')
	}
	ls.n++
	if err := ls.enc.Encode(v); err != nil {
		ls.err = fmt.Errorf("encode response: %w", err)
		return
	}
	ls.trimNewline()
	if ls.buf.Len() >= streamFlushBytes {
		ls.flush()
	}
}

func (ls *listStream) flush() {
	if ls.err == nil && ls.buf.Len() > 0 {
		_, ls.err = ls.w.Write(ls.buf.Bytes())
	}
	ls.buf.Reset()
}

// close ends the list and writes what is left.
func (ls *listStream) close() error {
	ls.buf.WriteString(`]}`)
	ls.flush()
	return ls.err
}

// providerLink, providerOut and providerTreeOut are providerJSON's
// shapes as structs, their fields in the order encoding/json writes a
// map's keys (sorted), so that the output is byte for byte the same.
type providerLink struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
}

type providerOut struct {
	Generation int64          `json:"generation"`
	Links      []providerLink `json:"links"`
	Name       string         `json:"name"`
	UUID       string         `json:"uuid"`
}

// providerTreeOut is a provider from microversion 1.14 on.
type providerTreeOut struct {
	Generation int64          `json:"generation"`
	Links      []providerLink `json:"links"`
	Name       string         `json:"name"`
	Parent     *string        `json:"parent_provider_uuid"` // null for a root
	Root       string         `json:"root_provider_uuid"`
	UUID       string         `json:"uuid"`
}

// providerRels lists the links of a provider at microversion v, after self.
func providerRels(v Version) []string {
	rels := []string{"inventories", "usages"}
	if v.AtLeast(1) {
		rels = append(rels, "aggregates")
	}
	if v.AtLeast(6) {
		rels = append(rels, "traits")
	}
	if v.AtLeast(11) {
		rels = append(rels, "allocations")
	}
	return rels
}

// writeProviderList writes GET /resource_providers' answer for providers
// at microversion v to w, streaming (see listStream). It writes what
// writeJSON(c, 200, {"resource_providers": [providerJSON(c, p)...]})
// would.
func writeProviderList(w io.Writer, v Version, providers iter.Seq[ledger.Provider]) error {
	rels := providerRels(v)
	links := make([]providerLink, 1+len(rels))
	ls := newListStream(w, "resource_providers")
	tree := v.AtLeast(14)
	for p := range providers {
		self := providerURL(p.UUID)
		links[0] = providerLink{Href: self, Rel: "self"}
		for k, rel := range rels {
			links[k+1] = providerLink{Href: self + "/" + rel, Rel: rel}
		}
		if tree {
			out := providerTreeOut{Generation: p.Generation, Links: links, Name: p.Name, Root: p.RootUUID, UUID: p.UUID}
			if p.ParentUUID != "" {
				out.Parent = &p.ParentUUID
			}
			ls.add(&out)
		} else {
			ls.add(&providerOut{Generation: p.Generation, Links: links, Name: p.Name, UUID: p.UUID})
		}
	}
	return ls.close()
}

// streamJSON starts a 200 JSON answer whose body write writes.
func streamJSON(c echo.Context, write func(io.Writer) error) error {
	r := c.Response()
	r.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	r.WriteHeader(http.StatusOK)
	return write(r)
}
