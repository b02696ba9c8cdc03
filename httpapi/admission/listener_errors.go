package admission

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/uuid"
)

// Answers net/http gives before any handler runs.
//
// When a request cannot be read (a header block past MaxHeaderBytes, a
// malformed request line such as HTTP/0.9's, a duplicate Content-Length,
// a missing Host header, an HTTP version it does not serve, a transfer
// encoding it does not know), net/http's connection loop writes a
// plain-text answer straight to the connection and closes it:
//
//	HTTP/1.1 431 Request Header Fields Too Large\r\n
//	Content-Type: text/plain; charset=utf-8\r\n
//	Connection: close\r\n
//	\r\n
//	431 Request Header Fields Too Large
//
// Every answer Berth writes is in Placement's error format, so the
// connections of WrapListener recognise that one write (a status line
// followed by exactly those two header fields, which no handler's answer
// has: every one carries a request id) and write the same status as a
// Placement error body instead, with a message of Berth's own.

// goErrorHeaders follows the status line of net/http's own answers.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Write passes b on, or the Placement form of net/http's own answer.
func (c *contentLengthConn) Write(b []byte) (int, error) {
	if out, ok := placementServerError(b); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// placementServerError returns the answer to write instead of b when b
// is one of net/http's own plain-text answers (see above).
func placementServerError(b []byte) ([]byte, bool) {
	const prefix = "HTTP/1.1 "
	if !bytes.HasPrefix(b, []byte(prefix)) || len(b) < len(prefix)+4 {
		return nil, false
	}
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 || !bytes.HasPrefix(b[end:], []byte(goErrorHeaders)) {
		return nil, false
	}
	status, err := strconv.Atoi(string(b[len(prefix) : len(prefix)+3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	// A statusError's line reads "400 Bad Request: <reason>".
	_, reason, _ := bytes.Cut(b[len(prefix):end], []byte(": "))
	return serverErrorAnswer(status, serverErrorDetail(status, string(reason))), true
}

// serverErrorDetail is Berth's message for net/http's answer of status
// with reason (empty for the answers that give none).
func serverErrorDetail(status int, reason string) string {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return "The request's header fields are larger than this server accepts."
	case http.StatusNotImplemented:
		return "The request's transfer encoding is not supported."
	case http.StatusHTTPVersionNotSupported:
		return "The request's HTTP version is not supported: use HTTP/1.1."
	}
	switch reason {
	case "missing required Host header":
		return "The request has no Host header."
	case "malformed Host header":
		return "The request's Host header is malformed."
	case "invalid header name", "invalid header value":
		return "The request has a malformed header field."
	}
	return "The request is not well-formed HTTP/1.1: its request line or header fields (such as " +
		"Content-Length, Transfer-Encoding) cannot be read."
}

// serverErrorAnswer is a whole HTTP/1.1 answer of status with a Placement
// error body saying detail, that closes the connection.
func serverErrorAnswer(status int, detail string) []byte {
	id := "req-" + uuid.New()
	body := wire.ServerErrorBody(status, detail, id)
	var out bytes.Buffer
	out.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	out.WriteString("Content-Type: application/json\r\n")
	out.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	out.WriteString(wire.HeaderRequestID + ": " + id + "\r\n")
	out.WriteString("Connection: close\r\n\r\n")
	out.Write(body)
	return out.Bytes()
}
