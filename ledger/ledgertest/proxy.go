package ledgertest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Proxy relays TCP connections on loopback to a PostgreSQL server, so a
// test can cut a client off the database (a network partition, a server
// that went away) and restore it, without touching the server or its
// other clients.
type Proxy struct {
	ln      net.Listener
	network string
	addr    string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to the server of dbURL and returns it with the
// URL that reaches the same database through it. It stops when the test
// ends.
func NewProxy(t testing.TB, dbURL string) (*Proxy, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("ledgertest: proxy: %v", err)
	}
	p := &Proxy{network: "tcp", addr: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), conns: map[net.Conn]struct{}{}}
	if strings.HasPrefix(cfg.Host, "/") {
		p.network, p.addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatalf("ledgertest: proxy: %v", err)
	}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("ledgertest: proxy: %v", err)
	}
	q := u.Query()
	q.Del("host")
	q.Del("port")
	u.RawQuery = q.Encode()
	u.Host = p.ln.Addr().String()
	return p, u.String()
}

// Cut ends every relayed connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.relay(c)
	}
}

// relay copies between the client c and a new connection to the server.
func (p *Proxy) relay(c net.Conn) {
	defer p.wg.Done()
	s, err := net.Dial(p.network, p.addr)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, s) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// track records both ends of a relayed connection, or closes them if the
// proxy was cut meanwhile.
func (p *Proxy) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = c.Close()
		_ = s.Close()
		return false
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	return true
}

func (p *Proxy) close() {
	if err := p.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return
	}
	p.Cut()
	p.wg.Wait()
}
