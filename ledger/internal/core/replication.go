package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file holds what the ledger does about replication and failover:
// commits the synchronous standby did not confirm, and the primary of a
// multi-host database URL.

// Synchronous replication and cancelled commits.
//
// With synchronous replication, COMMIT writes the commit record, then
// waits for the synchronous standby. If that wait is cancelled (a cancel
// request, pg_cancel_backend, a shutdown; not statement_timeout, which
// PostgreSQL disables before committing), PostgreSQL keeps
// the transaction committed locally and answers COMMIT with success and
// only a WARNING ("canceling wait for synchronous replication ...
// already committed locally"): the write may be lost if this primary is.
// Berth must not answer 200 for it. Every connection's notices go
// through OnNotice, which marks the connection; the code that commits
// (TxBeginner.runTx under WithTx, sendClaimPipeline) asks replicated afterwards and turns a marked
// commit into fault.ErrUnavailable (503 with Retry-After): the client retries,
// and the retry converges once the standby confirms (ClaimRequestConfirmed).
//
// A deadline (the request's context) does not cancel a COMMIT on the
// server: pgx closes the connection instead, and the backend goes on
// waiting for the standby; the caller sees a broken connection, an
// unknown outcome, settled the same way.

// Unsynced marks connections that received the warning.
type Unsynced struct{ m sync.Map } // *pgconn.PgConn -> struct{}

// OnNotice is every connection's notice handler.
func (u *Unsynced) OnNotice(pc *pgconn.PgConn, n *pgconn.Notice) {
	if n.Severity == "WARNING" && strings.Contains(n.Message, "wait for synchronous replication") {
		u.m.Store(pc, struct{}{})
	}
}

// ErrNotReplicated is a commit the synchronous standby did not confirm.
var ErrNotReplicated = &fault.Error{Kind: fault.ErrUnavailable, Code: fault.CodeDatabaseUnavailable,
	Msg: "The write committed on the primary, but its synchronous standby did not confirm it; retry the request later."}

// replicated reports, for a commit that just succeeded on pc, nil, or
// ErrNotReplicated if PostgreSQL warned that it cancelled the wait for
// the synchronous standby. It clears pc's mark.
func (u *Unsynced) Replicated(pc *pgconn.PgConn) error {
	if _, marked := u.m.LoadAndDelete(pc); marked {
		return ErrNotReplicated
	}
	return nil
}

// forget drops pc's mark: before a transaction starts on it (a commit
// outside WithTx and sendClaimPipeline, such as a change notification's, may
// have left one) and when its connection closes.
func (u *Unsynced) Forget(pc *pgconn.PgConn) { u.m.Delete(pc) }

// Reads that outlive a failover.
//
// A commit becomes visible on the primary once the synchronous standby
// has it, unless its wait for the standby ended otherwise: cancelled (the
// WARNING above), ended with its backend (pg_terminate_backend, a
// shutdown) or abandoned when the postmaster died; a killed postmaster's
// backends go on serving the queries their connections keep sending
// until they next wait for one. The commit is then visible on this
// primary alone, and a failover to the standby loses it. A read that
// showed it answered a state that never was, for every client after the
// failover: TestHistoryFailover's checker found one (issue 43), a
// provider list answering a generation that a traits write whose answer
// was lost had made on the old primary alone, while the new primary
// went on from the generation before.
//
// So every read that answers a client confirms what it read: SQLConfirm
// ends its transaction (the same implicit transaction for a statement
// outside one: db.go; the snapshot's loads; WithTx's transactions that
// changed no provider, reads among them), and if a commit it may
// have seen is not yet on the synchronous standby, it sets
// ledger_barrier (migration 0012), which gives the transaction an id
// and WAL, so that its COMMIT waits for the standby to have everything up
// to it, whatever the read saw included. That wait ends as any commit's
// does: confirmed, or with the WARNING (ErrNotReplicated, a 503) or a
// lost connection (a 503): never an answer the standby could lose. A
// read's snapshot was taken before its COMMIT, on the same server, so
// no failover can come between them unnoticed.
//
// The wait is skipped when it cannot matter: no synchronous standby is
// configured (synchronous_standby_names empty: a single server, whose
// commits are on its disk before they are visible, or Patroni's
// asynchronous fallback, under which it promotes no one), or the
// synchronous standbys have flushed all the WAL this primary has
// (pg_stat_replication; every commit a read saw was flushed here before
// it became visible, synchronous_commit being on). Reading the standbys'
// positions takes pg_read_all_stats (or a superuser); without it they
// read as NULL and every read waits.

// SQLConfirm is the statement that ends a read's transaction; see
// "Reads that outlive a failover". CASE evaluates its conditions in
// order, so a server with no synchronous standby reads nothing more.
// It reads the WAL senders' function rather than the pg_stat_replication
// view, whose joins cost more to plan than the statement to run.
const SQLConfirm = `
SELECT CASE
	WHEN current_setting('synchronous_standby_names') = '' THEN NULL
	WHEN pg_current_xact_id_if_assigned() IS NOT NULL THEN NULL -- it wrote: its COMMIT waits
	WHEN COALESCE((SELECT min(flush_lsn) FROM pg_stat_get_wal_senders() WHERE sync_state IN ('sync', 'quorum'))
	              >= pg_current_wal_flush_lsn(), false) THEN NULL
	ELSE setval('ledger_barrier', 1)
END`

// confirm runs SQLConfirm on q as a prepared statement (pgx's Exec would
// send a statement without arguments by the simple protocol, planned at
// every execution).
func confirm(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	var set *int64
	return q.QueryRow(ctx, SQLConfirm).Scan(&set)
}

// RolledBack reports whether err, the failure of a write, proves that
// nothing of it was committed: PostgreSQL itself answered with an error
// (a read-only primary, a server shutting down, a statement refused), so
// its transaction rolled back. Any other failure of a write that reached
// the server (a connection that broke, a deadline that cut it, a commit
// whose synchronous-replication wait was cancelled) leaves the outcome
// to be learnt.
func RolledBack(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// Failover of a multi-host database URL.
//
// With a URL naming several hosts (host=a,b with
// target_session_attrs=read-write, as for a Patroni cluster), pgx tries
// them in order at every new connection and keeps the first that
// accepts writes. After a failover from a to b, every new connection
// would first try the dead a: a refused connection, or a wait of
// connect_timeout for a machine that is gone, per connection. The
// PrimaryTracker remembers which host the last connection landed on and
// tries it first (BeforeConnect), and notices when connections land on
// a different host than before (AfterConnect): that is a switch of the
// primary, logged once at WARN and counted in PoolStats.PrimarySwitches
// (the berth_db_primary_switches_total metric).

// PrimaryTracker is the pool's memory of the current primary.
type PrimaryTracker struct {
	Log      *slog.Logger
	mu       sync.Mutex
	host     string // where the last connection landed; "" before the first
	port     uint16
	switches atomic.Int64
}

// BeforeConnect puts the host of the last connection first in cfg's
// list (cfg is this connection's own copy), so a new connection goes
// straight to the current primary. The others stay, in their order, for
// when that one fails.
func (p *PrimaryTracker) BeforeConnect(_ context.Context, cfg *pgx.ConnConfig) error {
	p.mu.Lock()
	host, port := p.host, p.port
	p.mu.Unlock()
	if host == "" || len(cfg.Fallbacks) == 0 {
		return nil
	}
	// Every entry of that host moves up, in its order: with sslmode
	// prefer, each host is listed twice (with TLS, then without).
	all := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	first := make([]*pgconn.FallbackConfig, 0, len(all))
	var rest []*pgconn.FallbackConfig
	for _, fb := range all {
		if fb.Host == host && fb.Port == port {
			first = append(first, fb)
		} else {
			rest = append(rest, fb)
		}
	}
	if len(first) == 0 || all[0] == first[0] && len(first) == 1 {
		return nil
	}
	all = append(first, rest...)
	cfg.Host, cfg.Port, cfg.TLSConfig = all[0].Host, all[0].Port, all[0].TLSConfig
	cfg.Fallbacks = all[1:]
	return nil
}

// Switches counts the times new connections landed on another host than
// before: failovers and switchovers seen.
func (p *PrimaryTracker) Switches() int64 { return p.switches.Load() }

// AfterConnect records where conn landed, and logs and counts a switch.
func (p *PrimaryTracker) AfterConnect(_ context.Context, conn *pgx.Conn) error {
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
		p.Log.Warn("ledger: the database primary changed; new connections go to the new one",
			"from", net.JoinHostPort(old, strconv.Itoa(int(oldPort))), "to", net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	return nil
}

// ErrNoPrimary is a database URL whose hosts answer, but none as a
// primary: every one is a standby (or read-only).
var ErrNoPrimary = errors.New("no primary")

// CheckPrimary explains a failure to reach a writable database at
// databaseURL: when every host of the URL that answers is a standby, it
// returns one clear error naming them (wrapping ErrNoPrimary and
// cause); otherwise cause. It asks each host alone, without
// target_session_attrs, with a short timeout.
func CheckPrimary(ctx context.Context, databaseURL string, connectTimeout time.Duration, cause error) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return cause
	}
	hosts := []*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}
	hosts = append(hosts, cfg.Fallbacks...)
	var standbys []string
	for _, h := range hosts {
		one := cfg.Copy()
		one.Host, one.Port, one.TLSConfig, one.Fallbacks = h.Host, h.Port, h.TLSConfig, nil
		one.ValidateConnect = nil
		if one.ConnectTimeout == 0 || one.ConnectTimeout > connectTimeout {
			one.ConnectTimeout = connectTimeout
		}
		cctx, cancel := context.WithTimeout(ctx, 2*connectTimeout)
		conn, err := pgx.ConnectConfig(cctx, one)
		if err != nil {
			cancel()
			continue // out of reach: not a standby we know of
		}
		var recovery, readOnly bool
		err = conn.QueryRow(cctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only')::boolean`).
			Scan(&recovery, &readOnly)
		_ = conn.Close(cctx)
		cancel()
		if err != nil {
			continue
		}
		if !recovery && !readOnly {
			return cause // a primary answers: the failure was something else
		}
		standbys = append(standbys, net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))))
	}
	if len(standbys) == 0 {
		return cause
	}
	return fmt.Errorf("%w: the database URL names only standbys or read-only servers (%s); "+
		"name the primary, or every node of the cluster with target_session_attrs=read-write (%w)",
		ErrNoPrimary, strings.Join(standbys, ", "), cause)
}
