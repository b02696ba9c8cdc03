package snapshot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
)

// Cache keeps the current Snapshot fresh.
//
// Freshness contract: a reader that catches up (get with fresh set, every
// read of a Placement route) sees every write committed before it began,
// whichever process made it: it waits for a catch-up with the change log
// that started after it began (changelog.go), then reloads what that
// marked dirty. A reader that does not (a claim's ranking) sees every
// write this process committed before it began (read-your-writes: the
// commit's Notify applies the write or marks its providers dirty
// before the write returns) and the other processes' writes that a
// catch-up has found, which a notification from them wakes in the
// background, usually within milliseconds; while the change listener is
// disconnected, such a reader catches up too. A periodic full reload
// repairs anything else.
//
// Candidates computed from a snapshot are advisory: every allocation write
// re-checks capacity in the database, so a slightly stale snapshot can
// cause a failed claim but never an overcommit.
type Cache struct {
	// txs begins its loads' transactions; txs.Pool serves its other
	// reads; db runs the statements outside them (the change log's
	// trimming, the change notifications).
	txs core.TxBeginner
	db  core.DB
	log *slog.Logger
	// notes sends change notifications after commit (notifier.go),
	// tagged with sender so that this process's own listener can skip
	// them.
	notes  *notifier
	sender string
	// bg is the context of the background work (catch-ups, warm).
	bg context.Context

	// reloadMu serialises reloads so that one reader reloads while the
	// others wait for its result instead of querying the same rows.
	reloadMu sync.Mutex

	mu    sync.Mutex
	cur   *engine.Snapshot   // nil until the first load
	dirty map[int64]struct{} // providers changed since cur was built
	all   bool               // anything may have changed since cur was built
	// loading is set while a reload holds marks it took from dirty and
	// all: until it publishes, cur does not reflect them.
	loading bool
	// w is the database snapshot the cache has caught up to (nil until
	// the first load); own holds the ids of this process's transactions
	// not visible in w whose changes are in cur or dirty (changelog.go).
	w   *pgSnapshot
	own map[uint64]struct{}
	// cu shares catch-ups among readers (changelog.go).
	cu catchUps
	// kicks wakes warm for a catch-up (capacity 1).
	kicks chan struct{}
	// listening is true while the change listener is connected and
	// listening; while it is false other processes' changes go unheard.
	listening bool
	// catchUps, partialLoads and fullLoads count what was done.
	catchUps, partialLoads, fullLoads int64
	// stats count the reloads for SnapshotStats.
	stats SnapshotStats
}

// notifyChannel is the PostgreSQL channel write transactions notify with
// the ids of the providers they touched.
const notifyChannel = "berth_ledger"

// A reload reads just the dirty providers unless they are more than
// partialReloadMax, or than partialReloadShare of the snapshot's
// providers if that is more; then it reads every provider. Reading
// providers by id costs more per provider than reading them all, but a
// full reload of a large cloud reads and replaces every record, which
// after a burst of releases (a tenant's instances deleted) costs far more
// than reading the few changed.
const (
	partialReloadMax   = 2000
	partialReloadShare = 8 // up to 1/8 of the providers
)

// fullReloadAbove is the number of dirty providers above which a reload of
// cur reads every provider.
func fullReloadAbove(cur *engine.Snapshot) int {
	if cur == nil {
		return partialReloadMax
	}
	return max(partialReloadMax, cur.Len()/partialReloadShare)
}

// Options configure a Cache.
type Options struct {
	// Refresh is how often the snapshot is fully reloaded, as a safety
	// net behind change notifications; <= 0: never.
	Refresh time.Duration
	// Retention is how long the change log's rows are kept; <= 0: for
	// ever.
	Retention time.Duration
	// Listen is the connection configuration of the change listener.
	Listen *pgx.ConnConfig
	// Mute sends no change notification (tests): the other processes
	// learn of the writes from the change log alone.
	Mute bool
}

// warmInterval is how often a process catches its snapshot up in the
// background when nothing wakes it sooner: well within the change log's
// default retention, so an idle process never needs a full reload for
// want of trimmed rows.
const warmInterval = 15 * time.Second

// New returns an empty cache over co that hears of every commit
// (core.Core.Follow) and starts its background work on bg, which co's
// Wait waits for: the catch-ups that keep it warm, the trimming of the
// change log, the change notifications, the change listener and the
// periodic full reload.
func New(bg context.Context, co *core.Core, o Options) *Cache {
	c := newCache(bg, co.Txs, co.Log)
	c.db, c.sender = co.DB, randomSender()
	send := c.sendNotifications
	if o.Mute {
		send = func(context.Context, []string) error { return nil }
	}
	c.notes = newNotifier(c.sender, send, co.Log)
	co.Follow(c.committed)
	co.Go(func() { c.warm(bg, warmInterval) })
	if o.Retention > 0 {
		every := max(o.Retention/4, time.Second)
		co.Go(func() { c.trimChanges(bg, o.Retention, every) })
	}
	co.Go(func() { c.notes.run(bg) })
	co.Go(func() { c.listen(bg, o.Listen, c.sender) })
	if o.Refresh > 0 {
		co.Go(func() { c.refreshEvery(bg, o.Refresh) })
	}
	return c
}

// newCache returns an empty cache whose background catch-ups run on bg.
func newCache(bg context.Context, txs core.TxBeginner, log *slog.Logger) *Cache {
	return &Cache{txs: txs, log: log, bg: bg, dirty: map[int64]struct{}{}, own: map[uint64]struct{}{},
		kicks: make(chan struct{}, 1)}
}

// committed hears of a commit that changed providers (core.Core.Notify):
// it queues the change notification for the other processes on the
// database (notifier.go) and applies the commit's writes to the
// snapshot, or marks its providers dirty.
func (c *Cache) committed(touched []int64, all bool, writes []*core.OwnWrite) {
	c.notes.add(touched, all)
	if len(writes) > 0 && !all {
		c.applyOwnWrites(touched, writes)
	} else {
		c.invalidate(touched, all)
	}
}

// sendNotifications sends change notifications, one statement for all
// payloads, outside any write transaction.
func (c *Cache) sendNotifications(ctx context.Context, payloads []string) error {
	_, err := c.db.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, notifyChannel, payloads)
	return err
}

// randomSender returns a process-unique tag for change notifications.
func randomSender() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// invalidate marks providers dirty (all=true: everything). It never blocks
// on a reload, so it is safe to call from core.Core.Notify.
func (c *Cache) invalidate(ids []int64, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if all {
		c.all = true
		return
	}
	for _, id := range ids {
		c.dirty[id] = struct{}{}
	}
}

// get returns a snapshot that reflects every write this process committed
// before the call and, when fresh is set, every write any process
// committed before the call (see the freshness contract). While the
// change listener is not connected every reader catches up, fresh or
// not. It returns fresh data or the database's error.
func (c *Cache) get(ctx context.Context, fresh bool) (*engine.Snapshot, error) {
	c.mu.Lock()
	loaded, deaf := c.cur != nil, !c.listening
	c.mu.Unlock()
	if !loaded {
		// The first load, ours or another reader's (which may have
		// started before us: the catch-up below covers that).
		if _, err := c.reload(ctx, false); err != nil {
			return nil, err
		}
	}
	if fresh || deaf {
		if err := c.awaitCatchUp(ctx); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	// A reload under way may hold marks this reader needs: it waits for
	// it (reload), then for the marks left.
	cur, stale := c.cur, c.all || len(c.dirty) > 0 || c.loading
	c.mu.Unlock()
	if !stale {
		return cur, nil
	}
	return c.reload(ctx, false)
}

// reload brings the snapshot up to date: the dirty providers only, or
// everything when full is set, nothing was loaded yet, a change touched
// everything or many providers are dirty. Dirty marks are taken before
// the database is read, so a write that commits during the reload stays
// marked for the next reader.
func (c *Cache) reload(ctx context.Context, full bool) (*engine.Snapshot, error) {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()

	c.mu.Lock()
	cur, dirty, all := c.cur, c.dirty, c.all
	if cur != nil && !all && len(dirty) == 0 && !full {
		c.mu.Unlock()
		return cur, nil // another reader reloaded while we waited
	}
	c.dirty, c.all, c.loading = map[int64]struct{}{}, false, true
	full = full || cur == nil || all || len(dirty) > fullReloadAbove(cur)
	c.mu.Unlock()

	var next *engine.Snapshot
	var w *pgSnapshot
	var err error
	if full {
		next, w, err = c.loadAll(ctx)
	} else {
		ids := make([]int64, 0, len(dirty))
		for id := range dirty {
			ids = append(ids, id)
		}
		next, err = c.loadSome(ctx, cur, ids)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loading = false
	if err != nil {
		c.stats.FailedReloads++
		// Put the marks back so the next reader tries again.
		c.all = c.all || all
		for id := range dirty {
			c.dirty[id] = struct{}{}
		}
		return nil, err
	}
	c.cur = next
	if full {
		// Everything visible in w is in next (changelog.go).
		c.setW(w)
		c.fullLoads++
		c.stats.FullReloads++
		c.stats.LastFullLoad = time.Now()
	} else {
		c.partialLoads++
		c.stats.PartialReloads++
	}
	return next, nil
}

// SQL that loads the snapshot. Each statement takes $1, an array of provider
// ids, or NULL for every provider.
const (
	sqlSnapProviders = `
		SELECT id, uuid::text, name, generation, COALESCE(parent_provider_id, 0),
		       root_provider_id, created_at, updated_at
		FROM resource_providers
		WHERE $1::bigint[] IS NULL OR id = ANY($1)`
	// The evacuated ones, read apart rather than joined: the table is
	// tiny (usually empty), and a join would cost every provider of a full
	// load a hash probe.
	sqlSnapEvacuated = `
		SELECT resource_provider_id FROM provider_evacuations
		WHERE $1::bigint[] IS NULL OR resource_provider_id = ANY($1)`
	sqlSnapInventories = `
		SELECT i.resource_provider_id, i.resource_class_id, rc.name, i.total, i.reserved,
		       i.min_unit, i.max_unit, i.step_size, i.allocation_ratio, COALESCE(u.used, 0)
		FROM inventories i
		JOIN resource_classes rc ON rc.id = i.resource_class_id
		LEFT JOIN (
			SELECT resource_provider_id, resource_class_id, SUM(used) AS used
			FROM allocations
			WHERE $1::bigint[] IS NULL OR resource_provider_id = ANY($1)
			GROUP BY resource_provider_id, resource_class_id
		) u ON u.resource_provider_id = i.resource_provider_id
		   AND u.resource_class_id = i.resource_class_id
		WHERE $1::bigint[] IS NULL OR i.resource_provider_id = ANY($1)`
	sqlSnapTraits = `
		SELECT rpt.resource_provider_id, t.id, t.name
		FROM resource_provider_traits rpt
		JOIN traits t ON t.id = rpt.trait_id
		WHERE $1::bigint[] IS NULL OR rpt.resource_provider_id = ANY($1)`
	sqlSnapAggregates = `
		SELECT rpa.resource_provider_id, pa.id, pa.uuid::text
		FROM resource_provider_aggregates rpa
		JOIN placement_aggregates pa ON pa.id = rpa.aggregate_id
		WHERE $1::bigint[] IS NULL OR rpa.resource_provider_id = ANY($1)`
	sqlSnapClasses   = `SELECT id, name FROM resource_classes`
	sqlSnapAllTraits = `SELECT id, name FROM traits`
	sqlSnapAllAggs   = `SELECT id, uuid::text FROM placement_aggregates`
	sqlClassesByName = `SELECT id, name FROM resource_classes WHERE name = ANY($1)`
	sqlTraitsByName  = `SELECT id, name FROM traits WHERE name = ANY($1)`
)

// loadAll reads every provider and every name, and the database
// snapshot they were read in.
func (c *Cache) loadAll(ctx context.Context) (*engine.Snapshot, *pgSnapshot, error) {
	start := time.Now()
	var n *engine.Names
	var provs map[int64]*engine.ProviderRecord
	var w *pgSnapshot
	// One transaction, so the statements of the load see one state of
	// the database, confirmed (core's replication.go, "Reads that outlive
	// a failover"); fn may run more than once (WithTx).
	_, err := c.txs.WithTx(ctx, core.TxReadConfirmed, func(tx *core.Txn) error {
		n = engine.NewNames() // afresh if the transaction is run again
		var text, timeline string
		if err := tx.QueryRow(ctx, sqlSnapshotNow).Scan(&text, &timeline); err != nil {
			return err
		}
		var err error
		if w, err = parsePgSnapshot(text, timeline); err != nil {
			return err
		}
		if err := scanPairs(ctx, tx, sqlSnapClasses, n.AddClass); err != nil {
			return err
		}
		if err := scanPairs(ctx, tx, sqlSnapAllTraits, n.AddTrait); err != nil {
			return err
		}
		if err := scanPairs(ctx, tx, sqlSnapAllAggs, n.AddAggregate); err != nil {
			return err
		}
		provs, err = loadProviders(ctx, tx, nil, n)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: snapshot: %w", err)
	}
	list := make([]*engine.ProviderRecord, 0, len(provs))
	for _, p := range provs {
		list = append(list, p)
	}
	s := engine.New(list, n)
	c.log.Debug("ledger snapshot loaded", "providers", len(list), "duration", time.Since(start))
	return s, w, nil
}

// loadSome reloads the providers with the given ids into a copy of cur.
func (c *Cache) loadSome(ctx context.Context, cur *engine.Snapshot, ids []int64) (*engine.Snapshot, error) {
	n := cur.Names()
	// Names met while loading are added to a copy of the current names,
	// made only if one is new.
	nn := &lazyNames{base: n}
	provs, err := c.loadProvidersOneTrip(ctx, ids, nn)
	if err != nil {
		return nil, err
	}
	n = nn.result()
	deleted := map[int64]bool{}
	for _, id := range ids {
		if _, ok := provs[id]; !ok {
			deleted[id] = true
		}
	}
	return cur.WithProviders(provs, deleted, n), nil
}

// nameSink receives the names met while loading providers.
type nameSink interface {
	AddClass(id int32, name string)
	AddTrait(id int32, name string)
	AddAggregate(id int32, uuid string)
}

// lazyNames copies base on the first name it does not already hold.
type lazyNames struct {
	base *engine.Names
	copy *engine.Names
}

func (l *lazyNames) target() *engine.Names {
	if l.copy == nil {
		l.copy = l.base.Clone()
	}
	return l.copy
}

func (l *lazyNames) AddClass(id int32, name string) {
	if l.base.ClassName(id) != name {
		l.target().AddClass(id, name)
	}
}

func (l *lazyNames) AddTrait(id int32, name string) {
	if l.base.TraitName(id) != name {
		l.target().AddTrait(id, name)
	}
}

func (l *lazyNames) AddAggregate(id int32, uuid string) {
	if l.base.AggregateUUID(id) != uuid {
		l.target().AddAggregate(id, uuid)
	}
}

func (l *lazyNames) result() *engine.Names {
	if l.copy != nil {
		return l.copy
	}
	return l.base
}

// loadProviders reads the providers with the given ids (nil: all) with
// their inventories, usage, traits and aggregates, in one round trip.
func loadProviders(ctx context.Context, tx pgx.Tx, ids []int64, n nameSink) (map[int64]*engine.ProviderRecord, error) {
	b := &pgx.Batch{}
	queueProviders(b, ids)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	provs, err := readProviders(br, n)
	if err != nil {
		return nil, err
	}
	return provs, br.Close()
}

// sqlBeginSnapshot opens the transaction of a one-round-trip reload: one
// snapshot for its five statements, as loadAll's transaction gives. Not
// READ ONLY: it ends with core.SQLConfirm.
const sqlBeginSnapshot = `BEGIN ISOLATION LEVEL REPEATABLE READ`

// loadProvidersOneTrip is loadProviders in a transaction of its own,
// BEGIN, core.SQLConfirm and COMMIT sent in the same pipeline as the
// queries: one round trip instead of four. Reloads after writes take it,
// on every read that follows a write. (If a statement fails, the
// connection is left in a failed transaction, and the pool closes it
// instead of reusing it.)
func (c *Cache) loadProvidersOneTrip(ctx context.Context, ids []int64, n nameSink) (map[int64]*engine.ProviderRecord, error) {
	conn, err := c.txs.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: snapshot: %w", err)
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	c.txs.Unsynced.Forget(pc) // a mark left by another statement's commit
	b := &pgx.Batch{}
	b.Queue(sqlBeginSnapshot)
	queueProviders(b, ids)
	b.Queue(core.SQLConfirm)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("ledger: snapshot: begin: %w", err)
	}
	provs, err := readProviders(br, n)
	if err != nil {
		return nil, fmt.Errorf("ledger: snapshot: %w", err)
	}
	for range 2 { // core.SQLConfirm, COMMIT
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("ledger: snapshot: commit: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("ledger: snapshot: commit: %w", err)
	}
	return provs, c.txs.Unsynced.Replicated(pc)
}

// queueProviders queues loadProviders' five queries.
func queueProviders(b *pgx.Batch, ids []int64) {
	var arg any // NULL selects every provider
	if ids != nil {
		arg = ids
	}
	b.Queue(sqlSnapProviders, arg)
	b.Queue(sqlSnapInventories, arg)
	b.Queue(sqlSnapTraits, arg)
	b.Queue(sqlSnapAggregates, arg)
	b.Queue(sqlSnapEvacuated, arg)
}

// readProviders reads the answers to queueProviders' queries.
func readProviders(br pgx.BatchResults, n nameSink) (map[int64]*engine.ProviderRecord, error) {
	provs := map[int64]*engine.ProviderRecord{}
	rows, _ := br.Query()
	for rows.Next() {
		p := &engine.ProviderRecord{}
		if err := rows.Scan(&p.ID, &p.UUID, &p.Name, &p.Generation, &p.ParentID, &p.RootID, &p.CreatedAt, &p.UpdatedAt); err != nil {
			return nil, err
		}
		provs[p.ID] = p
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}

	rows, _ = br.Query()
	for rows.Next() {
		var id int64
		var className string
		var inv engine.InventoryRecord
		if err := rows.Scan(&id, &inv.Class, &className, &inv.Total, &inv.Reserved, &inv.MinUnit,
			&inv.MaxUnit, &inv.StepSize, &inv.Ratio, &inv.Used); err != nil {
			return nil, err
		}
		n.AddClass(inv.Class, className)
		if p := provs[id]; p != nil {
			p.Inventories = append(p.Inventories, inv)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}

	rows, _ = br.Query()
	if err := scanProviderLinks(rows, func(id int64, tid int32, name string) {
		n.AddTrait(tid, name)
		if p := provs[id]; p != nil {
			p.Traits = append(p.Traits, tid)
		}
	}); err != nil {
		return nil, err
	}
	rows, _ = br.Query()
	if err := scanProviderLinks(rows, func(id int64, aid int32, uuid string) {
		n.AddAggregate(aid, uuid)
		if p := provs[id]; p != nil {
			p.Aggregates = append(p.Aggregates, aid)
		}
	}); err != nil {
		return nil, err
	}
	rows, _ = br.Query()
	var evacuated int64
	if _, err := pgx.ForEachRow(rows, []any{&evacuated}, func() error {
		if p := provs[evacuated]; p != nil {
			p.Evacuated = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for id, p := range provs {
		slices.SortFunc(p.Inventories, func(a, b engine.InventoryRecord) int { return int(a.Class - b.Class) })
		slices.Sort(p.Traits)
		slices.Sort(p.Aggregates)
		provs[id] = engine.NewRecord(p) // inventories, ids and uuid in the record's allocation
	}
	return provs, nil
}

func scanPairs(ctx context.Context, q pgx.Tx, sql string, add func(int32, string)) error {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int32
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return err
		}
		add(id, name)
	}
	return rows.Err()
}

// learnNames asks the database about the given classes and traits and
// publishes a snapshot whose names match it for them: the ones that exist
// are added, the ones that do not are removed. It returns the snapshot to
// use, which keeps the providers of s.
func (c *Cache) learnNames(ctx context.Context, s *engine.Snapshot, classes, traits []string) (*engine.Snapshot, error) {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	if cur == nil {
		cur = s
	}
	foundC, foundT := map[string]int32{}, map[string]int32{}
	if len(classes) > 0 {
		if err := queryPairs(ctx, c.db, sqlClassesByName, classes, func(id int32, n string) { foundC[n] = id }); err != nil {
			return nil, err
		}
	}
	if len(traits) > 0 {
		if err := queryPairs(ctx, c.db, sqlTraitsByName, traits, func(id int32, n string) { foundT[n] = id }); err != nil {
			return nil, err
		}
	}
	n := cur.Names()
	changed := false
	for _, name := range classes {
		id, ok := n.ClassID(name)
		if fid, found := foundC[name]; found != ok || fid != id {
			changed = true
		}
	}
	for _, name := range traits {
		id, ok := n.TraitID(name)
		if fid, found := foundT[name]; found != ok || fid != id {
			changed = true
		}
	}
	if !changed {
		return s, nil
	}
	nn := n.Clone()
	for _, name := range classes {
		nn.DeleteClass(name)
		if id, ok := foundC[name]; ok {
			nn.AddClass(id, name)
		}
	}
	for _, name := range traits {
		nn.DeleteTrait(name)
		if id, ok := foundT[name]; ok {
			nn.AddTrait(id, name)
		}
	}
	next := cur.WithNames(nn)
	c.mu.Lock()
	if c.cur == cur {
		c.cur = next
	}
	c.mu.Unlock()
	if s != cur {
		// The caller's snapshot is older than the published one; give it
		// the new names too, keeping its providers.
		return s.WithNames(nn), nil
	}
	return next, nil
}

func queryPairs(ctx context.Context, pool core.Querier, sql string, arg []string, add func(int32, string)) error {
	rows, err := pool.Query(ctx, sql, arg)
	if err != nil {
		return fmt.Errorf("ledger: look up names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int32
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return err
		}
		add(id, name)
	}
	return rows.Err()
}

// notifyPayload encodes a change for notifyChannel: the sender's id, a
// colon, then "*" or the comma-separated provider ids. Payloads are capped
// well below PostgreSQL's 8000-byte limit by degrading to "*".
func notifyPayload(sender string, ids []int64, all bool) string {
	var b strings.Builder
	b.WriteString(sender)
	b.WriteByte(':')
	if all {
		b.WriteByte('*')
		return b.String()
	}
	for i, id := range ids {
		if b.Len() > 7000 {
			return sender + ":*"
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

// parseNotifyPayload decodes notifyPayload's format.
func parseNotifyPayload(payload string) (sender string, ids []int64, all bool, ok bool) {
	sender, rest, ok := strings.Cut(payload, ":")
	if !ok {
		return "", nil, false, false
	}
	if rest == "*" {
		return sender, nil, true, true
	}
	for _, f := range strings.Split(rest, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return sender, nil, true, true // unreadable: assume the worst
		}
		ids = append(ids, id)
	}
	return sender, ids, false, true
}

// listenMaxBackoff caps the wait between attempts to reconnect the change
// listener, so that it is back within about this long of the database.
const listenMaxBackoff = 2 * time.Second

// listen receives other processes' change notifications until ctx ends,
// reconnecting with a bounded backoff. A notification is a hint only: it
// wakes a catch-up in the background (warm), which finds in the change
// log what changed. While it is disconnected, every reader catches up
// (see get); after each (re)connection it wakes a catch-up, since
// notifications sent while it was away are lost.
func (c *Cache) listen(ctx context.Context, cfg *pgx.ConnConfig, self string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+notifyChannel)
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			c.mu.Lock()
			c.listening = true
			c.mu.Unlock()
			c.kick()
			for {
				note, werr := conn.WaitForNotification(ctx)
				if werr != nil {
					err = werr
					break
				}
				sender, _, _, ok := parseNotifyPayload(note.Payload)
				if !ok || sender == self {
					continue
				}
				c.kick()
			}
			c.mu.Lock()
			c.listening = false
			c.mu.Unlock()
		}
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("ledger: change listener disconnected; retrying", "error", core.OneLine(err), "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// refreshEvery fully reloads the snapshot at each interval, in the
// background, so readers keep using the previous one meanwhile.
func (c *Cache) refreshEvery(ctx context.Context, interval time.Duration) {
	c.whileLoaded(ctx, interval, nil, "ledger: periodic snapshot refresh failed", func(ctx context.Context) error {
		_, err := c.reload(ctx, true)
		return err
	})
}

// scanProviderLinks reads rows of (provider id, linked id, linked name), the
// shape of the trait and aggregate queries of a load, and closes rows.
func scanProviderLinks(rows pgx.Rows, add func(provider int64, id int32, name string)) error {
	defer rows.Close()
	for rows.Next() {
		var provider int64
		var id int32
		var name string
		if err := rows.Scan(&provider, &id, &name); err != nil {
			return err
		}
		add(provider, id, name)
	}
	return rows.Err()
}

// applyOwnWrites brings the snapshot up to date with writes this
// process committed that only added allocations (ws, in commit order),
// without a reload: a provider whose generation in the snapshot is the
// one just before a write's (the write held its row lock and bumped it
// by one, so nothing else changed it in between) gets the allocations
// added to its usage and the write's generation; a later write of ws on
// the same provider then applies on top of it. Every other provider of
// ids is marked dirty as invalidate does, as are all of them when a
// reload is under way (it could replace the patched snapshot with one
// built before it) or everything is dirty. Like invalidate, it never
// waits for a reload, and the snapshot reflects the writes before they
// return (read-your-writes). Either way the writes' changes are then in
// cur or dirty, and their transactions are noted as the process's own,
// which the next catch-up skips (changelog.go).
func (c *Cache) applyOwnWrites(ids []int64, ws []*core.OwnWrite) {
	if !c.reloadMu.TryLock() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.markOwn(ids, ws)
		return
	}
	defer c.reloadMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.cur
	if cur == nil || c.all {
		c.markOwn(ids, ws)
		return
	}
	for _, w := range ws {
		c.noteOwn(w.Xid)
	}
	changed := make(map[int64]*engine.ProviderRecord, len(ids))
	failed := make(map[int64]bool)
	for _, w := range ws {
		for i, id := range w.Providers {
			if failed[id] {
				continue
			}
			old := changed[id]
			if old == nil {
				var ok bool
				old, ok = cur.ProviderByID(id)
				if _, dirty := c.dirty[id]; !ok || dirty {
					failed[id] = true
					continue
				}
			}
			if old.Generation != w.Generations[i]-1 {
				failed[id], changed[id] = true, nil
				continue
			}
			p := engine.NewRecord(old)
			p.Generation, p.UpdatedAt = w.Generations[i], w.UpdatedAt[i]
			complete := true
			for j, rp := range w.AllocProviders {
				if rp != id {
					continue
				}
				inv := p.Inventory(int32(w.AllocClasses[j]))
				if inv == nil {
					complete = false
					break
				}
				inv.Used += w.Amounts[j]
			}
			if !complete {
				failed[id], changed[id] = true, nil
				continue
			}
			changed[id] = p
		}
	}
	for _, id := range ids {
		if changed[id] == nil {
			c.dirty[id] = struct{}{}
			delete(changed, id)
		}
	}
	if len(changed) > 0 {
		c.cur = cur.WithProviders(changed, nil, cur.Names())
	}
}

// markOwn marks the providers of the process's own writes ws dirty and
// notes their transactions. c.mu is held.
func (c *Cache) markOwn(ids []int64, ws []*core.OwnWrite) {
	for _, id := range ids {
		c.dirty[id] = struct{}{}
	}
	for _, w := range ws {
		c.noteOwn(w.Xid)
	}
}
