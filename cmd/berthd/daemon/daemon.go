package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/cmd/berthd/compose"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/internal/keystone"
	"github.com/berthd/berth/internal/telemetry"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// Shutdown budgets beyond Config.ShutdownGrace.
const (
	telemetryShutdownTimeout = 2 * time.Second
	clusterStopTimeout       = 30 * time.Second
)

// Daemon is a built berthd: database ready, store open, listener bound.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	db    *database
	store *ledger.Store
	api   *httpapi.Server
	srv   *http.Server
	ln    net.Listener
	// metricsSrv and metricsLn serve /metrics on Config.MetricsListen;
	// nil when metrics share the API listener or are off.
	metricsSrv *http.Server
	metricsLn  net.Listener
	tel        *telemetry.Telemetry
	// unobserve unregisters the instruments read at each collection
	// (the pool, over capacity, scriptlets, the snapshot, the lease
	// reaper, Keystone).
	unobserve []func() error
	// stopCatalog ends the refresh of the compiled scheduling data and
	// waits for it.
	stopCatalog func()
	// stopReaper ends the claim lease reaper and waits for it; nil when
	// it does not run here.
	stopReaper func()
	// keystone validates tokens with auth keystone; nil otherwise.
	keystone *keystone.Client
}

// New builds a Daemon from cfg: it sets up telemetry, binds the
// listeners, starts the embedded cluster when cfg has no database URL,
// migrates the database (or, with MigrateOnStart off, checks that it is
// migrated), opens the store and builds the API. On error everything
// started so far is stopped again. Run serves it.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *Daemon, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// What the components are built with; read before anything starts, so
	// that a bad file fails fast.
	parts := compose.Config{
		Logger: log,
		Claims: claims.Config{MaxAttempts: cfg.ClaimMaxAttempts, MaxCandidates: cfg.MaxCandidates,
			ClaimCandidates: cfg.ClaimCandidates, SubsetSize: cfg.ClaimSubsetSize, LeaseMax: cfg.ClaimLeaseMax},
		ShadowBudget: cfg.ShadowBudget,
	}
	if parts.SchedulerPolicy, err = cfg.LoadSchedulerPolicy(log); err != nil {
		return nil, err
	}
	api := httpapi.Config{
		Auth:                cfg.Auth,
		CORSAllowedOrigins:  cfg.CORSAllowedOrigins,
		RandomizeCandidates: cfg.RandomizeCandidates,
		MaxCandidates:       cfg.MaxCandidates,
		RequestTimeout:      cfg.RequestTimeout,

		MaxInflightExpensive:  cfg.MaxInflightExpensive,
		AdmissionQueueTimeout: cfg.AdmissionQueueTimeout,
		AuditThresholds:       audit.AuditThresholds{MigrationAge: cfg.AuditMigrationAge, StateAge: cfg.AuditStateAge},
		CandidatesCacheBytes:  cfg.CandidatesCacheBytes,
	}
	if cfg.Auth == httpapi.AuthTokens {
		if api.Tokens, err = LoadTokens(cfg.TokenFile, log); err != nil {
			return nil, err
		}
	}
	if parts.Authz, err = LoadPolicy(cfg, log); err != nil {
		return nil, err
	}

	d := &Daemon{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			d.close(context.WithoutCancel(ctx))
		}
	}()
	if d.tel, err = telemetry.Setup(ctx, telemetry.Options{
		Exporter:   cfg.OTelExporter,
		Prometheus: cfg.MetricsListen != MetricsOff,
	}); err != nil {
		return nil, err
	}
	// Bind first: a port in use should fail before PostgreSQL starts.
	// Connections made before Run wait in the listen backlog.
	if d.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, err
	}
	if cfg.MetricsListen != "" && cfg.MetricsListen != MetricsOff {
		if d.metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			return nil, fmt.Errorf("metrics listener: %w", err)
		}
	} else {
		api.MetricsHandler = d.tel.MetricsHandler()
	}
	if cfg.Auth == httpapi.AuthKeystone {
		// Before the database: wrong credentials should stop berthd
		// before anything else starts.
		if d.keystone, err = cfg.Keystone.client(ctx, log); err != nil {
			return nil, err
		}
		api.Keystone = d.keystone
	}
	if parts.Limits, err = cfg.Limits.source(d.keystone, log); err != nil {
		return nil, err
	}
	api.LimitsEnforcePlacementAPI = cfg.Limits.enforcePlacementAPI()
	if d.db, err = openDatabase(ctx, cfg, log); err != nil {
		return nil, err
	}
	if err = d.migrate(ctx); err != nil {
		return nil, err
	}
	if d.store, err = ledger.Open(ctx, ledger.Config{
		DatabaseURL:        d.db.url,
		MaxConns:           int32(cfg.DBMaxConns),
		MinConns:           int32(cfg.DBMinConns),
		ConnectTimeout:     cfg.DBConnectTimeout,
		AcquireTimeout:     cfg.DBAcquireTimeout,
		StatementTimeout:   cfg.DBStatementTimeout,
		SnapshotRefresh:    cfg.SnapshotRefresh,
		ChangeLogRetention: cfg.ChangeLogRetention,
		ClaimWriters:       groupWriters(cfg.ClaimWriters),
		ProviderWriters:    groupWriters(cfg.ProviderWriters),
		ClaimFailureTTL:    cfg.ClaimFailureTTL,
		Logger:             log,
	}); err != nil {
		return nil, err
	}
	parts.Store = d.store
	var c *compose.Components
	if d.api, c, err = NewAPI(api, parts); err != nil {
		return nil, err
	}
	if err = d.startCatalog(ctx, c.Catalog); err != nil {
		return nil, err
	}
	d.startLeaseReaper(ctx, c.Claimer)
	if cfg.MetricsListen != MetricsOff {
		if err = d.observe(c); err != nil {
			return nil, err
		}
	}
	d.srv = apiServer(cfg, d.api, log)
	if d.metricsLn != nil {
		// The probes answer here too, so that a metrics-only network
		// path can also watch health.
		mux := http.NewServeMux()
		mux.Handle("GET "+httpapi.PathMetrics, d.tel.MetricsHandler())
		mux.Handle("GET "+httpapi.PathHealthz, d.api)
		mux.Handle("GET "+httpapi.PathReadyz, d.api)
		d.metricsSrv = metricsServer(cfg, mux, log)
	}
	return d, nil
}

// NewAPI builds the components of parts (compose.Build) and the API server
// that serves them with the HTTP settings of api. It starts nothing; the
// caller runs the returned catalogue (Components.Catalog.Run) to see other
// replicas' changes. berthd's New calls it, and so can tests.
func NewAPI(api httpapi.Config, parts compose.Config) (*httpapi.Server, *compose.Components, error) {
	c, err := compose.Build(parts)
	if err != nil {
		return nil, nil, err
	}
	api.Store, api.Claimer, api.Catalog, api.Cloud, api.Authz, api.Limits = c.Store, c.Claimer, c.Catalog, c.Cloud, c.Authz, c.Limits
	s, err := httpapi.New(api, parts.Logger)
	if err != nil {
		return nil, nil, err
	}
	return s, c, nil
}

// migrate applies pending migrations, or with MigrateOnStart off checks
// that none of this binary's are missing.
func (d *Daemon) migrate(ctx context.Context) error {
	if d.cfg.MigrateOnStart {
		return ledger.Migrate(ctx, d.db.url)
	}
	st, err := ledger.SchemaStatusAt(ctx, d.db.url)
	if err != nil {
		return err
	}
	if !st.Current() {
		return fmt.Errorf("migrate on start is off and the %s", st)
	}
	d.log.Info("schema checked", "schema", st.String())
	return nil
}

// Addr is the address the API listens on.
func (d *Daemon) Addr() net.Addr { return d.ln.Addr() }

// MetricsAddr is the address of the separate metrics listener, or nil.
func (d *Daemon) MetricsAddr() net.Addr {
	if d.metricsLn == nil {
		return nil
	}
	return d.metricsLn.Addr()
}

// Run serves the API until ctx is cancelled, the server fails or the
// embedded database dies, then shuts down in order: /readyz fails for
// ShutdownDelay while requests are still served; the listener closes and
// in-flight requests get ShutdownGrace to finish (then their connections
// are cut); then the store (connection pool), the embedded cluster and
// telemetry (flushing spans and metrics) are closed. It returns nil
// after a shutdown asked for by ctx.
func (d *Daemon) Run(ctx context.Context) error {
	if d.cfg.Pprof != "" {
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		if err := servePprof(pctx, d.cfg.Pprof, d.log); err != nil {
			d.log.Warn("pprof not served", "addr", d.cfg.Pprof, "error", err)
		}
	}
	serveErr := make(chan error, 2)
	go func() { serveErr <- d.srv.Serve(apiListener(d.cfg, d.ln)) }()
	if d.metricsSrv != nil {
		go func() { serveErr <- fmt.Errorf("metrics: %w", d.metricsSrv.Serve(d.metricsLn)) }()
		d.log.Info("serving /metrics", "addr", d.metricsLn.Addr().String())
	}
	d.log.Info("berthd serving the Placement API", "addr", d.ln.Addr().String(), "auth", d.cfg.Auth,
		"policy", d.cfg.Policy, "policy_file", d.cfg.PolicyFile, "cors_allowed_origins", d.cfg.CORSAllowedOrigins,
		"traces", d.tel.Traces, "metrics", d.tel.Metrics)
	if d.cfg.Auth == httpapi.AuthKeystoneHeaders {
		d.log.Warn("auth keystone-headers trusts X-Roles, X-Project-Id, X-User-Id and OpenStack-System-Scope: " +
			"only an authenticating proxy (keystonemiddleware) may be able to reach berthd")
	}

	var err error
	select {
	case <-ctx.Done():
		d.log.Info("shutting down", "delay", d.cfg.ShutdownDelay, "grace", d.cfg.ShutdownGrace)
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	case <-d.db.exited():
		err = errors.New("embedded PostgreSQL exited unexpectedly; see " + d.db.cluster.LogFile())
	}
	d.api.Drain()
	if err == nil && d.cfg.ShutdownDelay > 0 {
		t := time.NewTimer(d.cfg.ShutdownDelay)
		select {
		case <-t.C:
		case err = <-serveErr:
			t.Stop()
			err = fmt.Errorf("http server: %w", err)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.ShutdownGrace)
	defer cancel()
	if d.metricsSrv != nil {
		_ = d.metricsSrv.Close()
	}
	start := time.Now()
	if shutErr := d.srv.Shutdown(shutdownCtx); shutErr != nil {
		d.log.Warn("in-flight requests cut off after the shutdown grace period", "grace", d.cfg.ShutdownGrace, "error", shutErr)
		_ = d.srv.Close()
	}
	d.log.Debug("http server stopped", "took", time.Since(start))
	start = time.Now()
	err = errors.Join(err, d.close(context.WithoutCancel(ctx)))
	d.log.Info("shut down", "closing_took", time.Since(start))
	return err
}

// close releases what New built, in reverse order; fields that are still
// nil are skipped.
func (d *Daemon) close(ctx context.Context) error {
	var errs []error
	if d.ln != nil {
		_ = d.ln.Close()
	}
	if d.stopCatalog != nil {
		d.stopCatalog()
	}
	if d.stopReaper != nil {
		d.stopReaper()
	}
	if d.metricsLn != nil {
		_ = d.metricsLn.Close()
	}
	for _, un := range d.unobserve {
		errs = append(errs, un())
	}
	if d.keystone != nil {
		d.keystone.Close()
	}
	if d.store != nil {
		start := time.Now()
		d.store.Close()
		d.log.Debug("database pool closed", "took", time.Since(start))
	}
	if d.db != nil {
		errs = append(errs, d.db.close(ctx, d.log))
	}
	if d.tel != nil {
		telCtx, cancel := context.WithTimeout(ctx, telemetryShutdownTimeout)
		defer cancel()
		errs = append(errs, d.tel.Shutdown(telCtx))
	}
	return errors.Join(errs...)
}

// Migrate applies the migrations to the configured database (starting and
// stopping the embedded cluster if there is no database URL) and returns.
func Migrate(ctx context.Context, cfg Config, log *slog.Logger) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.close(context.WithoutCancel(ctx), log)) }()
	if err := ledger.Migrate(ctx, db.url); err != nil {
		return err
	}
	log.Info("migrations applied")
	return nil
}

// startCatalog loads the stored scheduling policies, scriptlets and config
// and keeps them fresh (change notifications from every replica, and a
// reload every minute) until close.
func (d *Daemon) startCatalog(ctx context.Context, cat *catalog.Catalog) error {
	if err := cat.Reload(ctx); err != nil {
		return fmt.Errorf("load scheduling policies: %w", err)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); cat.Run(bg) }()
	d.stopCatalog = func() { cancel(); <-done }
	return nil
}

// observe registers the instruments read at each collection, and puts
// the claim counters at 0 (exported from the start).
func (d *Daemon) observe(c *compose.Components) error {
	observers := []func() (func() error, error){
		func() (func() error, error) { return ledger.ObservePool(d.store.PoolStats) },
		func() (func() error, error) { return claims.ObservePreemptions(c.Claimer) },
		func() (func() error, error) { return ledger.ObserveOverCapacity(d.store.Providers.OverCapacityCount) },
		func() (func() error, error) { return ledger.ObserveSnapshot(d.store.Snapshots.SnapshotStats) },
		func() (func() error, error) { return scriptlet.Observe(c.Catalog.Metrics()) },
		func() (func() error, error) { return claims.ObserveLeaseReaper(c.Claimer) },
		func() (func() error, error) { return keystone.Observe(d.keystone) }, // nil: at 0
	}
	for _, o := range observers {
		un, err := o()
		if err != nil {
			return err
		}
		d.unobserve = append(d.unobserve, un)
	}
	instrument.ZeroClaimCounters(context.Background())
	return nil
}

// startLeaseReaper runs the claim lease reaper every
// Config.ClaimLeaseInterval until close (not at all when negative).
func (d *Daemon) startLeaseReaper(ctx context.Context, c *claims.Claimer) {
	if d.cfg.ClaimLeaseInterval < 0 {
		return
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); c.RunLeaseReaper(bg, d.cfg.ClaimLeaseInterval) }()
	d.stopReaper = func() { cancel(); <-done }
}

// groupWriters maps the daemon's setting (0: no batching) to the
// ledger's (0: the default, negative: no batching).
func groupWriters(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
