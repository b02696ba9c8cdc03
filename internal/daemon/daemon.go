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
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/internal/telemetry"
	"github.com/berthd/berth/ledger"
)

// Shutdown budgets. The conformance harness and most supervisors send
// SIGKILL 10 to 30 seconds after SIGTERM, so the whole sequence stays
// under ten seconds unless PostgreSQL is slow to checkpoint.
const (
	httpShutdownTimeout      = 5 * time.Second
	telemetryShutdownTimeout = 2 * time.Second
	clusterStopTimeout       = 30 * time.Second
)

// Daemon is a built berthd: database ready, store open, listener bound.
type Daemon struct {
	cfg      Config
	log      *slog.Logger
	db       *database
	store    *ledger.Store
	srv      *http.Server
	ln       net.Listener
	closeTel func(context.Context) error
	// stopSources ends the refresh of the compiled scheduling data and
	// waits for it.
	stopSources func()
}

// New builds a Daemon from cfg: it sets up telemetry, binds the listener,
// starts the embedded cluster when cfg has no database URL, migrates the
// database, opens the store and builds the API. On error everything
// started so far is stopped again. Run serves it.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *Daemon, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	api := httpapi.Config{
		Auth:                cfg.Auth,
		CORSAllowedOrigins:  cfg.CORSAllowedOrigins,
		RandomizeCandidates: cfg.RandomizeCandidates,
		MaxCandidates:       cfg.MaxCandidates,
		ClaimMaxAttempts:    cfg.ClaimMaxAttempts,
	}
	if api.SchedulerPolicy, err = cfg.LoadSchedulerPolicy(log); err != nil {
		return nil, err
	}
	if cfg.Auth == httpapi.AuthTokens {
		if api.Tokens, err = LoadTokens(cfg.TokenFile, log); err != nil {
			return nil, err
		}
	}
	if api.Policy, err = LoadPolicy(cfg, log); err != nil {
		return nil, err
	}

	d := &Daemon{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			d.close(context.WithoutCancel(ctx))
		}
	}()
	if d.closeTel, err = telemetry.Setup(ctx, cfg.OTelExporter); err != nil {
		return nil, err
	}
	// Bind first: a port in use should fail before PostgreSQL starts.
	// Connections made before Run wait in the listen backlog.
	if d.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, err
	}
	if d.db, err = openDatabase(ctx, cfg, log); err != nil {
		return nil, err
	}
	if err = ledger.Migrate(ctx, d.db.url); err != nil {
		return nil, err
	}
	if d.store, err = ledger.Open(ctx, ledger.Config{
		DatabaseURL:     d.db.url,
		MaxConns:        int32(cfg.DBMaxConns),
		SnapshotRefresh: cfg.SnapshotRefresh,
		Logger:          log,
	}); err != nil {
		return nil, err
	}
	if err = d.startSources(ctx, &api); err != nil {
		return nil, err
	}
	handler, err := httpapi.New(api, d.store, log)
	if err != nil {
		return nil, err
	}
	d.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return d, nil
}

// Addr is the address the API listens on.
func (d *Daemon) Addr() net.Addr { return d.ln.Addr() }

// Run serves the API until ctx is cancelled, the server fails or the
// embedded database dies, then shuts down in order: HTTP server
// (finishing in-flight requests for up to five seconds), store, embedded
// cluster, telemetry. It returns nil after a shutdown asked for by ctx.
func (d *Daemon) Run(ctx context.Context) error {
	if d.cfg.Pprof != "" {
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		if err := servePprof(pctx, d.cfg.Pprof, d.log); err != nil {
			d.log.Warn("pprof not served", "addr", d.cfg.Pprof, "error", err)
		}
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- d.srv.Serve(httpapi.WrapListener(d.ln)) }()
	d.log.Info("berthd serving the Placement API", "addr", d.ln.Addr().String(), "auth", d.cfg.Auth,
		"policy", d.cfg.Policy, "policy_file", d.cfg.PolicyFile, "cors_allowed_origins", d.cfg.CORSAllowedOrigins)
	if d.cfg.Auth == httpapi.AuthKeystoneHeaders {
		d.log.Warn("auth keystone-headers trusts X-Roles, X-Project-Id, X-User-Id and OpenStack-System-Scope: " +
			"only an authenticating proxy (keystonemiddleware) may be able to reach berthd")
	}

	var err error
	select {
	case <-ctx.Done():
		d.log.Info("shutting down")
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	case <-d.db.exited():
		err = errors.New("embedded PostgreSQL exited unexpectedly; see " + d.db.cluster.LogFile())
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownTimeout)
	defer cancel()
	if shutErr := d.srv.Shutdown(shutdownCtx); shutErr != nil {
		d.log.Warn("http shutdown incomplete", "error", shutErr)
		_ = d.srv.Close()
	}
	return errors.Join(err, d.close(context.WithoutCancel(ctx)))
}

// close releases what New built, in reverse order; fields that are still
// nil are skipped.
func (d *Daemon) close(ctx context.Context) error {
	var errs []error
	if d.ln != nil {
		_ = d.ln.Close()
	}
	if d.stopSources != nil {
		d.stopSources()
	}
	if d.store != nil {
		d.store.Close()
	}
	if d.db != nil {
		errs = append(errs, d.db.close(ctx, d.log))
	}
	if d.closeTel != nil {
		telCtx, cancel := context.WithTimeout(ctx, telemetryShutdownTimeout)
		defer cancel()
		errs = append(errs, d.closeTel(telCtx))
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

// startSources loads the stored scheduling policies, scriptlets and config
// and keeps them fresh (change notifications from every replica, and a
// reload every minute) until close.
func (d *Daemon) startSources(ctx context.Context, api *httpapi.Config) error {
	sources := claims.NewSources(d.store, nil, d.log, 0)
	if err := sources.Reload(ctx); err != nil {
		return fmt.Errorf("load scheduling policies: %w", err)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); sources.Run(bg) }()
	d.stopSources = func() { cancel(); <-done }
	api.Sources = sources
	return nil
}
