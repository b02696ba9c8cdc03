package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/admission"
)

// What guards berthd's listeners against clients that would take it down
// or in without credentials: noauth2 stays on loopback, header blocks and
// open connections are bounded, and the metrics listener has the same
// timeouts as the API's.

// Defaults of the guard settings.
const (
	// DefaultMaxHeaderBytes bounds a request's header block: far above
	// any client's (a Keystone token is a few KiB), far below net/http's
	// 1 MiB, which 300 half-sent header blocks turned into 1.8 GB.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConnections bounds the API listener's open connections.
	// Each costs up to about twice MaxHeaderBytes while its header block
	// arrives, so 1024 of them about 140 MB at worst.
	DefaultMaxConnections = 1024
	// metricsReadTimeout bounds reading a whole request on the metrics
	// listener: scrapes and probes are bodiless GETs.
	metricsReadTimeout = 10 * time.Second
)

// checkNoAuthExposure refuses auth noauth2 on an address beyond loopback
// unless InsecureAllowNoAuthOnNetwork says so: noauth2 believes whatever
// identity a request claims, so anyone who can reach the port is admin.
func (c Config) checkNoAuthExposure() error {
	if c.Auth != httpapi.AuthNoAuth2 || c.InsecureAllowNoAuthOnNetwork || isLoopback(c.Listen) {
		return nil
	}
	return fmt.Errorf("refusing --auth noauth2 on %s: noauth2 trusts any X-Auth-Token, so anyone who can reach "+
		"this address would be admin; use --auth tokens (or another real authentication mode), listen on loopback, "+
		"or pass --insecure-allow-noauth-on-network", c.Listen)
}

// isLoopback reports whether a host:port listens on loopback only: a
// loopback IP or "localhost". An empty host, a wildcard or any other
// name is not.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true // Validate reports the address itself
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // an IPv6 zone
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validateGuards checks the guard settings.
func (c Config) validateGuards() []error {
	var errs []error
	if err := c.checkNoAuthExposure(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxHeaderBytes != 0 && (c.MaxHeaderBytes < 4<<10 || c.MaxHeaderBytes > 16<<20) {
		errs = append(errs, fmt.Errorf("max header bytes %d: want 4096 to 16777216 (0: the default)", c.MaxHeaderBytes))
	}
	if c.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("max connections %d: want 0 (no limit) or more", c.MaxConnections))
	}
	if c.AdmissionQueueTimeout < 0 {
		errs = append(errs, fmt.Errorf("admission queue timeout %v: want 0 or more", c.AdmissionQueueTimeout))
	}
	return errs
}

// apiServer is the http.Server of the API listener.
func apiServer(cfg Config, h http.Handler, log *slog.Logger) *http.Server {
	if cfg.MaxHeaderBytes == 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.HTTPReadHeaderTimeout,
		ReadTimeout:       cfg.HTTPReadTimeout,
		WriteTimeout:      cfg.HTTPWriteTimeout,
		IdleTimeout:       cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// apiListener wraps the API listener: at most MaxConnections open
// connections (more wait in the kernel's backlog until one closes), and
// Content-Length checked as Placement does (admission.WrapListener).
func apiListener(cfg Config, ln net.Listener) net.Listener {
	if cfg.MaxConnections > 0 {
		ln = limitListener(ln, cfg.MaxConnections)
	}
	return admission.WrapListener(ln)
}

// metricsServer is the http.Server of the metrics listener: the API's
// header and idle bounds, and a read timeout of its own.
func metricsServer(cfg Config, h http.Handler, log *slog.Logger) *http.Server {
	srv := apiServer(cfg, h, log)
	srv.ReadTimeout = metricsReadTimeout
	if cfg.HTTPReadTimeout > 0 {
		srv.ReadTimeout = min(srv.ReadTimeout, cfg.HTTPReadTimeout)
	}
	return srv
}

// limitListener accepts at most n connections at once: Accept waits
// while n are open.
func limitListener(ln net.Listener, n int) net.Listener {
	return &limitedListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
