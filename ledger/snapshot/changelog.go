package snapshot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The change log: how a snapshot catches up with the database, whichever
// process wrote.
//
// Every transaction that changes what a snapshot holds of providers
// writes, in that transaction, a row of ledger_changes: its transaction
// id (xid8) and the ids of the providers it changed, or NULL for "any"
// (migrations/0008_ledger_changes.up.sql: statement-level triggers write
// them, so no write path, Berth's or an operator's, can forget one, and
// none pays a round trip for it; a claim's write statement, a batch's or
// a lone claim's, writes its own, and its triggers do not run:
// migrations/0017_claim_change_log.up.sql and
// 0019_claim_writes_skip_triggers.up.sql).
// A transaction may write several rows; their providers together are
// what it changed.
//
// A snapshot carries W, the PostgreSQL snapshot (pg_current_snapshot())
// it has caught up to, and the timeline W was taken on. To catch up, one
// statement (sqlCatchUp) returns its own snapshot N and every change row
// whose xid is not visible in W: xid >= xmax(W), or among W's in-progress
// xids. Those rows are exactly the commits visible in N that W did not
// see: no sequence gaps to reason about, since a transaction's row
// becomes visible exactly when its commit does. Their providers are
// marked dirty and W := N; the next reader reloads the dirty providers
// (cache.go), in a transaction that starts after N was taken, so
// it sees them at least as N did.
//
// The invariant, under Cache.mu: every change visible in W is in
// cur, or its providers are dirty (or all is set). A catch-up keeps it
// (it marks what W did not see, then moves W); a partial reload keeps it
// (a provider leaves dirty only for a record read after its mark); a full
// load sets W to the snapshot its own transaction read, whose every
// change it holds.
//
// The process's own writes: a claim's write is applied to cur at commit
// (Cache.applyOwnWrites, read-your-writes), or its providers
// marked dirty if it cannot be applied; either way its change is in cur
// or dirty before the write returns. Its transaction id is then recorded
// in own, and a catch-up that meets that id skips it: what it changed is
// already accounted for. W itself is never moved by an own write: a write
// applied out of order (its commit visible before an earlier foreign
// commit the process has not read) cannot make W skip the foreign one,
// which is still not visible in W and is found by the next catch-up.
//
// Failover: xids are only comparable within one timeline (a promoted
// standby may hand out again an xid that the old primary gave a
// transaction it never replicated), so W remembers its timeline and a
// catch-up that finds another reloads everything.
//
// Trimming: rows older than Config.ChangeLogRetention are deleted by one
// process at a time (an advisory lock), which raises the horizon, the
// highest xid trimmed. A follower whose W may need a trimmed row (xmin(W)
// <= horizon) reloads everything instead.
//
// A reader of a Placement route catches up before it answers (Cache.Snapshot):
// it is served by a catch-up that started after it began (catchUps), so
// every write answered before it began is visible. Concurrent readers
// share one catch-up. Notifications (notifier.go) are a hint only: one
// wakes a catch-up in the background, which keeps snapshots warm.

// pgSnapshot is a PostgreSQL snapshot in pg_snapshot's terms, and the
// timeline it was taken on.
type pgSnapshot struct {
	xmin, xmax uint64
	xip        []uint64 // in progress when taken
	timeline   string
}

// parsePgSnapshot reads pg_snapshot's text form, xmin:xmax:xip,xip,...
func parsePgSnapshot(text, timeline string) (*pgSnapshot, error) {
	parts := strings.Split(text, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("ledger: malformed snapshot %q", text)
	}
	s := &pgSnapshot{timeline: timeline}
	var err error
	if s.xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return nil, fmt.Errorf("ledger: malformed snapshot %q", text)
	}
	if s.xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return nil, fmt.Errorf("ledger: malformed snapshot %q", text)
	}
	if parts[2] != "" {
		for _, f := range strings.Split(parts[2], ",") {
			x, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("ledger: malformed snapshot %q", text)
			}
			s.xip = append(s.xip, x)
		}
	}
	return s, nil
}

// String is pg_snapshot's text form, as sqlCatchUp takes it.
func (s *pgSnapshot) String() string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(s.xmin, 10))
	b.WriteByte(':')
	b.WriteString(strconv.FormatUint(s.xmax, 10))
	b.WriteByte(':')
	for i, x := range s.xip {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(x, 10))
	}
	return b.String()
}

// visible reports whether a transaction that committed with id xid is
// visible in s (pg_visible_in_snapshot).
func (s *pgSnapshot) visible(xid uint64) bool {
	if xid < s.xmin {
		return true
	}
	if xid >= s.xmax {
		return false
	}
	for _, x := range s.xip {
		if x == xid {
			return false
		}
	}
	return true
}

// sqlTimeline is the timeline the server writes WAL on: a promoted
// standby starts a new one. It fails on a standby, which has none to
// write on.
const sqlTimeline = `substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)`

// sqlCatchUp answers, for W ($1), the statement's own snapshot N, its
// timeline, the trim horizon, and one row per change row visible in N and
// not in W (NULL xid if none): the index on xid finds those past xmax(W)
// and W's in-progress ones, whatever the rows below them.
const sqlCatchUp = `
SELECT pg_current_snapshot()::text, ` + sqlTimeline + `,
       (SELECT horizon::text FROM ledger_changes_horizon), c.xid::text, c.providers
FROM (SELECT) one LEFT JOIN LATERAL (
	SELECT xid, providers FROM ledger_changes
	WHERE xid >= pg_snapshot_xmax($1::pg_snapshot) OR xid = ANY (ARRAY(SELECT pg_snapshot_xip($1::pg_snapshot)))
) c ON true`

// sqlSnapshotNow is the snapshot of the transaction it runs in and its
// timeline: a full load reads it in its own transaction.
const sqlSnapshotNow = `SELECT pg_current_snapshot()::text, ` + sqlTimeline

// change is one row of the change log.
type change struct {
	xid       uint64
	providers []int64 // nil: any
}

// sqlGenericPlan makes the prepared statements after it in its implicit
// transaction run their generic plan. Unlike fastPlanSQL it leaves
// sequential scans on: the one-row horizon table is read by one, and
// with them off its cost passes the threshold of JIT compilation.
const sqlGenericPlan = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// readCatchUp runs sqlCatchUp for w, after sqlGenericPlan in the same
// pipeline (one round trip, one implicit transaction): left to choose,
// PostgreSQL plans the statement afresh at every execution, its generic
// plan estimated dearer (it cannot know how few rows lie past xmax(W)),
// and that planning costs more than the statement. The generic plan has
// the same index scans.
func readCatchUp(ctx context.Context, pool *pgxpool.Pool, w *pgSnapshot) (next *pgSnapshot, horizon uint64, changes []change, err error) {
	b := &pgx.Batch{}
	b.Queue(sqlGenericPlan)
	b.Queue(sqlCatchUp, w.String())
	br := pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, 0, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var snap, timeline, hz string
		var xid *string
		var providers []int64
		if err := rows.Scan(&snap, &timeline, &hz, &xid, &providers); err != nil {
			return nil, 0, nil, err
		}
		if next == nil {
			if next, err = parsePgSnapshot(snap, timeline); err != nil {
				return nil, 0, nil, err
			}
			if horizon, err = strconv.ParseUint(hz, 10, 64); err != nil {
				return nil, 0, nil, fmt.Errorf("ledger: malformed change log horizon %q", hz)
			}
		}
		if xid == nil {
			continue
		}
		x, err := strconv.ParseUint(*xid, 10, 64)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("ledger: malformed xid %q", *xid)
		}
		changes = append(changes, change{xid: x, providers: providers})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, nil, err
	}
	rows.Close()
	if err := br.Close(); err != nil {
		return nil, 0, nil, err
	}
	if next == nil {
		return nil, 0, nil, fmt.Errorf("ledger: catch-up: no answer")
	}
	return next, horizon, changes, nil
}

// catchUpOnce reads the change log past W and marks what it finds dirty
// (see the invariant above). Before the first load there is no W: the
// first reader loads everything.
func (c *Cache) catchUpOnce(ctx context.Context) error {
	c.mu.Lock()
	w := c.w
	c.mu.Unlock()
	if w == nil {
		return nil
	}
	start := time.Now()
	next, horizon, changes, err := readCatchUp(ctx, c.txs.Pool, w)
	if err != nil {
		return fmt.Errorf("ledger: snapshot catch-up: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUps++
	switch {
	case next.timeline != w.timeline:
		c.log.Warn("ledger: the database is on another timeline (a failover): reloading the whole snapshot",
			"from", w.timeline, "to", next.timeline)
		c.all = true
	case horizon >= w.xmin:
		// Rows W needs may have been trimmed.
		c.all = true
	default:
		for _, ch := range changes {
			if _, mine := c.own[ch.xid]; mine {
				continue // applied at commit, or marked dirty then
			}
			if ch.providers == nil {
				c.all = true
				continue
			}
			for _, id := range ch.providers {
				c.dirty[id] = struct{}{}
			}
		}
	}
	c.setW(next)
	c.log.Debug("ledger snapshot caught up", "changes", len(changes), "dirty", len(c.dirty), "all", c.all,
		"duration", time.Since(start))
	return nil
}

// setW moves W to next and forgets the own writes next has seen, which
// no catch-up from next will meet again. c.mu is held.
func (c *Cache) setW(next *pgSnapshot) {
	c.w = next
	for xid := range c.own {
		if next.visible(xid) {
			delete(c.own, xid)
		}
	}
}

// noteOwn records that the change of this process's transaction xid (0:
// unknown) is in cur or dirty. c.mu is held.
func (c *Cache) noteOwn(xid uint64) {
	if xid == 0 || c.w == nil || c.w.visible(xid) {
		return
	}
	c.own[xid] = struct{}{}
}

// catchUps shares catch-ups among readers: one runs at a time, and
// every reader waits for one that started after it began. Its fields are
// under Cache.mu.
type catchUps struct {
	// started numbers the catch-ups begun; done is the number of the
	// last that succeeded, failed of the last that failed (with err).
	started, done, failed uint64
	err                   error
	running               bool
	// finished is closed when the running catch-up ends.
	finished chan struct{}
}

// catchUpTimeout bounds one catch-up, whose readers may have given up.
const catchUpTimeout = 30 * time.Second

// awaitCatchUp returns once a catch-up that started after the call has
// marked dirty every change committed before the call, or with that
// catch-up's error, or ctx's.
func (c *Cache) awaitCatchUp(ctx context.Context) error {
	c.mu.Lock()
	need := c.cu.started + 1
	for {
		switch {
		case c.cu.done >= need:
			c.mu.Unlock()
			return nil
		case c.cu.failed >= need:
			err := c.cu.err
			c.mu.Unlock()
			return err
		case !c.cu.running:
			c.startCatchUp()
		}
		finished := c.cu.finished
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-finished:
		}
		c.mu.Lock()
	}
}

// startCatchUp starts the next catch-up in the background, on the
// cache's own context: its readers may give up, others may be waiting.
// c.mu is held.
func (c *Cache) startCatchUp() {
	c.cu.running = true
	c.cu.started++
	n := c.cu.started
	finished := make(chan struct{})
	c.cu.finished = finished
	go func() {
		ctx, cancel := context.WithTimeout(c.bg, catchUpTimeout)
		err := c.catchUpOnce(ctx)
		cancel()
		c.mu.Lock()
		c.cu.running = false
		if err == nil {
			c.cu.done = n
		} else {
			c.cu.failed, c.cu.err = n, err
		}
		c.mu.Unlock()
		close(finished)
	}()
}

// warm keeps the snapshot caught up in the background, so that readers
// find little to do: after a hint (a notification from another process,
// the listener's reconnection; kick) and at least every interval. It
// returns when ctx ends.
func (c *Cache) warm(ctx context.Context, interval time.Duration) {
	c.whileLoaded(ctx, interval, c.kicks, "ledger: snapshot catch-up failed", func(ctx context.Context) error {
		_, err := c.get(ctx, true)
		return err
	})
}

// backgroundWorkTimeout bounds each run of whileLoaded's fn: a reload
// holds the reload lock that readers wait for, and its confirmation
// waits for the synchronous standby (replication.go), which may be gone.
const backgroundWorkTimeout = time.Minute

// whileLoaded runs fn at every tick of interval and every wake (nil: none)
// until ctx ends, once a reader has asked for a snapshot, each run within
// backgroundWorkTimeout; a failure is logged with msg and tried again at
// the next tick.
func (c *Cache) whileLoaded(ctx context.Context, interval time.Duration, wake <-chan struct{}, msg string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
		c.mu.Lock()
		loaded := c.cur != nil
		c.mu.Unlock()
		if !loaded {
			continue // nobody has asked for a snapshot yet
		}
		fctx, cancel := context.WithTimeout(ctx, backgroundWorkTimeout)
		err := fn(fctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.log.Warn(msg, "error", core.OneLine(err))
		}
	}
}

// kick asks warm for a catch-up. It never blocks.
func (c *Cache) kick() {
	select {
	case c.kicks <- struct{}{}:
	default:
	}
}

// trimAdvisoryLock is the key of the advisory lock under which one
// process at a time trims the change log.
const trimAdvisoryLock = 0x6265727468636c67 // "berthclg"

// sqlTrimChanges deletes, if it gets the trim lock, the change rows
// older than $1 and raises the horizon to the highest xid it deleted.
const sqlTrimChanges = `
WITH l AS (
	SELECT pg_try_advisory_xact_lock($2) AS got
), d AS (
	DELETE FROM ledger_changes WHERE (SELECT got FROM l) AND at < now() - $1::interval RETURNING xid
), h AS (
	UPDATE ledger_changes_horizon SET horizon = greatest(horizon, (SELECT xid FROM d ORDER BY xid DESC LIMIT 1))
	WHERE EXISTS (SELECT 1 FROM d)
)
SELECT count(*) FROM d`

// trimChanges trims the change log every interval until ctx ends.
func (c *Cache) trimChanges(ctx context.Context, retention, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var n int64
		err := c.db.QueryRow(ctx, sqlTrimChanges, retention, int64(trimAdvisoryLock)).Scan(&n)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("ledger: trimming the change log failed", "error", core.OneLine(err))
		}
	}
}
