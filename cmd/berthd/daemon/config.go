package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/shadow"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/internal/telemetry"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// Config is berthd's whole configuration. Default returns it filled with
// defaults; cmd/berthd overrides fields from flags and environment
// variables; Validate checks it.
type Config struct {
	// ConfigFiles are the OpenStack Placement configuration files
	// (placement.conf) whose options were applied (ApplyPlacementConf)
	// before environment variables and flags; kept for the log.
	ConfigFiles []string
	// Listen is the TCP host:port the Placement API is served on.
	// Default "127.0.0.1:8778".
	Listen string
	// DatabaseURL is the postgres:// URL (libpq/pgx form) of the database
	// to use. It must exist; berthd migrates it on start. Empty means the
	// embedded cluster: berthd starts PostgreSQL in DataDir/pg and uses its
	// database "berth".
	DatabaseURL string
	// DataDir holds berthd's local state: the embedded cluster's data
	// directory (pg/) and socket directory (run/). Unused when DatabaseURL
	// is set. Default RootDataDir when berthd runs as root (see
	// openDatabase for a cluster an older berthd left in the user's
	// default), else $XDG_DATA_HOME/berth, else ~/.local/share/berth.
	DataDir string
	// LogLevel is the least severe level logged: debug, info, warn or
	// error. Default "info".
	LogLevel string
	// LogFormat is "text" (logfmt-like, default) or "json"; logs go to
	// standard error.
	LogFormat string
	// LogFlushInterval, when positive, holds log lines in memory and
	// writes them together at most this long after the first (and at
	// once for a warning or an error, when 64 KiB are held, and on exit):
	// a process killed outright loses that interval's lines. 0 (default)
	// writes every line at once. At most 10s.
	LogFlushInterval time.Duration
	// Auth is how requests are authenticated: "noauth2" (default; trusts
	// X-Auth-Token and the identity headers as Placement's noauth2 does,
	// for development and tests), "tokens" (static tokens from TokenFile),
	// "keystone-headers" (trusts the identity headers an authenticating
	// proxy such as keystonemiddleware sets; only safe behind one) or
	// "keystone" (validates tokens with Keystone, see Keystone). See
	// the httpapi.Auth* constants.
	Auth string
	// Keystone is Berth's service identity and token cache when Auth is
	// "keystone" (validate tokens with Keystone itself).
	Keystone KeystoneConfig
	// Limits says where the projects' limits come from (Berth's own API,
	// or Keystone's unified limits) and where they apply beyond claims
	// (docs/quotas.md).
	Limits LimitsConfig
	// TokenFile is the static token file used when Auth is "tokens"; see
	// LoadTokens for its format.
	TokenFile string
	// Policy is the built-in policy rule set: "admin" (default; every
	// operation needs the admin role), "secure" (Placement's defaults,
	// scope enforced), "legacy" (Placement's deprecated defaults) or
	// "open" (everything allowed to every authenticated user).
	Policy string
	// PolicyFile, if set, is a YAML or JSON mapping of rule names to check
	// strings (oslo.policy's policy.yaml) overriding rules of Policy.
	PolicyFile string
	// CORSAllowedOrigins are the origins allowed to call the API from a
	// browser (scheme://host[:port], or "*"). Empty (default) disables CORS.
	CORSAllowedOrigins []string
	// RandomizeCandidates shuffles allocation candidates instead of
	// returning them in a deterministic order, like Placement's
	// [placement]randomize_allocation_candidates. Default false.
	RandomizeCandidates bool
	// MaxCandidates caps how many allocation candidates one request may
	// generate before its limit is applied. Default 10000.
	MaxCandidates int
	// CandidatesCacheBytes bounds the bytes of GET /allocation_candidates
	// answers kept for queries asked again of an unchanged cloud; 0 keeps
	// none. Default DefaultCandidatesCacheBytes.
	CandidatesCacheBytes int
	// ClaimMaxAttempts bounds the writes one POST /claims tries before it
	// answers no valid host (a request may ask for up to
	// claims.MaxMaxAttempts). Default claims.DefaultMaxAttempts (10).
	ClaimMaxAttempts int
	// ClaimCandidates is how many candidates, drawn at random across
	// roots, a claim ranks before it falls back to all of them (see
	// claims.Config). Default claims.DefaultClaimCandidates; negative
	// ranks every candidate.
	ClaimCandidates int
	// ClaimSubsetSize: a claim's write attempt picks at random among the
	// best this many candidates; 1 (default) among the ties with the best;
	// 0 takes the best, ties in the ledger's order.
	ClaimSubsetSize int
	// ClaimFailureTTL is how long reschedules keep avoiding a provider a
	// consumer failed on (ledger.Config.ClaimFailureTTL). Default 24h;
	// negative: for ever.
	ClaimFailureTTL time.Duration
	// ClaimLeaseMax is the longest lease a claim may ask for
	// (claims.Config.LeaseMax). Default claims.DefaultLeaseMax (24h).
	ClaimLeaseMax time.Duration
	// ShadowBudget is the share of its time the shadows' worker may spend
	// judging claims (shadow.Options.Budget), 0.01 to 1 (no bound).
	// Default shadow.DefaultBudget.
	ShadowBudget float64
	// ClaimLeaseInterval is how often this berthd's lease reaper looks for
	// claim leases that ran out (one berthd at a time releases them; see
	// claims.Claimer.RunLeaseReaper). A provisional claim holds its
	// allocations for at most its lease plus this interval (plus the time
	// a pass takes). Default DefaultClaimLeaseInterval; negative: this
	// berthd never reaps (another must).
	ClaimLeaseInterval time.Duration
	// AuditMigrationAge and AuditStateAge are the thresholds of GET
	// /audit when a request names none: a MIGRATION consumer older than
	// the first is stale, as is a provider whose last state report is
	// older than the second. Defaults audit.DefaultAuditMigrationAge
	// (24h) and audit.DefaultAuditStateAge (1h); 0 means the default.
	AuditMigrationAge, AuditStateAge time.Duration
	// ClaimWriters is how many group-committed batches of new consumers'
	// allocations may be in flight at once (ledger.Config.ClaimWriters).
	// Default ledger.DefaultClaimWriters; 0 writes each claim in a
	// transaction of its own.
	ClaimWriters int
	// ProviderWriters is how many group-committed groups of provider
	// writes may be in flight at once (ledger.Config.ProviderWriters).
	// Default ledger.DefaultProviderWriters; 0 writes each in a
	// transaction of its own.
	ProviderWriters int
	// SnapshotRefresh is how often the in-memory ledger snapshot behind
	// allocation candidates and provider lists is reloaded in full, as a
	// safety net behind change notifications. Default 5m; negative
	// disables the periodic reload.
	SnapshotRefresh time.Duration
	// ChangeLogRetention is how long the change log keeps a write's row
	// for the other processes to catch up with
	// (ledger.Config.ChangeLogRetention). Default 2m; at least 30s.
	ChangeLogRetention time.Duration
	// DBMaxConns caps the PostgreSQL connection pool. Default 16.
	DBMaxConns int
	// DBMinConns is how many pool connections are kept open while idle.
	// Default 0; at most DBMaxConns.
	DBMinConns int
	// DBConnectTimeout bounds opening one database connection. Default
	// 0: the URL's connect_timeout, else ledger.DefaultConnectTimeout (3s).
	DBConnectTimeout time.Duration
	// DBAcquireTimeout bounds how long a request waits for a pool
	// connection and its BEGIN before failing with 503. Default 0:
	// ledger.DefaultAcquireTimeout (5s).
	DBAcquireTimeout time.Duration
	// DBStatementTimeout is PostgreSQL's statement_timeout for berthd's
	// sessions: a statement running longer fails (the request answers
	// 503). Default 60s; 0 keeps the server's setting.
	DBStatementTimeout time.Duration
	// MigrateOnStart applies pending migrations when the server starts.
	// Default true. With false, `berthd migrate` (a Kubernetes Job, say)
	// must have run: the server refuses to start on an older schema.
	MigrateOnStart bool
	// HTTPReadHeaderTimeout bounds reading a request's header block;
	// HTTPReadTimeout the whole request, body included; HTTPWriteTimeout
	// the time from the end of the header block to the end of the
	// response; HTTPIdleTimeout how long a kept-alive connection waits
	// for its next request. Defaults 30s, 1m, 2m, 2m; 0 means no bound.
	HTTPReadHeaderTimeout, HTTPReadTimeout, HTTPWriteTimeout, HTTPIdleTimeout time.Duration
	// RequestTimeout bounds the work of one API request: its context ends
	// then and a database call still waiting fails with 503. Default 0:
	// httpapi.DefaultRequestTimeout (1m); negative disables it.
	RequestTimeout time.Duration
	// ShutdownDelay is how long berthd keeps serving after SIGTERM with
	// /readyz answering 503, so that load balancers stop routing to it
	// before it stops accepting connections. Default 0.
	ShutdownDelay time.Duration
	// ShutdownGrace is how long in-flight requests may run on after the
	// listener closes; connections still busy then are cut. Default 10s.
	ShutdownGrace time.Duration
	// OTelExporter selects where traces and metrics are pushed: "none"
	// (default), "stdout" or "otlp" (OTLP/HTTP to
	// $OTEL_EXPORTER_OTLP_ENDPOINT). The standard OTEL_TRACES_EXPORTER and
	// OTEL_METRICS_EXPORTER variables override it per signal.
	OTelExporter string
	// MetricsListen is where GET /metrics (Prometheus text format) is
	// served: "" (default) on the API listener, without authentication;
	// a host:port for a listener of its own (which also answers /healthz
	// and /readyz), keeping metrics off the API port; or "off".
	MetricsListen string
	// SchedulerPolicy is the JSON policy file for POST /claims when no
	// stored scheduling policy is the default: filters, weighers and
	// factors (docs/scheduling.md). Empty: scheduler.DefaultPolicyConfig
	// (capacity, then spread by free capacity).
	SchedulerPolicy string
	// Scriptlet is a Starlark file whose instance_placement runs as the
	// default scriptlet of claims (docs/scheduling.md). Empty: none.
	Scriptlet string
	// Pprof, if set, is a host:port on which net/http/pprof is served
	// (profiling; keep it on loopback). Empty (default): not served.
	Pprof string
	// InsecureAllowNoAuthOnNetwork lets Auth "noauth2" serve on an
	// address beyond loopback; without it Validate refuses (guard.go).
	InsecureAllowNoAuthOnNetwork bool
	// MaxHeaderBytes bounds a request's header block (431 beyond).
	// Default (and 0) DefaultMaxHeaderBytes (64 KiB).
	MaxHeaderBytes int
	// MaxConnections bounds the API listener's open connections; more
	// wait to be accepted. Default DefaultMaxConnections; 0: no bound.
	MaxConnections int
	// MaxInflightExpensive bounds the expensive requests (candidates,
	// claims, lists) running at once; AdmissionQueueTimeout is how long
	// one waits for its turn before a 503 (httpapi/admission/slots.go).
	// Defaults 0: admission.DefaultMaxInflightExpensive() and
	// admission.DefaultQueueTimeout (10s); a negative bound
	// turns admission control off.
	MaxInflightExpensive  int
	AdmissionQueueTimeout time.Duration
}

// Values for Config fields.
const (
	DefaultListen     = "127.0.0.1:8778"
	DefaultDBMaxConns = 16

	DefaultDBStatementTimeout    = 60 * time.Second
	DefaultHTTPReadHeaderTimeout = 30 * time.Second
	DefaultHTTPReadTimeout       = time.Minute
	DefaultHTTPWriteTimeout      = 2 * time.Minute
	DefaultHTTPIdleTimeout       = 2 * time.Minute
	DefaultShutdownGrace         = 10 * time.Second
	// DefaultClaimLeaseInterval: a pass of the lease reaper every 5 s
	// costs one try of an advisory lock and, if taken, one indexed read.
	DefaultClaimLeaseInterval = 5 * time.Second

	// DefaultCandidatesCacheBytes holds a few dozen large answers.
	DefaultCandidatesCacheBytes = 64 << 20

	// MetricsOff is the MetricsListen value that disables /metrics.
	MetricsOff = "off"

	LogFormatText = "text"
	LogFormatJSON = "json"

	// EmbeddedDatabase is the database berthd uses in its embedded cluster.
	EmbeddedDatabase = "berth"
)

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// Default returns the default configuration. DataDir is empty if neither
// $XDG_DATA_HOME nor the home directory is known.
func Default() Config {
	return Config{
		Listen:             DefaultListen,
		DataDir:            defaultDataDir(),
		LogLevel:           "info",
		LogFormat:          LogFormatText,
		Auth:               httpapi.AuthNoAuth2,
		Keystone:           defaultKeystone(),
		Limits:             defaultLimits(),
		Policy:             authz.SetAdmin,
		MaxCandidates:      engine.DefaultMaxCandidates,
		ClaimMaxAttempts:   claims.DefaultMaxAttempts,
		ClaimCandidates:    claims.DefaultClaimCandidates,
		ClaimSubsetSize:    1,
		ClaimWriters:       ledger.DefaultClaimWriters,
		ProviderWriters:    ledger.DefaultProviderWriters,
		ClaimFailureTTL:    ledger.DefaultClaimFailureTTL,
		ClaimLeaseMax:      claims.DefaultLeaseMax,
		ShadowBudget:       shadow.DefaultBudget,
		SnapshotRefresh:    ledger.DefaultSnapshotRefresh,
		ChangeLogRetention: ledger.DefaultChangeLogRetention,
		DBMaxConns:         DefaultDBMaxConns,
		OTelExporter:       telemetry.ExporterNone,

		ClaimLeaseInterval:    DefaultClaimLeaseInterval,
		AuditMigrationAge:     audit.DefaultAuditMigrationAge,
		AuditStateAge:         audit.DefaultAuditStateAge,
		DBStatementTimeout:    DefaultDBStatementTimeout,
		MigrateOnStart:        true,
		HTTPReadHeaderTimeout: DefaultHTTPReadHeaderTimeout,
		HTTPReadTimeout:       DefaultHTTPReadTimeout,
		HTTPWriteTimeout:      DefaultHTTPWriteTimeout,
		HTTPIdleTimeout:       DefaultHTTPIdleTimeout,
		ShutdownGrace:         DefaultShutdownGrace,
		MaxHeaderBytes:        DefaultMaxHeaderBytes,
		MaxConnections:        DefaultMaxConnections,
		CandidatesCacheBytes:  DefaultCandidatesCacheBytes,
	}
}

// RootDataDir is the default data directory when berthd runs as root. The
// embedded cluster then runs as the postgres user, who must reach its
// directories: under /var/lib the data directory is postgres's own
// (pgcluster.MakeHome), and no home directory is opened to it.
const RootDataDir = "/var/lib/berth"

func defaultDataDir() string {
	if os.Geteuid() == 0 {
		return RootDataDir
	}
	return userDataDir()
}

// userDataDir is the data directory of an ordinary user:
// $XDG_DATA_HOME/berth, else ~/.local/share/berth ("" if neither is
// known). berthd used it as root too before RootDataDir.
func userDataDir() string {
	if xdg := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "berth")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "berth")
	}
	return ""
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen address %q: want host:port", c.Listen))
	}
	if _, _, err := net.SplitHostPort(c.Pprof); c.Pprof != "" && err != nil {
		errs = append(errs, fmt.Errorf("pprof address %q: want host:port", c.Pprof))
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") &&
		!strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		errs = append(errs, errors.New("database URL must start with postgres:// or postgresql://"))
	}
	if c.DatabaseURL == "" && c.DataDir == "" {
		errs = append(errs, errors.New("no database URL and no data directory for the embedded database"))
	}
	if _, ok := logLevels[c.LogLevel]; !ok {
		errs = append(errs, fmt.Errorf("log level %q: want debug, info, warn or error", c.LogLevel))
	}
	if c.LogFormat != LogFormatText && c.LogFormat != LogFormatJSON {
		errs = append(errs, fmt.Errorf("log format %q: want text or json", c.LogFormat))
	}
	if c.LogFlushInterval < 0 || c.LogFlushInterval > maxLogFlushInterval {
		errs = append(errs, fmt.Errorf("log flush interval %s: want 0 to %s", c.LogFlushInterval, maxLogFlushInterval))
	}
	switch c.Auth {
	case httpapi.AuthNoAuth2, httpapi.AuthKeystoneHeaders, httpapi.AuthKeystone:
		if c.TokenFile != "" {
			errs = append(errs, errors.New("a token file is only used with auth \"tokens\""))
		}
		if c.Auth == httpapi.AuthKeystone {
			errs = append(errs, c.Keystone.validate())
		}
	case httpapi.AuthTokens:
		if c.TokenFile == "" {
			errs = append(errs, errors.New("auth \"tokens\" needs a token file"))
		}
	default:
		errs = append(errs, fmt.Errorf("auth %q: want one of %s", c.Auth, strings.Join(httpapi.AuthStrategies(), ", ")))
	}
	errs = append(errs, c.Limits.validate(c.Auth))
	if !slices.Contains(authz.Sets(), c.Policy) {
		errs = append(errs, fmt.Errorf("policy %q: want one of %s", c.Policy, strings.Join(authz.Sets(), ", ")))
	}
	for _, o := range c.CORSAllowedOrigins {
		if err := httpapi.ValidateOrigin(o); err != nil {
			errs = append(errs, err)
		}
	}
	if c.DBMaxConns < 1 || c.DBMaxConns > 10000 {
		errs = append(errs, fmt.Errorf("db max conns %d: want 1 to 10000", c.DBMaxConns))
	}
	if c.DBMinConns < 0 || c.DBMinConns > c.DBMaxConns {
		errs = append(errs, fmt.Errorf("db min conns %d: want 0 to db max conns (%d)", c.DBMinConns, c.DBMaxConns))
	}
	for _, d := range []struct {
		what string
		v    time.Duration
	}{
		{"db connect timeout", c.DBConnectTimeout}, {"db acquire timeout", c.DBAcquireTimeout},
		{"db statement timeout", c.DBStatementTimeout},
		{"http read header timeout", c.HTTPReadHeaderTimeout}, {"http read timeout", c.HTTPReadTimeout},
		{"http write timeout", c.HTTPWriteTimeout}, {"http idle timeout", c.HTTPIdleTimeout},
		{"shutdown delay", c.ShutdownDelay}, {"shutdown grace", c.ShutdownGrace},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: want 0 or more", d.what, d.v))
		}
	}
	if c.DBStatementTimeout > 0 && c.DBStatementTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("db statement timeout %v: want at least 1ms", c.DBStatementTimeout))
	}
	if c.MetricsListen != "" && c.MetricsListen != MetricsOff {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("metrics listen %q: want host:port, or off", c.MetricsListen))
		} else if c.MetricsListen == c.Listen && !strings.HasSuffix(c.Listen, ":0") {
			errs = append(errs, fmt.Errorf("metrics listen %q: same as the API listener; leave it empty to serve /metrics there", c.MetricsListen))
		}
	}
	if c.SnapshotRefresh == 0 {
		errs = append(errs, fmt.Errorf("snapshot refresh: want a positive duration, or negative to disable"))
	}
	if c.ChangeLogRetention < 30*time.Second {
		errs = append(errs, fmt.Errorf("change log retention %v: want at least 30s", c.ChangeLogRetention))
	}
	if c.CandidatesCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("candidates cache bytes %d: want 0 or more", c.CandidatesCacheBytes))
	}
	if c.MaxCandidates < 1 {
		errs = append(errs, fmt.Errorf("max candidates %d: want at least 1", c.MaxCandidates))
	}
	if c.ClaimMaxAttempts < 1 || c.ClaimMaxAttempts > claims.MaxMaxAttempts {
		errs = append(errs, fmt.Errorf("claim max attempts %d: want 1 to %d", c.ClaimMaxAttempts, claims.MaxMaxAttempts))
	}
	if c.ClaimCandidates == 0 {
		errs = append(errs, fmt.Errorf("claim candidates: want a positive number, or negative to rank every candidate"))
	}
	if c.ClaimFailureTTL == 0 {
		errs = append(errs, fmt.Errorf("claim failure ttl: want a positive duration, or negative to remember for ever"))
	}
	if c.ShadowBudget < 0.01 || c.ShadowBudget > 1 {
		errs = append(errs, fmt.Errorf("shadow budget %v: want 0.01 to 1", c.ShadowBudget))
	}
	if c.ClaimLeaseMax < time.Second || c.ClaimLeaseMax%time.Second != 0 {
		errs = append(errs, fmt.Errorf("claim lease max %v: want whole seconds, at least 1s", c.ClaimLeaseMax))
	}
	if c.ClaimLeaseInterval == 0 {
		errs = append(errs, fmt.Errorf("claim lease interval: want a positive duration, or negative to never reap here"))
	}
	if c.AuditMigrationAge < 0 || c.AuditStateAge < 0 {
		errs = append(errs, fmt.Errorf("audit ages %s, %s: want positive durations (0: the default)", c.AuditMigrationAge, c.AuditStateAge))
	}
	if c.ClaimWriters < 0 || c.ClaimWriters > 64 {
		errs = append(errs, fmt.Errorf("claim writers %d: want 0 to 64", c.ClaimWriters))
	}
	if c.ProviderWriters < 0 || c.ProviderWriters > 64 {
		errs = append(errs, fmt.Errorf("provider writers %d: want 0 to 64", c.ProviderWriters))
	}
	if c.ClaimSubsetSize < 0 {
		errs = append(errs, fmt.Errorf("claim subset size %d: want 0 or more", c.ClaimSubsetSize))
	}
	for _, f := range []struct{ what, path string }{{"scheduler policy", c.SchedulerPolicy}, {"scriptlet", c.Scriptlet}} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.what, err))
		} else if st.IsDir() {
			errs = append(errs, fmt.Errorf("%s: %s is a directory", f.what, f.path))
		}
	}
	if !slices.Contains(telemetry.Exporters(), c.OTelExporter) {
		errs = append(errs, fmt.Errorf("otel exporter %q: want one of %v", c.OTelExporter, telemetry.Exporters()))
	}
	errs = append(errs, c.validateGuards()...)
	return errors.Join(errs...)
}

// maxLogFlushInterval bounds LogFlushInterval, and so the lines a
// process killed outright loses.
const maxLogFlushInterval = 10 * time.Second

// NewLogger returns the logger c asks for, writing to w. c must be
// valid. Records logged with a request's context carry its request_id
// and, when it is traced, trace_id and span_id. When w is a
// *telemetry.LogWriter, every warning and error flushes it.
func (c Config) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[c.LogLevel]}
	var h slog.Handler
	if c.LogFormat == LogFormatJSON {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	if lw, ok := w.(*telemetry.LogWriter); ok {
		h = lw.FlushAbove(h, slog.LevelWarn)
	}
	return slog.New(instrument.LogHandler(h))
}

// NewLogWriter returns the writer of the log lines c asks for, to w:
// buffered for LogFlushInterval. Close it before the process exits.
func (c Config) NewLogWriter(w io.Writer) *telemetry.LogWriter {
	return telemetry.NewLogWriter(w, c.LogFlushInterval)
}

// LoadSchedulerPolicy builds the claims policy from the SchedulerPolicy
// and Scriptlet files; nil when neither is set.
func (c Config) LoadSchedulerPolicy(log *slog.Logger) (*scheduler.Policy, error) {
	if c.SchedulerPolicy == "" && c.Scriptlet == "" {
		return nil, nil
	}
	var pc scheduler.PolicyConfig
	if c.SchedulerPolicy != "" {
		data, err := os.ReadFile(c.SchedulerPolicy)
		if err != nil {
			return nil, err
		}
		if pc, err = scheduler.ParsePolicyConfig(data); err != nil {
			return nil, fmt.Errorf("%s: %w", c.SchedulerPolicy, err)
		}
	}
	var scripts scheduler.Scriptlets
	if c.Scriptlet != "" {
		src, err := os.ReadFile(c.Scriptlet)
		if err != nil {
			return nil, err
		}
		prog, err := scriptlet.Compile(c.Scriptlet, src)
		if err != nil {
			return nil, err // names the file
		}
		scripts = scriptlet.NewRuntime(scriptlet.Static{Default: prog}, scriptlet.Limits{})
	}
	return scheduler.NewPolicy(pc, nil, scripts)
}
