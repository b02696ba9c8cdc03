package pgcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// This file speaks the smallest useful subset of the PostgreSQL
// frontend/backend protocol version 3: a startup message answered by
// trust authentication, simple queries and termination. It exists so that
// pgcluster can check readiness and create databases without a driver;
// anything more belongs in a real driver (pgx, in the ledger package).

// Error is an ErrorResponse from the server.
type Error struct {
	// Code is the SQLSTATE, e.g. "42P04" for duplicate_database.
	Code string
	// Message is the primary human-readable message.
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("postgres: %s (SQLSTATE %s)", e.Message, e.Code) }

// SQLSTATE codes this package acts on.
const (
	codeCannotConnectNow  = "57P03" // the database system is starting up
	codeDuplicateDatabase = "42P04"
)

// maxMessage bounds a backend message; the messages we expect are tiny.
const maxMessage = 1 << 20

// wireConn is one protocol-level connection.
type wireConn struct {
	c net.Conn
	r *bufio.Reader
}

// dialWire connects to the unix socket at path as user to database and
// completes startup. It fails unless the server grants access without a
// password (trust). Every read and write is bounded by ctx's deadline or,
// without one, by ten seconds.
func dialWire(ctx context.Context, path, user, database string) (*wireConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	_ = c.SetDeadline(deadline)
	w := &wireConn{c: c, r: bufio.NewReader(c)}

	var body bytes.Buffer
	_ = binary.Write(&body, binary.BigEndian, int32(196608)) // protocol 3.0
	for _, s := range []string{"user", user, "database", database, "application_name", "pgcluster"} {
		body.WriteString(s)
		body.WriteByte(0)
	}
	body.WriteByte(0)
	if err := w.send(0, body.Bytes()); err != nil {
		c.Close()
		return nil, err
	}
	if err := w.readUntilReady(func(typ byte, msg []byte) error {
		if typ == 'R' {
			if len(msg) < 4 || binary.BigEndian.Uint32(msg) != 0 {
				return errors.New("pgcluster: server asks for a password; the cluster must use trust authentication for local connections")
			}
		}
		return nil
	}); err != nil {
		c.Close()
		return nil, err
	}
	return w, nil
}

// exec runs one simple query and discards its results. It returns the
// first ErrorResponse as an *Error.
func (w *wireConn) exec(sql string) error {
	if err := w.send('Q', append([]byte(sql), 0)); err != nil {
		return err
	}
	return w.readUntilReady(nil)
}

// close sends Terminate and closes the socket.
func (w *wireConn) close() {
	_ = w.send('X', nil)
	_ = w.c.Close()
}

// send writes a message; typ 0 means an untyped (startup) message.
func (w *wireConn) send(typ byte, body []byte) error {
	var buf bytes.Buffer
	if typ != 0 {
		buf.WriteByte(typ)
	}
	_ = binary.Write(&buf, binary.BigEndian, int32(len(body)+4))
	buf.Write(body)
	_, err := w.c.Write(buf.Bytes())
	return err
}

// readUntilReady reads messages until ReadyForQuery, passing each to fn
// (when not nil). It returns at once with fn's first error; otherwise it
// returns the first ErrorResponse. A fatal ErrorResponse during startup is followed by the
// server closing the connection, so an error also ends the loop at EOF.
func (w *wireConn) readUntilReady(fn func(typ byte, msg []byte) error) error {
	var first error
	for {
		typ, msg, err := w.read()
		if err != nil {
			if first != nil && errors.Is(err, io.EOF) {
				return first
			}
			return errors.Join(first, err)
		}
		switch typ {
		case 'Z':
			return first
		case 'E':
			if first == nil {
				first = parseError(msg)
			}
			continue
		}
		if fn != nil && first == nil {
			if err := fn(typ, msg); err != nil {
				return err
			}
		}
	}
}

func (w *wireConn) read() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(w.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
	if n < 0 || n > maxMessage {
		return 0, nil, fmt.Errorf("pgcluster: bad message length %d", n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(w.r, msg); err != nil {
		return 0, nil, err
	}
	return hdr[0], msg, nil
}

// parseError decodes an ErrorResponse body: (field type, C string) pairs
// ending with a zero byte.
func parseError(msg []byte) *Error {
	e := &Error{}
	for len(msg) > 1 {
		field := msg[0]
		end := bytes.IndexByte(msg[1:], 0)
		if end < 0 {
			break
		}
		val := string(msg[1 : 1+end])
		msg = msg[2+end:]
		switch field {
		case 'C':
			e.Code = val
		case 'M':
			e.Message = val
		}
	}
	return e
}
