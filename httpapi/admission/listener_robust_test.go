package admission

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestContentLengthConnKeepsHeaderAcrossTimeout: net/http reads ahead on a
// kept-alive connection while a handler runs and aborts that read with a
// past deadline when the handler returns. If the next request's header
// had partly arrived, the wrapper used to pass that part on uninspected,
// then took the request's body for a header block and held it back until
// the client gave up: a PUT hung under concurrent load
// (TestConcurrentClaims in package integration found it).
func TestContentLengthConnKeepsHeaderAcrossTimeout(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &contentLengthConn{Conn: server}
	defer c.Close()

	part1 := "PUT /x HTTP/1.1\r\nContent-Length: 5\r\n"
	part2 := "Host: x\r\n\r\nhello"
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(client, part1)
		wrote <- err
	}()
	// The read-ahead: one byte at a time, until the deadline aborts it.
	// (On a slow machine the deadline may pass before part1 arrives; the
	// test then checks less, but never fails wrongly.)
	var got []byte
	if err := c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	for {
		n, err := c.Read(one)
		got = append(got, one[:n]...)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read-ahead: %v", err)
			}
			break
		}
	}
	// Complete lines may be passed on, but not the Content-Length line:
	// whether a continuation line follows is not known yet.
	if !strings.HasPrefix("PUT /x HTTP/1.1\r\n", string(got)) {
		t.Fatalf("the read-ahead passed on %q before the Content-Length line was complete", got)
	}
	go func() {
		<-wrote
		_, err := io.WriteString(client, part2)
		wrote <- err
	}()
	// The whole request, body included, must come without the client
	// closing. The deadline only turns a hang into a failure.
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	want := part1 + part2
	rest := make([]byte, len(want)-len(got))
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatalf("after %q: %v", got, err)
	}
	if s := string(got) + string(rest); s != want {
		t.Fatalf("read %q, want %q", s, want)
	}
}

// replayConn serves raw to Read over and over, at most to raw's end per
// read: a kept-alive client's requests, one after the other.
type replayConn struct {
	net.Conn
	raw []byte
	off int
}

func (r *replayConn) Read(p []byte) (int, error) {
	n := copy(p, r.raw[r.off:])
	r.off = (r.off + n) % len(r.raw)
	return n, nil
}

// BenchmarkContentLengthConn is what the wrapper costs a request with a
// Content-Length and a small body (a claim's), read as net/http reads it.
func BenchmarkContentLengthConn(b *testing.B) {
	body := strings.Repeat("x", 200)
	raw := []byte("POST /claims HTTP/1.1\r\nHost: berth\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 200\r\n" +
		"Content-Type: application/json\r\nOpenstack-Api-Version: placement 1.39\r\nAccept-Encoding: gzip\r\n\r\n" + body)
	c := &contentLengthConn{Conn: &replayConn{raw: raw}}
	p := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		for got := 0; got < len(raw); {
			n, err := c.Read(p[:len(raw)-got])
			if err != nil || c.passthrough || c.ended {
				b.Fatalf("read %d: %v (passed through %v, ended %v)", got, err, c.passthrough, c.ended)
			}
			got += n
		}
	}
	if c.state != stateRequestLine || !c.validLength {
		b.Fatalf("state %d, valid length %v after a whole request", c.state, c.validLength)
	}
}
