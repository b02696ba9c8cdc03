package admission

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
)

// HeaderInvalidContentLength carries a Content-Length value that was not an
// integer, so that the handler chain can refuse it with Placement's message
// ("content-length header must be an integer") instead of net/http's bare
// "400 Bad Request", which is written before any handler runs.
const HeaderInvalidContentLength = "X-Berth-Invalid-Content-Length"

// WrapListener returns a listener whose connections rename a request's
// non-integer Content-Length header to HeaderInvalidContentLength. Such a
// request's body cannot be delimited, so the connection ends after its
// header block and the response closes it.
//
// The wrapper frames requests as net/http does, line by line: a line ends
// at LF (a CR before it is optional), the header block at the first empty
// line, a header line starting with a space or tab continues the one
// before, and the body is Content-Length bytes. Every byte is passed on as
// soon as its line is complete, unchanged, except Content-Length lines:
// each is held until the next line shows whether it continues, then
// passed on unchanged if its value is a valid length. A connection that
// uses Transfer-Encoding, or sends a line longer than maxInspectedLine,
// is passed through untouched from then on (net/http refuses such a line
// anyway, see MaxHeaderBytes). So the wrapper holds at most one line per
// connection, and a body is never inspected.
func WrapListener(l net.Listener) net.Listener { return &contentLengthListener{l} }

type contentLengthListener struct{ net.Listener }

func (l *contentLengthListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &contentLengthConn{Conn: c}, nil
}

// maxInspectedLine bounds one header line the wrapper holds: net/http's
// default header limit in berthd (64 KiB) plus its 4 KiB of slack.
const maxInspectedLine = 68 << 10

// framing states of a contentLengthConn.
const (
	stateRequestLine = iota // before a request line
	stateHeader             // in a header block
	stateBody               // passing bodyLeft bytes
)

type contentLengthConn struct {
	net.Conn
	pending []byte // bytes ready to hand to the reader
	line    []byte // an incomplete line being collected
	// held is a complete Content-Length line and its continuation lines,
	// waiting for the next line to show that no continuation follows;
	// heldBuf the small array it was last collected in, reused for the
	// next.
	held, heldBuf []byte
	state         int
	bodyLeft      int64 // body bytes of the current request still to pass
	validLength   bool  // a valid Content-Length was passed on in this block
	invalid       []byte
	chunked       bool // this block has Transfer-Encoding: pass through after it
	passthrough   bool // stop inspecting
	ended         bool // the stream ends after pending (invalid length seen)
	buf           []byte
	// pendBuf is the array pending was last appended into from empty,
	// reused once pending is drained.
	pendBuf []byte
}

func (c *contentLengthConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 && !c.ended && (c.passthrough || c.state == stateBody) {
		return c.readThrough(p)
	}
	for len(c.pending) == 0 {
		if c.ended {
			return 0, io.EOF
		}
		size := min(len(p), maxInspectedRead)
		if cap(c.buf) < size {
			c.buf = make([]byte, size)
		}
		buf := c.buf[:size]
		n, err := c.Conn.Read(buf)
		if n > 0 {
			c.consume(buf[:n])
			if cap(c.pending) > 0 {
				// pending was empty: this is its array's start.
				c.pendBuf = c.pending[:0]
			}
		}
		if len(c.pending) > 0 {
			break
		}
		if err != nil {
			// A timeout does not end the stream: net/http aborts its
			// read-ahead on a kept-alive connection with a past deadline,
			// and reads on later. Keep the incomplete line then; passing
			// it on half-inspected could miss a Content-Length.
			if len(c.held)+len(c.line) > 0 && !isTimeout(err) {
				c.pending = append(append(c.pending, c.held...), c.line...)
				c.held, c.line, c.passthrough = nil, nil, true
				break
			}
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		// Appended to again from its start, unless a large read grew
		// it: then let that buffer go.
		c.pending = nil
		if cap(c.pendBuf) <= maxPendingReuse {
			c.pending = c.pendBuf[:0]
		}
	}
	return n, nil
}

// isTimeout reports whether err is a net.Error that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// maxPendingReuse is the largest pending buffer a connection keeps for
// its next reads.
const maxPendingReuse = 16 << 10

// maxReusedHeld is the largest array of a held Content-Length line a
// connection keeps for its next.
const maxReusedHeld = 256

// maxInspectedRead bounds one read of bytes to inspect, whatever the
// size of the caller's buffer: a connection's buffer stays small.
const maxInspectedRead = 32 << 10

// readThrough reads bytes that are passed on uninspected (a body, or
// everything after the wrapper gave up) straight into p: a body is never
// copied through the wrapper's buffers. Nothing is pending or held then.
func (c *contentLengthConn) readThrough(p []byte) (int, error) {
	if c.passthrough {
		return c.Conn.Read(p)
	}
	n, err := c.Conn.Read(p[:min(int64(len(p)), c.bodyLeft)])
	c.bodyLeft -= int64(n)
	if c.bodyLeft == 0 {
		c.state = stateRequestLine
	}
	return n, err
}

// consume runs the framing state machine over newly read bytes.
func (c *contentLengthConn) consume(b []byte) {
	for len(b) > 0 && !c.ended {
		switch {
		case c.passthrough:
			c.pending = append(c.pending, b...)
			return
		case c.state == stateBody:
			n := min(int64(len(b)), c.bodyLeft)
			c.pending = append(c.pending, b[:n]...)
			c.bodyLeft -= n
			b = b[n:]
			if c.bodyLeft == 0 {
				c.state = stateRequestLine
			}
		default:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				c.line = append(c.line, b...)
				if len(c.line) > maxInspectedLine {
					c.giveUp()
				}
				return
			}
			// A line read whole is handled where it was read (endLine
			// copies what it keeps); only a line split across reads is
			// collected.
			line := b[:i+1]
			if len(c.line) > 0 {
				line = append(c.line, line...)
			}
			b = b[i+1:]
			c.line = nil
			if len(line) > maxInspectedLine {
				c.pending = append(c.pending, line...)
				c.giveUp()
				continue
			}
			c.endLine(line)
		}
	}
}

// giveUp passes on whatever is held and stops inspecting the connection.
func (c *contentLengthConn) giveUp() {
	c.pending = append(append(c.pending, c.held...), c.line...)
	c.held, c.line, c.passthrough = nil, nil, true
}

// endLine handles one complete line, LF included.
func (c *contentLengthConn) endLine(line []byte) {
	text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if c.state == stateRequestLine {
		// Empty lines before a request line are passed on: net/http
		// skips a few after a POST and refuses them otherwise.
		c.pending = append(c.pending, line...)
		if len(text) > 0 {
			c.state = stateHeader
			c.validLength, c.invalid, c.chunked, c.bodyLeft = false, nil, false, 0
		}
		return
	}
	if len(text) > 0 && (text[0] == ' ' || text[0] == '\t') && c.held != nil {
		c.held = append(c.held, line...)
		if len(c.held) > maxInspectedLine {
			c.giveUp()
		}
		return
	}
	c.release()
	if len(text) == 0 {
		c.endHeader(line)
		return
	}
	name, _, _ := bytes.Cut(text, []byte(":"))
	switch {
	case bytes.EqualFold(name, []byte("content-length")):
		c.held = append(c.heldBuf[:0], line...) // (nothing is held: released above)
		return
	case bytes.EqualFold(name, []byte("transfer-encoding")):
		c.chunked = true
	}
	c.pending = append(c.pending, line...)
}

// release decides on a held Content-Length line, now that no
// continuation follows: its value is parsed as net/http does (continuation
// lines joined by a space, spaces and tabs trimmed, a decimal integer).
func (c *contentLengthConn) release() {
	if c.held == nil {
		return
	}
	held := c.held
	c.held = nil
	if cap(held) <= maxReusedHeld {
		c.heldBuf = held[:0] // held is read only below, value copied out
	}
	var value []byte
	if i := bytes.IndexByte(held, '\n'); i < 0 || i == len(held)-1 {
		// One line, the usual case: its value read in place.
		_, l, _ := bytes.Cut(bytes.TrimSuffix(bytes.TrimSuffix(held, []byte("\n")), []byte("\r")), []byte(":"))
		value = bytes.Trim(l, " \t")
	} else {
		for i, l := range bytes.SplitAfter(held, []byte("\n")) {
			l = bytes.TrimSuffix(bytes.TrimSuffix(l, []byte("\n")), []byte("\r"))
			if i == 0 {
				_, l, _ = bytes.Cut(l, []byte(":"))
			} else if len(l) == 0 {
				continue
			}
			if t := bytes.Trim(l, " \t"); len(t) > 0 {
				if len(value) > 0 {
					value = append(value, ' ')
				}
				value = append(value, t...)
			}
		}
	}
	n, err := strconv.ParseUint(string(value), 10, 63)
	if err != nil {
		if c.invalid == nil {
			c.invalid = append([]byte{}, value...)
		}
		return
	}
	c.pending = append(c.pending, held...)
	c.validLength = true
	c.bodyLeft = int64(n)
}

// endHeader handles the empty line that ends a header block.
func (c *contentLengthConn) endHeader(line []byte) {
	switch {
	case c.invalid != nil:
		// The request is answered 400 without reading a body, and its
		// connection closed: nothing after this block is read.
		v := bytes.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return -1
			}
			return r
		}, c.invalid)
		if len(v) == 0 {
			v = []byte("(empty)")
		}
		c.pending = append(c.pending, HeaderInvalidContentLength+": "...)
		c.pending = append(c.pending, v...)
		c.pending = append(c.pending, "\r\n"...)
		c.pending = append(c.pending, line...)
		c.ended = true
	case c.chunked:
		c.pending = append(c.pending, line...)
		c.passthrough = true
	default:
		c.pending = append(c.pending, line...)
		c.state = stateRequestLine
		if c.bodyLeft > 0 {
			c.state = stateBody
		}
	}
}
