package load

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// keepAliveTransport is the load tool's own http.RoundTripper for HTTP/1.1
// over plain TCP with kept-alive connections.
//
// Why it exists: the load tool runs on the machine whose server it
// measures, so every cycle it spends is taken from berthd and PostgreSQL.
// net/http's Transport hands each request to two goroutines of its
// connection (writeLoop and readLoop) through channels and selects, which
// costs scheduler work and futex wake-ups per request; seeding on two
// cores, that made the load tool about a quarter of the machine. Here the
// calling goroutine does everything itself: it takes an idle connection
// (or dials one), writes the request with (*http.Request).Write, flushes,
// and reads the answer with http.ReadResponse on the connection's own
// bufio.Reader. No goroutine runs per connection or per request.
//
// What it sends is what http.Transport sends for the same request (the
// request's own header plus Host, User-Agent, Content-Length and, as
// http.Transport does, Accept-Encoding: gzip, a gzip answer being
// decompressed transparently). It speaks only http:// (other schemes go to
// a standard http.Transport) and never HTTP/2.
//
// The contract:
//   - A connection goes back to the idle pool only once its answer's body
//     was read to EOF (io.ReadAll, or Close after that). A body closed
//     before its end, an answer with "Connection: close" (or a body
//     delimited by the connection's end), or any error closes the
//     connection instead. At most maxIdle connections per host wait idle;
//     one idle for longer than idleTimeout is closed when next found.
//   - The request's context bounds everything, the body's reading
//     included: when it is cancelled or its deadline passes, the
//     connection's deadline is set in the past, which wakes the blocked
//     read or write; the error is then the context's error and the
//     connection is closed. The client's timeout reaches it as a context
//     deadline (Client.Do sets it), not through http.Client.Timeout, which
//     would start a goroutine and a timer per request for a RoundTripper
//     it does not know.
//   - A request on a reused connection that the server had closed is sent
//     again once, on a new connection, when it is safe: when writing it
//     failed before any byte reached the socket, or when the connection
//     ended before any byte of the answer and the method is idempotent
//     (RFC 9110: GET, HEAD, OPTIONS, TRACE, PUT, DELETE). A connection
//     idle for longer than staleCheckAfter is probed (a non-blocking peek,
//     one system call) before it is reused, so that a server's idle
//     timeout does not make a POST fail: http.Transport learns of such a
//     close from its readLoop goroutine, which this transport does not
//     have. Anything else is returned as an error.
type keepAliveTransport struct {
	dialer      net.Dialer
	maxIdle     int           // idle connections kept per host
	idleTimeout time.Duration // an idle connection older than this is closed, not reused
	staleAfter  time.Duration // an idle connection older than this is probed before reuse
	other       http.RoundTripper
	dials       atomic.Int64 // connections dialled

	mu   sync.Mutex
	idle map[string][]*persistConn // by host:port, most recently used last
}

// staleCheckAfter is how long a connection may have been idle and still be
// reused without the probe. Under load a worker's connection is idle for
// microseconds between answer and request, and the probe's system call
// was 2.5% of the tool's CPU; a server's idle timeout is seconds, and a
// server that restarts fails the requests in flight anyway.
const staleCheckAfter = 100 * time.Millisecond

func newKeepAliveTransport(maxIdle int, other http.RoundTripper) *keepAliveTransport {
	if maxIdle < 1 {
		maxIdle = 1
	}
	return &keepAliveTransport{
		dialer:      net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     maxIdle,
		idleTimeout: 90 * time.Second,
		staleAfter:  staleCheckAfter,
		other:       other,
		idle:        map[string][]*persistConn{},
	}
}

// persistConn is one TCP connection with its buffers. It is owned by
// exactly one request at a time, or by the idle pool.
type persistConn struct {
	addr    string // the pool's key: host:port as the URL gave it
	nc      net.Conn
	br      *bufio.Reader
	bw      *bufio.Writer
	written int64 // bytes that reached the socket (see countWriter)
	reused  bool  // served a request before the current one
	idleAt  time.Time
}

// countWriter counts the bytes written to the connection, so that a failed
// write can tell whether the server may have seen any of the request.
type countWriter struct{ pc *persistConn }

func (w countWriter) Write(p []byte) (int, error) {
	n, err := w.pc.nc.Write(p)
	w.pc.written += int64(n)
	return n, err
}

// RoundTrip implements http.RoundTripper.
func (t *keepAliveTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.other.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeReqBody(req)
		return nil, err
	}
	addr := canonicalAddr(req.URL)
	if addr == "" {
		closeReqBody(req)
		return nil, fmt.Errorf("load: no host in request URL %q", req.URL)
	}
	gzipAsked := false
	if req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == "" && req.Method != http.MethodHead {
		// As http.Transport does (unless DisableCompression): ask for gzip
		// and decompress, so the server sees the same request.
		r2 := *req
		r2.Header = req.Header.Clone()
		r2.Header.Set("Accept-Encoding", "gzip")
		req, gzipAsked = &r2, true
	}
	for attempt := 0; ; attempt++ {
		// A retry dials: the pool's other connections may be as stale as
		// the one that failed.
		pc, err := t.conn(ctx, addr, attempt == 0)
		if err != nil {
			closeReqBody(req)
			return nil, err
		}
		resp, retry, err := t.exchange(ctx, pc, req)
		if err == nil {
			if gzipAsked && resp.Header.Get("Content-Encoding") == "gzip" && resp.Body != http.NoBody {
				resp.Header.Del("Content-Encoding")
				resp.Header.Del("Content-Length")
				resp.ContentLength = -1
				resp.Uncompressed = true
				resp.Body = &gzipBody{src: resp.Body}
			}
			return resp, nil
		}
		if !retry || attempt > 0 || ctx.Err() != nil {
			closeReqBody(req)
			return nil, err
		}
		// The request goes again on a new connection: it needs a fresh body.
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			r2 := *req
			r2.Body = body
			req = &r2
		}
	}
}

// exchange sends req on pc and reads the answer's header. On success the
// response's body owns pc (and the context's watch); on failure pc is
// closed and retry says whether sending req again on a new connection is
// safe (see keepAliveTransport).
func (t *keepAliveTransport) exchange(ctx context.Context, pc *persistConn, req *http.Request) (resp *http.Response, retry bool, err error) {
	// The watch: cancellation or the deadline unblocks the connection's
	// I/O by moving its deadline into the past.
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = pc.nc.SetDeadline(aLongTimeAgo) })
	}
	fail := func(e error) (*http.Response, bool, error) {
		stop()
		_ = pc.nc.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, false, cerr
		}
		return nil, retry, e
	}

	before := pc.written
	if err := req.Write(pc.bw); err != nil {
		// A body that failed to read is the caller's error, never retried;
		// a failed write is retried only if nothing reached the socket.
		retry = pc.reused && pc.written == before && isConnError(err)
		return fail(err)
	}
	if err := pc.bw.Flush(); err != nil {
		retry = pc.reused && pc.written == before
		return fail(err)
	}
	// Peek first so that a connection the server closed (EOF or reset
	// before any byte of the answer) is told apart from a broken answer.
	if _, err := pc.br.Peek(1); err != nil {
		retry = pc.reused && idempotent(req.Method)
		return fail(err)
	}
	for {
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			return fail(err)
		}
		// 1xx answers (other than 101, which we never ask for) precede
		// the real one.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		break
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("load: unexpected 101 Switching Protocols"))
	}
	b := &connBody{t: t, pc: pc, src: resp.Body, stop: stop, ctx: ctx, keep: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		b.finish(b.keep)
		return resp, false, nil
	}
	resp.Body = b
	return resp, false, nil
}

// connBody is a response body that returns its connection to the pool once
// read to its end, and closes it otherwise.
type connBody struct {
	t    *keepAliveTransport
	pc   *persistConn // nil once given back or closed
	src  io.ReadCloser
	stop func() bool // ends the context's watch; false if it already fired
	ctx  context.Context
	keep bool // the connection may be reused after the body
	err  error
}

func (b *connBody) Read(p []byte) (int, error) {
	if b.pc == nil {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n, err := b.src.Read(p)
	switch {
	case err == io.EOF:
		b.finish(b.keep)
	case err != nil:
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
		b.err = err
		b.finish(false)
	}
	return n, err
}

// Close gives the connection back if the body was read to its end and
// closes it otherwise (reading the rest could wait on a slow server).
func (b *connBody) Close() error {
	if b.pc != nil {
		b.finish(false)
	}
	if b.err == nil {
		b.err = http.ErrBodyReadAfterClose
	}
	return nil
}

// finish ends the body's hold on its connection: back to the pool when
// keep is set and the context's watch had not fired, closed otherwise.
func (b *connBody) finish(keep bool) {
	pc := b.pc
	b.pc = nil
	if !b.stop() {
		keep = false // the watch fired: the connection's deadline is in the past
	}
	if keep {
		b.t.put(pc)
	} else {
		_ = pc.nc.Close()
	}
}

// conn returns an idle connection to addr when pooled is set and there is
// one, or dials one.
func (t *keepAliveTransport) conn(ctx context.Context, addr string, pooled bool) (*persistConn, error) {
	for pooled {
		t.mu.Lock()
		list := t.idle[addr]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		pc := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		t.mu.Unlock()
		idleFor := time.Since(pc.idleAt)
		if idleFor > t.idleTimeout || (idleFor >= t.staleAfter && !connAlive(pc)) {
			_ = pc.nc.Close()
			continue
		}
		pc.reused = true
		return pc, nil
	}
	t.dials.Add(1)
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &persistConn{addr: addr, nc: nc}
	pc.br = bufio.NewReaderSize(nc, 16<<10)
	pc.bw = bufio.NewWriterSize(countWriter{pc}, 8<<10)
	return pc, nil
}

// put gives pc back to the idle pool, or closes it when the pool is full.
func (t *keepAliveTransport) put(pc *persistConn) {
	if pc.br.Buffered() > 0 {
		// Bytes after the answer's end: the server is confused.
		_ = pc.nc.Close()
		return
	}
	pc.idleAt = time.Now()
	t.mu.Lock()
	if len(t.idle[pc.addr]) >= t.maxIdle {
		t.mu.Unlock()
		_ = pc.nc.Close()
		return
	}
	t.idle[pc.addr] = append(t.idle[pc.addr], pc)
	t.mu.Unlock()
}

// CloseIdleConnections closes the idle connections; connections in use are
// closed or pooled when their answers end. http.Client's method of the same
// name calls it.
func (t *keepAliveTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*persistConn{}
	t.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			_ = pc.nc.Close()
		}
	}
	if ci, ok := t.other.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// idleCount is the number of idle connections (for tests).
func (t *keepAliveTransport) idleCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, list := range t.idle {
		n += len(list)
	}
	return n
}

// gzipBody decompresses a gzip answer, lazily, as http.Transport does.
// Reading it to its end reads the connection's body to its end (gzip's
// multistream mode reads until the source's EOF), which gives the
// connection back.
type gzipBody struct {
	src io.ReadCloser
	zr  *gzip.Reader
	err error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		if g.zr, g.err = gzip.NewReader(g.src); g.err != nil {
			return 0, g.err
		}
	}
	return g.zr.Read(p)
}

func (g *gzipBody) Close() error { return g.src.Close() }

// aLongTimeAgo is a deadline in the past: setting it makes blocked I/O on
// a connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

// canonicalAddr is u's host:port, port 80 when none is given.
func canonicalAddr(u *url.URL) string {
	host := u.Hostname()
	if host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}

// idempotent reports whether a request with method may be sent twice
// (RFC 9110, section 9.2.2).
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// isConnError reports whether err from (*http.Request).Write came from the
// connection rather than from reading the request's body.
func isConnError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || errors.As(err, &ne) || errors.Is(err, io.ErrClosedPipe)
}

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
