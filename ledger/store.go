package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config configures a Store.
type Config struct {
	// DatabaseURL is a libpq-style URL or DSN of a migrated database.
	DatabaseURL string
	// MaxConns caps the connection pool; 0 means 16.
	MaxConns int32
	// MinConns is how many connections the pool keeps open even when
	// idle; 0 means none.
	MinConns int32
	// StatementTimeout is PostgreSQL's statement_timeout for every
	// session of the pool: a statement running longer is cancelled and
	// its transaction fails. 0 keeps the server's setting.
	StatementTimeout time.Duration
	// Logger receives the store's structured logs; nil means slog.Default().
	Logger *slog.Logger
	// SnapshotRefresh is how often the in-memory snapshot that allocation
	// candidates are computed from is fully reloaded, as a safety net
	// behind change notifications; 0 means DefaultSnapshotRefresh and a
	// negative value disables it.
	SnapshotRefresh time.Duration
	// ConnectTimeout bounds opening one database connection (dial, TLS,
	// startup); 0 means the URL's connect_timeout if it has one, else
	// DefaultConnectTimeout. Without it a connection attempt to an
	// unreachable host waits for the operating system's TCP timeout.
	ConnectTimeout time.Duration
	// AcquireTimeout bounds how long a transaction waits for a pooled
	// connection (opening one if needed) and its BEGIN; past it the
	// operation fails with fault.ErrUnavailable. 0 means DefaultAcquireTimeout.
	// It does not limit statements once the transaction has begun.
	AcquireTimeout time.Duration
	// ClaimFailureTTL is how long a provider a consumer failed on
	// (ClaimFailureAdd) keeps being avoided by its reschedules; older
	// failures are forgotten and purged. 0 means DefaultClaimFailureTTL
	// and a negative value remembers failures for ever.
	ClaimFailureTTL time.Duration
	// ClaimWriters is how many group-committed batches of new
	// consumers' allocations (claim_batch.go) may be in flight at once;
	// 0 means DefaultClaimWriters and a negative value sends every claim
	// alone.
	ClaimWriters int
	// ProviderWriters is how many group-committed groups of provider
	// writes (provider_group.go) may be in flight at once; 0 means
	// DefaultProviderWriters and a negative value sends every provider
	// write alone.
	ProviderWriters int
	// ClaimRequestTTL is how long a claim's request and answer are kept
	// to answer its retries (claim_records.go); older ones are purged. 0
	// means DefaultClaimRequestTTL; negative keeps them for ever.
	ClaimRequestTTL time.Duration
	// ChangeLogRetention is how long the change log's rows are kept
	// (changelog.go): a process that has not caught up for longer
	// reloads its whole snapshot. 0 means DefaultChangeLogRetention; a
	// negative value keeps them for ever (tests only).
	ChangeLogRetention time.Duration

	// poolHook, when set (by tests), adjusts the pool's configuration
	// last, before the pool connects: tests add a tracer or a notice
	// handler to every connection.
	poolHook func(*pgxpool.Config)
	// muteNotifications, set by tests only, sends no change
	// notification: peers learn of the writes from the change log alone.
	muteNotifications bool
}

// Defaults for Config.
const (
	// DefaultSnapshotRefresh is the snapshot reload interval used when
	// Config.SnapshotRefresh is 0.
	DefaultSnapshotRefresh = 5 * time.Minute
	DefaultConnectTimeout  = 3 * time.Second
	DefaultAcquireTimeout  = 5 * time.Second
	DefaultClaimFailureTTL = 24 * time.Hour
)

// warmInterval is how often a process catches its snapshot up in the
// background when nothing wakes it sooner: well within
// DefaultChangeLogRetention, so an idle process never needs a full
// reload for want of trimmed rows.
const warmInterval = 15 * time.Second

// Store is the ledger. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// db runs reads outside transactions (db.go).
	db  db
	log *slog.Logger
	// txs begins the Store's transactions (withTx).
	txs txBeginner

	// changeHooks run after a transaction that changed providers commits,
	// with the ids of the providers it touched (all=true: anything may have
	// changed). They must not block.
	changeHooks []func(providerIDs []int64, all bool)

	// snap is the in-memory snapshot of providers (snapshot_cache.go).
	snap *snapshotCache
	// sender tags this process's change notifications so its own listener
	// can skip them.
	sender string
	// notes sends change notifications after commit (notifier.go).
	notes *notifier
	// failureTTL is Config.ClaimFailureTTL after defaults; <= 0: for ever.
	failureTTL time.Duration
	// claims group-commits fast-path claims (claim_batch.go); nil when
	// every claim goes alone.
	claims *claimBatcher
	// trips group-commits the provider writes' fast paths
	// (provider_group.go); nil when every write goes alone.
	trips *tripWriter
	// requestTTL is Config.ClaimRequestTTL after defaults; <= 0: for ever.
	requestTTL time.Duration
	// unsynced marks commits whose wait for the synchronous standby was
	// cancelled (replication.go); primary remembers the primary of a
	// multi-host URL (replication.go).
	unsynced *unsyncedCommits
	primary  *primaryTracker
	// generalWrites, set by tests only, sends every provider write by its
	// general path (provider_fast.go), to compare the two.
	generalWrites bool
	// fastWrites counts the provider writes a fast path committed.
	fastWrites atomic.Int64
	// knownAggregates holds the canonical uuids of the aggregates this
	// Store has linked a provider to (provider_fast.go): a write that
	// names only those need not create any. Aggregates are few.
	knownAggregates sync.Map
	// stop ends the background goroutines (listener, periodic refresh,
	// notifier).
	stop context.CancelFunc
	bg   sync.WaitGroup
}

// Open connects to the database in cfg, which must already be migrated, and
// makes sure the standard resource classes and traits exist.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("ledger: parse database url: %w", err)
	}
	pcfg.MaxConns = cfg.MaxConns
	if pcfg.MaxConns <= 0 {
		pcfg.MaxConns = 16
	}
	if cfg.MinConns > 0 {
		pcfg.MinConns = min(cfg.MinConns, pcfg.MaxConns)
	}
	if cfg.StatementTimeout > 0 {
		// In milliseconds, PostgreSQL's default unit for this setting.
		pcfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
	}
	switch {
	case cfg.ConnectTimeout > 0:
		pcfg.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	case pcfg.ConnConfig.ConnectTimeout == 0: // the URL has no connect_timeout
		pcfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.AcquireTimeout <= 0 {
		cfg.AcquireTimeout = DefaultAcquireTimeout
	}
	unsynced, primary := &unsyncedCommits{}, &primaryTracker{log: cfg.Logger}
	pcfg.ConnConfig.OnNotice = unsynced.onNotice
	pcfg.BeforeClose = func(c *pgx.Conn) { unsynced.forget(c.PgConn()) }
	pcfg.BeforeConnect, pcfg.AfterConnect = primary.beforeConnect, primary.afterConnect
	if cfg.poolHook != nil {
		cfg.poolHook(pcfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: connect: %w", err)
	}
	s := &Store{pool: pool, db: db{pool: pool, unsynced: unsynced}, log: cfg.Logger, sender: randomSender(), unsynced: unsynced, primary: primary,
		txs: txBeginner{pool: pool, acquireTimeout: cfg.AcquireTimeout, unsynced: unsynced}}
	if err := s.syncStandard(ctx); err != nil {
		pool.Close()
		return nil, dbError(checkPrimary(ctx, cfg.DatabaseURL, err))
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	s.snap = newSnapshotCache(bg, s.txs, cfg.Logger)
	send := s.sendNotifications
	if cfg.muteNotifications {
		send = func(context.Context, []string) error { return nil }
	}
	s.notes = newNotifier(s.sender, send, cfg.Logger)
	s.followChanges(bg, cfg.ChangeLogRetention)
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.notes.run(bg) }()
	if cfg.ClaimWriters == 0 {
		cfg.ClaimWriters = DefaultClaimWriters
	}
	if cfg.ClaimWriters > 0 {
		s.claims = s.startClaimBatcher(bg, cfg.ClaimWriters)
	}
	if cfg.ProviderWriters == 0 {
		cfg.ProviderWriters = DefaultProviderWriters
	}
	if cfg.ProviderWriters > 0 {
		s.trips = s.startTripWriter(bg, cfg.ProviderWriters)
	}
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.snap.listen(bg, pcfg.ConnConfig, s.sender) }()
	if cfg.ClaimFailureTTL == 0 {
		cfg.ClaimFailureTTL = DefaultClaimFailureTTL
	}
	if cfg.ClaimFailureTTL > 0 {
		s.failureTTL = cfg.ClaimFailureTTL
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.purgeClaimFailures(bg) }()
	}
	if cfg.ClaimRequestTTL == 0 {
		cfg.ClaimRequestTTL = DefaultClaimRequestTTL
	}
	if cfg.ClaimRequestTTL > 0 {
		s.requestTTL = cfg.ClaimRequestTTL
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.purgeClaimRequests(bg) }()
	}
	if cfg.SnapshotRefresh == 0 {
		cfg.SnapshotRefresh = DefaultSnapshotRefresh
	}
	if cfg.SnapshotRefresh > 0 {
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.snap.refreshEvery(bg, cfg.SnapshotRefresh) }()
	}
	return s, nil
}

// followChanges starts the background work of the change log
// (changelog.go): the catch-ups that keep the snapshot warm, and the
// trimming of rows older than retention (0: DefaultChangeLogRetention;
// negative: never).
func (s *Store) followChanges(bg context.Context, retention time.Duration) {
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.snap.warm(bg, warmInterval) }()
	if retention == 0 {
		retention = DefaultChangeLogRetention
	}
	if retention > 0 {
		s.bg.Add(1)
		every := max(retention/4, time.Second)
		go func() { defer s.bg.Done(); s.trimChanges(bg, retention, every) }()
	}
}

// Close stops the background work and releases the connection pool.
func (s *Store) Close() {
	if s.stop != nil {
		s.stop()
		s.bg.Wait()
	}
	s.pool.Close()
}

// randomSender returns a process-unique tag for change notifications.
func randomSender() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return dbError(s.pool.Ping(ctx)) }

// OnChange registers fn to run after every committed transaction that
// changed providers. fn must be quick and must not call back into the Store.
func (s *Store) OnChange(fn func(providerIDs []int64, all bool)) {
	s.changeHooks = append(s.changeHooks, fn)
}

// notify runs the change hooks after a commit and queues the change
// notification for the other processes on the database (notifier.go).
func (s *Store) notify(t *txn) {
	if len(t.touched) == 0 && !t.all {
		return
	}
	s.notes.add(t.touched, t.all)
	if len(t.writes) > 0 && !t.all {
		s.snap.applyOwnWrites(t.touched, t.writes)
	} else {
		s.snap.invalidate(t.touched, t.all)
	}
	for _, fn := range s.changeHooks {
		fn(t.touched, t.all)
	}
}

// sendNotifications sends change notifications, one statement for all
// payloads, outside any write transaction.
func (s *Store) sendNotifications(ctx context.Context, payloads []string) error {
	_, err := s.db.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, notifyChannel, payloads)
	return err
}
