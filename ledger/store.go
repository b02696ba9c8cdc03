package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/ledger/snapshot"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	// consumers' allocations (resources/claim_writers.go) may be in flight at once;
	// 0 means DefaultClaimWriters and a negative value sends every claim
	// alone.
	ClaimWriters int
	// ProviderWriters is how many group-committed groups of provider
	// writes (resources/provider_writers.go) may be in flight at once; 0 means
	// DefaultProviderWriters and a negative value sends every provider
	// write alone.
	ProviderWriters int
	// ClaimRequestTTL is how long a claim's request and answer are kept
	// to answer its retries (claimrecords/records.go); older ones are purged. 0
	// means DefaultClaimRequestTTL; negative keeps them for ever.
	ClaimRequestTTL time.Duration
	// ChangeLogRetention is how long the change log's rows are kept
	// (snapshot/changelog.go): a process that has not caught up for longer
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
	// DefaultClaimRequestTTL is Config.ClaimRequestTTL when 0: how long a
	// claim's answer is kept for retries. A client retries within seconds or
	// minutes of the unknown outcome; an hour leaves room for a long outage.
	DefaultClaimRequestTTL = time.Hour
	// DefaultChangeLogRetention is how long change rows are kept when
	// Config.ChangeLogRetention is 0.
	DefaultChangeLogRetention = 2 * time.Minute
	// DefaultClaimWriters is how many batches of claims are in flight at
	// once when Config.ClaimWriters is 0. One is the classic group
	// commit: while a batch is on its way, the next one gathers; more
	// writers make smaller batches, which cost PostgreSQL more CPU per
	// claim (docs/performance.md).
	DefaultClaimWriters = 1
	// DefaultProviderWriters is how many groups of provider writes are
	// in flight at once when Config.ProviderWriters is 0. As for claims,
	// one writer makes the largest groups, which cost PostgreSQL the
	// least CPU per write (docs/performance.md).
	DefaultProviderWriters = 1
)

// Store is the ledger opened: one connection pool and one transaction
// helper (ledger/internal/core) shared by its parts, each a type of the
// package that does its job. It and its parts are safe for concurrent
// use.
type Store struct {
	// Providers are Placement's resource providers, their inventories,
	// traits and aggregates, the resource classes and traits.
	Providers *resources.Providers
	// Allocations are the consumers and their allocations, written by
	// Placement's routes and by claims (ClaimWrite), and the reshape.
	Allocations *resources.Allocations
	// Claims are what claims remember outside a claim's transaction:
	// retry records, moves, failed providers, stored claims and leases.
	Claims *claimrecords.Records
	// Quotas are the limits Berth keeps and the projects' usage.
	Quotas *quotas.Quotas
	// Auditor finds allocations that look orphaned or wrong, and fixes
	// the few it safely can.
	Auditor *audit.Auditor
	// Snapshots keeps the in-memory snapshot fresh and answers the
	// engine's reads through it.
	Snapshots *snapshot.Cache
	// Catalogue stores the scheduling policies, scriptlets, config and
	// shadows.
	Catalogue *scheduling.Catalogue
	// Cloud is what agents report of the providers and what scheduler
	// units and scriptlets ask about the cloud.
	Cloud *scheduling.Cloud

	core    *core.Core
	primary *core.PrimaryTracker
	// stop ends the background work (core.Core.Go).
	stop context.CancelFunc
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
	unsynced, primary := &core.Unsynced{}, &core.PrimaryTracker{Log: cfg.Logger}
	pcfg.ConnConfig.OnNotice = unsynced.OnNotice
	pcfg.BeforeClose = func(c *pgx.Conn) { unsynced.Forget(c.PgConn()) }
	pcfg.BeforeConnect, pcfg.AfterConnect = primary.BeforeConnect, primary.AfterConnect
	if cfg.poolHook != nil {
		cfg.poolHook(pcfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: connect: %w", err)
	}
	co := core.New(pool, cfg.Logger, cfg.AcquireTimeout, unsynced)
	if err := resources.SyncStandard(ctx, co); err != nil {
		pool.Close()
		return nil, core.DBError(core.CheckPrimary(ctx, cfg.DatabaseURL, DefaultConnectTimeout, err))
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Store{core: co, primary: primary, stop: stop}
	if cfg.ChangeLogRetention == 0 {
		cfg.ChangeLogRetention = DefaultChangeLogRetention
	}
	if cfg.SnapshotRefresh == 0 {
		cfg.SnapshotRefresh = DefaultSnapshotRefresh
	}
	s.Snapshots = snapshot.New(bg, co, snapshot.Options{Refresh: cfg.SnapshotRefresh,
		Retention: cfg.ChangeLogRetention, Listen: pcfg.ConnConfig, Mute: cfg.muteNotifications})
	if cfg.ClaimWriters == 0 {
		cfg.ClaimWriters = DefaultClaimWriters
	}
	s.Allocations = resources.NewAllocations(bg, co, cfg.ClaimWriters)
	if cfg.ProviderWriters == 0 {
		cfg.ProviderWriters = DefaultProviderWriters
	}
	s.Providers = resources.NewProviders(bg, co, cfg.ProviderWriters)
	if cfg.ClaimFailureTTL == 0 {
		cfg.ClaimFailureTTL = DefaultClaimFailureTTL
	}
	if cfg.ClaimRequestTTL == 0 {
		cfg.ClaimRequestTTL = DefaultClaimRequestTTL
	}
	s.Claims = claimrecords.New(bg, co, cfg.ClaimFailureTTL, cfg.ClaimRequestTTL)
	s.Quotas = quotas.New(co)
	s.Auditor = audit.New(co, s.Snapshots)
	s.Catalogue = scheduling.NewCatalogue(co)
	s.Cloud = scheduling.NewCloud(co)
	return s, nil
}

// Close stops the background work and releases the connection pool.
func (s *Store) Close() {
	if s.stop != nil {
		s.stop()
		s.core.Wait()
	}
	s.core.Pool.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return core.DBError(s.core.Pool.Ping(ctx)) }

// OnChange registers fn to run after every committed transaction that
// changed providers. fn must be quick and must not call back into the Store.
func (s *Store) OnChange(fn func(providerIDs []int64, all bool)) { s.core.OnChange(fn) }

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
