package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// dropProxy is a loopback TCP proxy in front of PostgreSQL that can lose
// the answer to a committed write: while armed, when a connection's
// client runs a statement that records a claim (its text mentions
// claim_requests) and the server then reports the transaction over
// (ReadyForQuery, idle: committed), the proxy cuts both sides instead
// of forwarding the server's answer. The write is committed; berthd
// sees a connection broken during its COMMIT.
type dropProxy struct {
	ln      net.Listener
	network string // of the server: "tcp" or "unix"
	addr    string
	// armed is how many more answers to drop.
	armed   atomic.Int64
	dropped atomic.Int64
	wg      sync.WaitGroup
}

// startDropProxy listens on 127.0.0.1 in front of the server of dbURL (a
// postgres:// URL, TCP or unix socket as ledgertest gives) and returns
// the proxy and dbURL rewritten to go through it.
func startDropProxy(dbURL string) (*dropProxy, string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, "", err
	}
	p := &dropProxy{network: "tcp", addr: u.Host}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	q := u.Query()
	if qp := q.Get("port"); qp != "" {
		port = qp
		q.Del("port")
	}
	if h := q.Get("host"); strings.HasPrefix(h, "/") {
		p.network, p.addr = "unix", h+"/.s.PGSQL."+port
		q.Del("host")
	} else if u.Hostname() == "" {
		p.network, p.addr = "unix", "/var/run/postgresql/.s.PGSQL."+port
	}
	if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, "", err
	}
	q.Set("sslmode", "disable")
	u.Host = p.ln.Addr().String()
	u.RawQuery = q.Encode()
	p.wg.Add(1)
	go p.accept()
	return p, u.String(), nil
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial(p.network, p.addr)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.serve(c, s) }()
	}
}

// Close stops listening and cuts every connection.
func (p *dropProxy) Close() {
	p.ln.Close()
}

// recordSQL is in every statement that records a claim (and in no read).
const recordSQL = "INSERT INTO claim_requests"

// pconn is one proxied connection's state.
type pconn struct {
	mu sync.Mutex
	// statements maps prepared statement names to their text.
	statements map[string]string
	// marked is set from a Bind (or simple Query) of a claim-recording
	// statement until the transaction ends.
	marked bool
}

func (p *dropProxy) serve(client, server net.Conn) {
	st := &pconn{statements: map[string]string{}}
	closeBoth := func() { client.Close(); server.Close() }
	defer closeBoth()
	go func() {
		defer closeBoth()
		p.clientToServer(client, server, st)
	}()
	p.serverToClient(server, client, st)
}

// readMessage reads one protocol message: type byte (none for the
// startup message) and body.
func readMessage(r io.Reader, typed bool) (byte, []byte, error) {
	var hdr [5]byte
	var typ byte
	if typed {
		if _, err := io.ReadFull(r, hdr[:5]); err != nil {
			return 0, nil, err
		}
		typ = hdr[0]
	} else if _, err := io.ReadFull(r, hdr[1:5]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:5])) - 4
	if n < 0 || n > 1<<30 {
		return 0, nil, errors.New("proxy: bad message length")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return typ, body, nil
}

func writeMessage(w io.Writer, typ byte, typed bool, body []byte) error {
	var buf bytes.Buffer
	if typed {
		buf.WriteByte(typ)
	}
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(body)+4))
	buf.Write(l[:])
	buf.Write(body)
	_, err := w.Write(buf.Bytes())
	return err
}

// cstrings splits b's leading NUL-terminated strings.
func cstrings(b []byte, n int) []string {
	var out []string
	for range n {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			break
		}
		out = append(out, string(b[:i]))
		b = b[i+1:]
	}
	return out
}

func (p *dropProxy) clientToServer(client, server net.Conn, st *pconn) {
	for typed := false; ; typed = true { // every message after the startup one is typed
		typ, body, err := readMessage(client, typed)
		if err != nil {
			return
		}
		switch typ {
		case 'P': // Parse: name, query
			if s := cstrings(body, 2); len(s) == 2 {
				st.mu.Lock()
				st.statements[s[0]] = s[1]
				if s[0] == "" && strings.Contains(s[1], recordSQL) {
					st.marked = true
				}
				st.mu.Unlock()
			}
		case 'B': // Bind: portal, statement
			if s := cstrings(body, 2); len(s) == 2 {
				st.mu.Lock()
				if strings.Contains(st.statements[s[1]], recordSQL) {
					st.marked = true
				}
				st.mu.Unlock()
			}
		case 'Q':
			if strings.Contains(string(body), recordSQL) {
				st.mu.Lock()
				st.marked = true
				st.mu.Unlock()
			}
		}
		if err := writeMessage(server, typ, typed, body); err != nil {
			return
		}
	}
}

func (p *dropProxy) serverToClient(server, client net.Conn, st *pconn) {
	// The answer to a marked transaction is held back until it ends, so
	// a dropped one reaches the client not at all.
	var held bytes.Buffer
	failed := false
	for {
		typ, body, err := readMessage(server, true)
		if err != nil {
			return
		}
		st.mu.Lock()
		marked := st.marked
		if typ == 'Z' && len(body) == 1 && body[0] == 'I' {
			st.marked = false
		}
		st.mu.Unlock()
		if !marked {
			if err := writeMessage(client, typ, true, body); err != nil {
				return
			}
			continue
		}
		_ = writeMessage(&held, typ, true, body)
		if typ == 'E' {
			failed = true // rolled back: nothing to drop
		}
		if typ != 'Z' {
			continue
		}
		if len(body) == 1 && body[0] == 'I' && !failed {
			if p.armed.Add(-1) >= 0 {
				// Committed; the client never learns it.
				p.dropped.Add(1)
				return
			}
			p.armed.Add(1)
		}
		if len(body) == 1 && body[0] == 'I' {
			failed = false
		}
		// Inside the transaction (the client waits for this answer to
		// send COMMIT), or not dropped: pass it on.
		if _, err := client.Write(held.Bytes()); err != nil {
			return
		}
		held.Reset()
	}
}
