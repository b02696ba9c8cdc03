package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
)

// headerInvalidContentLength carries a Content-Length value that was not an
// integer, so that the handler chain can refuse it with Placement's message
// ("content-length header must be an integer") instead of net/http's bare
// "400 Bad Request", which is written before any handler runs.
const headerInvalidContentLength = "X-Berth-Invalid-Content-Length"

// WrapListener returns a listener whose connections rewrite a request's
// non-integer Content-Length header into headerInvalidContentLength (with
// Content-Length: 0). Such a request's body cannot be delimited, so the
// connection ends after its header block and the response closes it.
//
// The wrapper follows HTTP/1.1 framing: it holds back each header block
// until it is complete, then passes Content-Length bytes of body through.
// A connection that uses Transfer-Encoding or an oversized header block is
// passed through untouched from then on.
func WrapListener(l net.Listener) net.Listener { return &contentLengthListener{l} }

type contentLengthListener struct{ net.Listener }

func (l *contentLengthListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &contentLengthConn{Conn: c}, nil
}

const maxInspectedHeader = 1 << 20

type contentLengthConn struct {
	net.Conn
	pending     []byte // bytes ready to hand to the reader
	header      []byte // an incomplete header block being collected
	bodyLeft    int64  // body bytes of the current request still to pass
	passthrough bool   // stop inspecting
	ended       bool   // the stream ends after pending (invalid length seen)
	buf         []byte // what Read reads into, reused: consume copies out of it
}

func (c *contentLengthConn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.ended {
			return 0, io.EOF
		}
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)]
		n, err := c.Conn.Read(buf)
		if n > 0 {
			c.consume(buf[:n])
		}
		if len(c.pending) > 0 {
			break
		}
		if err != nil {
			// A timeout does not end the stream: net/http aborts its
			// read-ahead on a kept-alive connection with a past deadline,
			// and reads on later. Keep collecting the header block then;
			// passing it on half-inspected would miss its Content-Length.
			var ne net.Error
			if len(c.header) > 0 && !(errors.As(err, &ne) && ne.Timeout()) {
				c.pending, c.header = c.header, nil
				break
			}
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// consume runs the framing state machine over newly read bytes.
func (c *contentLengthConn) consume(b []byte) {
	for len(b) > 0 && !c.ended {
		switch {
		case c.passthrough:
			c.pending = append(c.pending, b...)
			return
		case c.bodyLeft > 0:
			n := int64(len(b))
			if n > c.bodyLeft {
				n = c.bodyLeft
			}
			c.pending = append(c.pending, b[:n]...)
			c.bodyLeft -= n
			b = b[n:]
		default:
			c.header = append(c.header, b...)
			b = nil
			end := bytes.Index(c.header, []byte("\r\n\r\n"))
			if end < 0 {
				if len(c.header) > maxInspectedHeader {
					c.pending = append(c.pending, c.header...)
					c.header, c.passthrough = nil, true
				}
				return
			}
			block, rest := c.header[:end+4], c.header[end+4:]
			c.header = nil
			c.pending = append(c.pending, c.inspect(block)...)
			b = append([]byte(nil), rest...)
		}
	}
}

// inspect examines one header block, sets up body framing, and rewrites a
// non-integer Content-Length.
func (c *contentLengthConn) inspect(block []byte) []byte {
	// Most header blocks pass unchanged: look at the two headers that
	// matter without splitting the block, and rewrite it only for an
	// invalid Content-Length.
	rewrite := false
	for rest := block[:len(block)-4]; len(rest) > 0 && !rewrite; {
		line := rest
		if i := bytes.Index(rest, []byte("\r\n")); i >= 0 {
			line, rest = rest[:i], rest[i+2:]
		} else {
			rest = nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		name = bytes.TrimSpace(name)
		switch {
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			c.passthrough = true
		case bytes.EqualFold(name, []byte("content-length")):
			n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
			if err != nil || n < 0 {
				rewrite = true
				continue
			}
			c.bodyLeft = n
		}
	}
	if !rewrite {
		return block
	}
	return c.rewrite(block)
}

// rewrite is inspect for a block with an invalid Content-Length: each
// line is checked again, and the invalid value moves to
// headerInvalidContentLength.
func (c *contentLengthConn) rewrite(block []byte) []byte {
	lines := strings.Split(string(block[:len(block)-4]), "\r\n")
	out := lines[:0:0]
	for _, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			out = append(out, line)
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "transfer-encoding":
			c.passthrough = true
		case "content-length":
			v := strings.TrimSpace(value)
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				c.ended = true
				out = append(out, headerInvalidContentLength+": "+v, "Content-Length: 0")
				continue
			}
			c.bodyLeft = n
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, "\r\n") + "\r\n\r\n")
}
