package ledger

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Failover of a multi-host database URL.
//
// With a URL naming several hosts (host=a,b with
// target_session_attrs=read-write, as for a Patroni cluster), pgx tries
// them in order at every new connection and keeps the first that
// accepts writes. After a failover from a to b, every new connection
// would first try the dead a: a refused connection, or a wait of
// connect_timeout for a machine that is gone, per connection. The
// primaryTracker remembers which host the last connection landed on and
// tries it first (BeforeConnect), and notices when connections land on
// a different host than before (AfterConnect): that is a switch of the
// primary, logged once at WARN and counted in PoolStats.PrimarySwitches
// (the berth_db_primary_switches_total metric).

// primaryTracker is the pool's memory of the current primary.
type primaryTracker struct {
	log      *slog.Logger
	mu       sync.Mutex
	host     string // where the last connection landed; "" before the first
	port     uint16
	switches atomic.Int64
}

// beforeConnect puts the host of the last connection first in cfg's
// list (cfg is this connection's own copy), so a new connection goes
// straight to the current primary. The others stay, in their order, for
// when that one fails.
func (p *primaryTracker) beforeConnect(_ context.Context, cfg *pgx.ConnConfig) error {
	p.mu.Lock()
	host, port := p.host, p.port
	p.mu.Unlock()
	if host == "" || len(cfg.Fallbacks) == 0 || (cfg.Host == host && cfg.Port == port) {
		return nil
	}
	for i, fb := range cfg.Fallbacks {
		if fb.Host == host && fb.Port == port {
			first := &pgconn.FallbackConfig{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}
			rest := make([]*pgconn.FallbackConfig, 0, len(cfg.Fallbacks))
			rest = append(rest, first)
			rest = append(rest, cfg.Fallbacks[:i]...)
			rest = append(rest, cfg.Fallbacks[i+1:]...)
			cfg.Host, cfg.Port, cfg.TLSConfig = fb.Host, fb.Port, fb.TLSConfig
			cfg.Fallbacks = rest
			return nil
		}
	}
	return nil
}

// afterConnect records where conn landed, and logs and counts a switch.
func (p *primaryTracker) afterConnect(_ context.Context, conn *pgx.Conn) error {
	pc := conn.PgConn()
	host, port := pc.Conn().RemoteAddr().String(), uint16(0)
	if h, ps, err := net.SplitHostPort(host); err == nil {
		if n, err := strconv.ParseUint(ps, 10, 16); err == nil {
			host, port = h, uint16(n)
		}
	}
	if cfgHost := conn.Config().Host; len(conn.Config().Fallbacks) == 0 && cfgHost != "" {
		// One host: nothing can switch (a unix socket has no address).
		return nil
	}
	p.mu.Lock()
	old, oldPort := p.host, p.port
	changed := old != "" && (old != host || oldPort != port)
	p.host, p.port = host, port
	p.mu.Unlock()
	if changed {
		p.switches.Add(1)
		p.log.Warn("ledger: the database primary changed; new connections go to the new one",
			"from", net.JoinHostPort(old, strconv.Itoa(int(oldPort))), "to", net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	return nil
}
