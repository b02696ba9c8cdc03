package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/berthd/berth/cmd/berthd/daemon"
)

// option is one configuration setting as a flag plus the environment
// variables that set it when the flag is absent, in order of precedence.
type option struct {
	flag string
	arg  string // placeholder in the usage text; "" for a boolean
	envs []string
	help string
	// noDefault hides the default in the usage text (it depends on the
	// machine, or is empty).
	noDefault bool
}

// options lists berthd's settings in the order the usage text shows them.
func options() []option {
	return []option{
		{flag: "config-file", arg: "FILE", envs: []string{"BERTH_CONFIG_FILE"}, noDefault: true,
			help: "OpenStack Placement's own configuration file (oslo.config INI, such as\n" +
				"/etc/placement/placement.conf): its database, auth strategy, keystone_authtoken,\n" +
				"allocation candidate, policy file, CORS and debug options apply; options Berth\n" +
				"does not use are named in one warning. Repeatable: a later file wins. Flags and\n" +
				"environment variables override it\n" +
				"(docs/operations.md#placements-configuration-file)."},
		{flag: "listen", arg: "ADDR", envs: []string{"BERTH_LISTEN"},
			help: "TCP host:port to serve the Placement API on. When neither the flag nor\n" +
				"BERTH_LISTEN is set but PORT is, 127.0.0.1:$PORT."},
		{flag: "database-url", arg: "URL", envs: []string{"BERTH_DATABASE_URL", "DATABASE_URL"}, noDefault: true,
			help: "postgres:// URL of an existing database, migrated on start. Empty: run the\n" +
				"embedded PostgreSQL cluster in <data-dir>/pg and use its database \"berth\"."},
		{flag: "data-dir", arg: "DIR", envs: []string{"BERTH_DATA_DIR"}, noDefault: true,
			help: "Directory for the embedded cluster (pg/ data, run/ socket). Default\n" +
				"/var/lib/berth as root, else $XDG_DATA_HOME/berth, else ~/.local/share/berth."},
		{flag: "log-level", arg: "LEVEL", envs: []string{"BERTH_LOG_LEVEL"},
			help: "Least severe level logged: debug, info, warn or error."},
		{flag: "log-format", arg: "FORMAT", envs: []string{"BERTH_LOG_FORMAT"},
			help: "Log format on standard error: text or json."},
		{flag: "log-flush-interval", arg: "DURATION", envs: []string{"BERTH_LOG_FLUSH_INTERVAL"},
			help: "Hold log lines in memory and write them together at most this long after the\n" +
				"first (warnings and errors at once, and on exit); a process killed outright\n" +
				"(SIGKILL, out of memory) loses those lines. 0: every line at once. At most 10s."},
		{flag: "auth", arg: "STRATEGY", envs: []string{"BERTH_AUTH"},
			help: "Authentication: noauth2 (development and tests only: trust X-Auth-Token as\n" +
				"user[:project], \"admin\" being admin, and X-Roles, X-Project-Id and\n" +
				"OpenStack-System-Scope when sent), tokens (static tokens from --token-file),\n" +
				"keystone-headers (trust the identity headers set by an authenticating proxy\n" +
				"such as keystonemiddleware; UNSAFE unless only that proxy can reach berthd) or\n" +
				"keystone (validate X-Auth-Token with Keystone as Berth's service user:\n" +
				"--keystone-*; docs/deploy.md#behind-keystone)."},
		{flag: "keystone-auth-url", arg: "URL", envs: []string{"BERTH_KEYSTONE_AUTH_URL"}, noDefault: true,
			help: "Keystone's Identity endpoint for --auth keystone, e.g. http://keystone:5000/v3;\n" +
				"also the uri of 401 answers' WWW-Authenticate: Keystone challenge."},
		{flag: "keystone-username", arg: "NAME", envs: []string{"BERTH_KEYSTONE_USERNAME"}, noDefault: true,
			help: "Berth's service user (with the service role), e.g. placement."},
		{flag: "keystone-password", arg: "PASSWORD", envs: []string{"BERTH_KEYSTONE_PASSWORD"}, noDefault: true,
			help: "Its password (prefer the environment variable or --keystone-password-file)."},
		{flag: "keystone-password-file", arg: "FILE", envs: []string{"BERTH_KEYSTONE_PASSWORD_FILE"}, noDefault: true,
			help: "File whose first line is the password."},
		{flag: "keystone-project-name", arg: "NAME", envs: []string{"BERTH_KEYSTONE_PROJECT_NAME"}, noDefault: true,
			help: "Project of the service user's token, e.g. service."},
		{flag: "keystone-user-domain-name", arg: "NAME", envs: []string{"BERTH_KEYSTONE_USER_DOMAIN_NAME"},
			help: "Domain of the service user."},
		{flag: "keystone-project-domain-name", arg: "NAME", envs: []string{"BERTH_KEYSTONE_PROJECT_DOMAIN_NAME"},
			help: "Domain of the service user's project."},
		{flag: "keystone-application-credential-id", arg: "ID", envs: []string{"BERTH_KEYSTONE_APPLICATION_CREDENTIAL_ID"}, noDefault: true,
			help: "Log in with this application credential instead of a user and password."},
		{flag: "keystone-application-credential-secret", arg: "SECRET", envs: []string{"BERTH_KEYSTONE_APPLICATION_CREDENTIAL_SECRET"}, noDefault: true,
			help: "The application credential's secret."},
		{flag: "keystone-cache-ttl", arg: "DURATION", envs: []string{"BERTH_KEYSTONE_CACHE_TTL"},
			help: "Longest a validated token is trusted without asking Keystone again (never past\n" +
				"its expiry): how long a revoked token may still work."},
		{flag: "keystone-cache-size", arg: "N", envs: []string{"BERTH_KEYSTONE_CACHE_SIZE"},
			help: "Most validated tokens cached (least recently used dropped first)."},
		{flag: "keystone-timeout", arg: "DURATION", envs: []string{"BERTH_KEYSTONE_TIMEOUT"},
			help: "Longest wait for one answer from Keystone. After a validation that waited it in\n" +
				"vain, new tokens get 503 at once for 5s, then one request probes Keystone again."},
		{flag: "limits-source", arg: "SOURCE", envs: []string{"BERTH_LIMITS_SOURCE"},
			help: "Where projects' limits come from (docs/quotas.md): berth (set with PUT\n" +
				"/limits/{project_id} and /registered_limits, kept in the database) or keystone\n" +
				"(Keystone's unified limits, read with a system-scoped token of Berth's service\n" +
				"user, which needs the reader role on the system; needs --auth keystone)."},
		{flag: "keystone-limits-service", arg: "NAME", envs: []string{"BERTH_KEYSTONE_LIMITS_SERVICE"},
			help: "Service (name, else type) whose limits are read from Keystone."},
		{flag: "keystone-limits-region", arg: "REGION", envs: []string{"BERTH_KEYSTONE_LIMITS_REGION"}, noDefault: true,
			help: "Read only the limits of this region. Unset: every region's (of one resource\n" +
				"limited in several, the smallest)."},
		{flag: "limits-cache-ttl", arg: "DURATION", envs: []string{"BERTH_LIMITS_CACHE_TTL"},
			help: "How long limits read from Keystone are used before they are read again: a\n" +
				"limit changed in Keystone applies within it. While Keystone cannot be read,\n" +
				"the limits last read stay in force."},
		{flag: "limits-enforce", arg: "WHERE", envs: []string{"BERTH_LIMITS_ENFORCE"}, noDefault: true,
			help: "Where limits apply besides claims (which always are checked): placement-api\n" +
				"checks PUT and POST /allocations and POST /reshaper too. Unset: claims only\n" +
				"(Nova does its own accounting)."},
		{flag: "insecure-allow-noauth-on-network", envs: []string{"BERTH_INSECURE_ALLOW_NOAUTH_ON_NETWORK"},
			help: "Let --auth noauth2 serve on an address beyond loopback, where anyone who can\n" +
				"reach it is admin. Without it berthd refuses to start so."},
		{flag: "token-file", arg: "FILE", envs: []string{"BERTH_TOKEN_FILE"}, noDefault: true,
			help: "Static tokens for --auth tokens, one per line:\n" +
				"TOKEN ROLE[,ROLE...] [PROJECT_ID [USER_ID]]; # starts a comment line\n" +
				"(docs/operations.md#tokens-static-tokens)."},
		{flag: "policy", arg: "SET", envs: []string{"BERTH_POLICY"},
			help: "Policy rules: admin (every operation needs the admin role), secure\n" +
				"(Placement's defaults since 9.0: admin or service, project readers see their\n" +
				"own usages, system-scoped tokens refused), legacy (Placement's deprecated\n" +
				"defaults) or open (everything allowed to every authenticated user);\n" +
				"docs/operations.md#policy."},
		{flag: "policy-file", arg: "FILE", envs: []string{"BERTH_POLICY_FILE"}, noDefault: true,
			help: "YAML or JSON mapping of Placement policy rule names to oslo.policy check\n" +
				"strings (like Placement's policy.yaml), overriding rules of --policy."},
		{flag: "cors-allowed-origin", arg: "ORIGIN", envs: []string{"BERTH_CORS_ALLOWED_ORIGINS"}, noDefault: true,
			help: "Enable CORS for these origins (scheme://host[:port], or *); comma-separated,\n" +
				"and the flag may be repeated. Unset: no CORS, OPTIONS answers 405\n" +
				"(docs/operations.md#cors)."},
		{flag: "randomize-candidates", envs: []string{"BERTH_RANDOMIZE_CANDIDATES"},
			help: "Shuffle allocation candidates instead of returning them in a stable order\n" +
				"(Placement's randomize_allocation_candidates)."},
		{flag: "max-candidates", arg: "N", envs: []string{"BERTH_MAX_CANDIDATES"},
			help: "Most allocation candidates one request generates: the search stops there,\n" +
				"before the request's limit trims them (Placement's max_allocation_candidates)."},
		{flag: "candidates-cache-bytes", arg: "N", envs: []string{"BERTH_CANDIDATES_CACHE_BYTES"},
			help: "Bytes of GET /allocation_candidates answers kept for a query asked again of\n" +
				"an unchanged cloud (docs/operations.md#the-answer-cache); 0 keeps none."},
		{flag: "claim-max-attempts", arg: "N", envs: []string{"BERTH_CLAIM_MAX_ATTEMPTS"},
			help: "Most writes one POST /claims tries on successive candidates (1 to 50)."},
		{flag: "claim-candidates", arg: "N", envs: []string{"BERTH_CLAIM_CANDIDATES"},
			help: "Candidates a claim ranks first, drawn at random across root providers; it\n" +
				"ranks all of them only when none of those fits or all lost to concurrent\n" +
				"claims. Negative: always all."},
		{flag: "claim-subset-size", arg: "N", envs: []string{"BERTH_CLAIM_SUBSET_SIZE"},
			help: "A claim writes one of its best N candidates, picked at random, to spread\n" +
				"concurrent claims; 1 picks at random among the ties with the best score,\n" +
				"0 the best (ties in a stable order)."},
		{flag: "claim-failure-ttl", arg: "DURATION", envs: []string{"BERTH_CLAIM_FAILURE_TTL"},
			help: "How long a reschedule keeps avoiding a provider the consumer failed on;\n" +
				"older failures are forgotten. Negative: for ever."},
		{flag: "claim-lease-max", arg: "DURATION", envs: []string{"BERTH_CLAIM_LEASE_MAX"},
			help: "Longest lease a claim may ask for (lease_seconds, docs/claims.md#leases);\n" +
				"whole seconds."},
		{flag: "shadow-budget", arg: "F", envs: []string{"BERTH_SHADOW_BUDGET"},
			help: "Share of its time the worker running shadows (a candidate scriptlet or policy\n" +
				"beside real claims, docs/policies.md#shadows) may spend; claims past it are\n" +
				"not shadowed (0.01 to 1)."},
		{flag: "claim-lease-interval", arg: "DURATION", envs: []string{"BERTH_CLAIM_LEASE_INTERVAL"},
			help: "How often this berthd looks for claim leases that ran out and releases them\n" +
				"(one berthd at a time does, under a PostgreSQL advisory lock). Negative: never\n" +
				"here."},
		{flag: "audit-migration-age", arg: "DURATION", envs: []string{"BERTH_AUDIT_MIGRATION_AGE"},
			help: "GET /audit's default threshold for stale migrations: a MIGRATION consumer\n" +
				"created longer ago is reported (a request's migration_age overrides it;\n" +
				"docs/operations.md#the-allocation-audit)."},
		{flag: "audit-state-age", arg: "DURATION", envs: []string{"BERTH_AUDIT_STATE_AGE"},
			help: "GET /audit's default threshold for stale providers: allocations on a provider\n" +
				"whose last state report is older are reported (a request's state_age overrides it)."},
		{flag: "claim-writers", arg: "N", envs: []string{"BERTH_CLAIM_WRITERS"},
			help: "Batches of new consumers' allocations written at once: claims that arrive\n" +
				"while all writers are busy are committed together, up to 64 per transaction.\n" +
				"0: each claim in a transaction of its own."},
		{flag: "provider-writers", arg: "N", envs: []string{"BERTH_PROVIDER_WRITERS"},
			help: "Groups of provider writes (a create, inventories, aggregates, traits, a\n" +
				"delete) written at once: writes that arrive while all writers are busy are\n" +
				"committed together, up to 32 per transaction. 0: each write in a transaction\n" +
				"of its own."},
		{flag: "snapshot-refresh", arg: "DURATION", envs: []string{"BERTH_SNAPSHOT_REFRESH"},
			help: "How often the in-memory snapshot that candidates and claims are computed from\n" +
				"is reloaded whole from PostgreSQL, a safety net behind the change log (e.g.\n" +
				"5m); negative: never."},
		{flag: "change-log-retention", arg: "DURATION", envs: []string{"BERTH_CHANGE_LOG_RETENTION"},
			help: "How long the change log keeps a write's row for the other berthd processes to\n" +
				"catch up with (e.g. 2m); one that has not caught up for longer reloads its whole\n" +
				"snapshot. At least 30s: idle processes catch up every 15s."},
		{flag: "db-max-conns", arg: "N", envs: []string{"BERTH_DB_MAX_CONNS"},
			help: "Most PostgreSQL connections berthd opens: its pool's size\n" +
				"(docs/operations.md#connection-pool-and-timeouts)."},
		{flag: "db-min-conns", arg: "N", envs: []string{"BERTH_DB_MIN_CONNS"},
			help: "PostgreSQL connections kept open while idle (at most --db-max-conns)."},
		{flag: "db-connect-timeout", arg: "DURATION", envs: []string{"BERTH_DB_CONNECT_TIMEOUT"},
			help: "Bound on opening one database connection; 0: the URL's connect_timeout, else 3s."},
		{flag: "db-acquire-timeout", arg: "DURATION", envs: []string{"BERTH_DB_ACQUIRE_TIMEOUT"},
			help: "Bound on waiting for a pool connection (and BEGIN) before a request fails\n" +
				"with 503; 0: 5s."},
		{flag: "db-statement-timeout", arg: "DURATION", envs: []string{"BERTH_DB_STATEMENT_TIMEOUT"},
			help: "PostgreSQL statement_timeout of berthd's sessions; 0 keeps the server's setting."},
		{flag: "migrate-on-start", envs: []string{"BERTH_MIGRATE_ON_START"},
			help: "Apply pending migrations when serving starts. With false, run `berthd migrate`\n" +
				"first (a Kubernetes Job, say): serve refuses to start on an older schema."},
		{flag: "http-read-header-timeout", arg: "DURATION", envs: []string{"BERTH_HTTP_READ_HEADER_TIMEOUT"},
			help: "Bound on reading a request's header block; 0: none."},
		{flag: "http-read-timeout", arg: "DURATION", envs: []string{"BERTH_HTTP_READ_TIMEOUT"},
			help: "Bound on reading a whole request, body included; 0: none."},
		{flag: "http-write-timeout", arg: "DURATION", envs: []string{"BERTH_HTTP_WRITE_TIMEOUT"},
			help: "Bound from the end of a request's header block to the end of its response; 0: none."},
		{flag: "http-idle-timeout", arg: "DURATION", envs: []string{"BERTH_HTTP_IDLE_TIMEOUT"},
			help: "How long a kept-alive connection may wait for its next request; 0: none."},
		{flag: "max-header-bytes", arg: "N", envs: []string{"BERTH_MAX_HEADER_BYTES"},
			help: "Largest request header block accepted (431 beyond)."},
		{flag: "max-connections", arg: "N", envs: []string{"BERTH_MAX_CONNECTIONS"},
			help: "Most open connections to the API listener; more wait to be accepted. 0: no limit."},
		{flag: "max-inflight-expensive", arg: "N", envs: []string{"BERTH_MAX_INFLIGHT_EXPENSIVE"},
			help: "Most expensive requests (allocation candidates, claims, provider lists,\n" +
				"capacity, usages) running at once; more wait in line. 0: 4 per CPU, at least\n" +
				"16; negative: no limit."},
		{flag: "admission-queue-timeout", arg: "DURATION", envs: []string{"BERTH_ADMISSION_QUEUE_TIMEOUT"},
			help: "How long an expensive request waits for its turn before it is refused with\n" +
				"503 berth.overloaded and Retry-After. 0: 10s."},
		{flag: "request-timeout", arg: "DURATION", envs: []string{"BERTH_REQUEST_TIMEOUT"},
			help: "Bound on the work of one API request; a database call still waiting then\n" +
				"fails with 503. 0: 1m; negative: none."},
		{flag: "shutdown-delay", arg: "DURATION", envs: []string{"BERTH_SHUTDOWN_DELAY"},
			help: "After SIGTERM, keep serving this long with /readyz answering 503, so load\n" +
				"balancers stop routing here first (e.g. 5s on Kubernetes;\n" +
				"docs/operations.md#shutdown)."},
		{flag: "shutdown-grace", arg: "DURATION", envs: []string{"BERTH_SHUTDOWN_GRACE"},
			help: "Then, with the listener closed, how long in-flight requests may run on before\n" +
				"their connections are cut."},
		{flag: "otel-exporter", arg: "NAME", envs: []string{"BERTH_OTEL_EXPORTER"},
			help: "Where traces and metrics are pushed: none, stdout (JSON lines) or otlp\n" +
				"(OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318).\n" +
				"$OTEL_TRACES_EXPORTER and $OTEL_METRICS_EXPORTER (otlp, console, none)\n" +
				"override it per signal; the other OTEL_* variables apply as usual\n" +
				"(docs/operations.md#tracing-and-metrics)."},
		{flag: "metrics-listen", arg: "ADDR", envs: []string{"BERTH_METRICS_LISTEN"}, noDefault: true,
			help: "Where GET /metrics (Prometheus text format) is served. Empty (default): on the\n" +
				"API listener, without authentication; host:port: a listener of its own (with\n" +
				"/healthz and /readyz too); off: nowhere."},
		{flag: "scheduler-policy", arg: "FILE", envs: []string{"BERTH_SCHEDULER_POLICY"}, noDefault: true,
			help: "JSON policy for POST /claims when no stored scheduling policy is the default:\n" +
				"filters, weighers, factors (docs/scheduling.md#scheduling-policies). Empty:\n" +
				"the built-in default (capacity, then spread by free capacity)."},
		{flag: "scriptlet", arg: "FILE", envs: []string{"BERTH_SCRIPTLET"}, noDefault: true,
			help: "Starlark scriptlet for POST /claims: instance_placement(request, candidate_members)\n" +
				"(docs/scheduling.md#starlark-scriptlets)."},
		{flag: "pprof", arg: "ADDR", envs: []string{"BERTH_PPROF"}, noDefault: true,
			help: "Serve Go's net/http/pprof profiles on this host:port (keep it on loopback).\n" +
				"Empty: not served. See docs/performance.md#profiling."},
	}
}

// newFlagSet returns flags bound to the fields of cfg, with cfg's values
// as defaults.
func newFlagSet(cfg *daemon.Config) *flag.FlagSet {
	fs := flag.NewFlagSet("berthd", flag.ContinueOnError)
	fs.Var(&pathsFlag{list: &cfg.ConfigFiles}, "config-file", "")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "")
	fs.DurationVar(&cfg.LogFlushInterval, "log-flush-interval", cfg.LogFlushInterval, "")
	fs.StringVar(&cfg.Auth, "auth", cfg.Auth, "")
	fs.BoolVar(&cfg.InsecureAllowNoAuthOnNetwork, "insecure-allow-noauth-on-network", cfg.InsecureAllowNoAuthOnNetwork, "")
	k := &cfg.Keystone
	fs.StringVar(&k.AuthURL, "keystone-auth-url", k.AuthURL, "")
	fs.StringVar(&k.Username, "keystone-username", k.Username, "")
	fs.StringVar(&k.Password, "keystone-password", k.Password, "")
	fs.StringVar(&k.PasswordFile, "keystone-password-file", k.PasswordFile, "")
	fs.StringVar(&k.ProjectName, "keystone-project-name", k.ProjectName, "")
	fs.StringVar(&k.UserDomainName, "keystone-user-domain-name", k.UserDomainName, "")
	fs.StringVar(&k.ProjectDomainName, "keystone-project-domain-name", k.ProjectDomainName, "")
	fs.StringVar(&k.ApplicationCredentialID, "keystone-application-credential-id", k.ApplicationCredentialID, "")
	fs.StringVar(&k.ApplicationCredentialSecret, "keystone-application-credential-secret", k.ApplicationCredentialSecret, "")
	fs.DurationVar(&k.CacheTTL, "keystone-cache-ttl", k.CacheTTL, "")
	fs.IntVar(&k.CacheSize, "keystone-cache-size", k.CacheSize, "")
	fs.DurationVar(&k.Timeout, "keystone-timeout", k.Timeout, "")
	l := &cfg.Limits
	fs.StringVar(&l.Source, "limits-source", l.Source, "")
	fs.StringVar(&l.KeystoneService, "keystone-limits-service", l.KeystoneService, "")
	fs.StringVar(&l.KeystoneRegion, "keystone-limits-region", l.KeystoneRegion, "")
	fs.DurationVar(&l.CacheTTL, "limits-cache-ttl", l.CacheTTL, "")
	fs.Var(&listFlag{list: &l.Enforce}, "limits-enforce", "")
	fs.StringVar(&cfg.TokenFile, "token-file", cfg.TokenFile, "")
	fs.StringVar(&cfg.Policy, "policy", cfg.Policy, "")
	fs.StringVar(&cfg.PolicyFile, "policy-file", cfg.PolicyFile, "")
	fs.Var(&listFlag{list: &cfg.CORSAllowedOrigins}, "cors-allowed-origin", "")
	fs.BoolVar(&cfg.RandomizeCandidates, "randomize-candidates", cfg.RandomizeCandidates, "")
	fs.IntVar(&cfg.MaxCandidates, "max-candidates", cfg.MaxCandidates, "")
	fs.IntVar(&cfg.CandidatesCacheBytes, "candidates-cache-bytes", cfg.CandidatesCacheBytes, "")
	fs.IntVar(&cfg.ClaimMaxAttempts, "claim-max-attempts", cfg.ClaimMaxAttempts, "")
	fs.IntVar(&cfg.ClaimCandidates, "claim-candidates", cfg.ClaimCandidates, "")
	fs.IntVar(&cfg.ClaimSubsetSize, "claim-subset-size", cfg.ClaimSubsetSize, "")
	fs.DurationVar(&cfg.ClaimFailureTTL, "claim-failure-ttl", cfg.ClaimFailureTTL, "")
	fs.DurationVar(&cfg.ClaimLeaseMax, "claim-lease-max", cfg.ClaimLeaseMax, "")
	fs.Float64Var(&cfg.ShadowBudget, "shadow-budget", cfg.ShadowBudget, "")
	fs.DurationVar(&cfg.ClaimLeaseInterval, "claim-lease-interval", cfg.ClaimLeaseInterval, "")
	fs.DurationVar(&cfg.AuditMigrationAge, "audit-migration-age", cfg.AuditMigrationAge, "")
	fs.DurationVar(&cfg.AuditStateAge, "audit-state-age", cfg.AuditStateAge, "")
	fs.IntVar(&cfg.ClaimWriters, "claim-writers", cfg.ClaimWriters, "")
	fs.IntVar(&cfg.ProviderWriters, "provider-writers", cfg.ProviderWriters, "")
	fs.DurationVar(&cfg.SnapshotRefresh, "snapshot-refresh", cfg.SnapshotRefresh, "")
	fs.DurationVar(&cfg.ChangeLogRetention, "change-log-retention", cfg.ChangeLogRetention, "")
	fs.IntVar(&cfg.DBMaxConns, "db-max-conns", cfg.DBMaxConns, "")
	fs.IntVar(&cfg.DBMinConns, "db-min-conns", cfg.DBMinConns, "")
	fs.DurationVar(&cfg.DBConnectTimeout, "db-connect-timeout", cfg.DBConnectTimeout, "")
	fs.DurationVar(&cfg.DBAcquireTimeout, "db-acquire-timeout", cfg.DBAcquireTimeout, "")
	fs.DurationVar(&cfg.DBStatementTimeout, "db-statement-timeout", cfg.DBStatementTimeout, "")
	fs.BoolVar(&cfg.MigrateOnStart, "migrate-on-start", cfg.MigrateOnStart, "")
	fs.DurationVar(&cfg.HTTPReadHeaderTimeout, "http-read-header-timeout", cfg.HTTPReadHeaderTimeout, "")
	fs.DurationVar(&cfg.HTTPReadTimeout, "http-read-timeout", cfg.HTTPReadTimeout, "")
	fs.DurationVar(&cfg.HTTPWriteTimeout, "http-write-timeout", cfg.HTTPWriteTimeout, "")
	fs.DurationVar(&cfg.HTTPIdleTimeout, "http-idle-timeout", cfg.HTTPIdleTimeout, "")
	fs.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", cfg.MaxHeaderBytes, "")
	fs.IntVar(&cfg.MaxConnections, "max-connections", cfg.MaxConnections, "")
	fs.IntVar(&cfg.MaxInflightExpensive, "max-inflight-expensive", cfg.MaxInflightExpensive, "")
	fs.DurationVar(&cfg.AdmissionQueueTimeout, "admission-queue-timeout", cfg.AdmissionQueueTimeout, "")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "")
	fs.DurationVar(&cfg.ShutdownDelay, "shutdown-delay", cfg.ShutdownDelay, "")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", cfg.ShutdownGrace, "")
	fs.StringVar(&cfg.OTelExporter, "otel-exporter", cfg.OTelExporter, "")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", cfg.MetricsListen, "")
	fs.StringVar(&cfg.SchedulerPolicy, "scheduler-policy", cfg.SchedulerPolicy, "")
	fs.StringVar(&cfg.Scriptlet, "scriptlet", cfg.Scriptlet, "")
	fs.StringVar(&cfg.Pprof, "pprof", cfg.Pprof, "")
	return fs
}

// listFlag is a repeatable flag whose values are comma-separated lists;
// every value is appended, blanks dropped. The first value replaces what
// the list held (a configuration file's), the later ones add to it.
type listFlag struct {
	list  *[]string
	given bool
}

func (l *listFlag) String() string {
	if l == nil || l.list == nil {
		return ""
	}
	return strings.Join(*l.list, ",")
}

func (l *listFlag) Set(v string) error {
	if !l.given {
		*l.list, l.given = nil, true
	}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l.list = append(*l.list, item)
		}
	}
	return nil
}

// pathsFlag is a repeatable flag of file paths, taken whole.
type pathsFlag struct{ list *[]string }

func (p *pathsFlag) String() string {
	if p == nil || p.list == nil {
		return ""
	}
	return strings.Join(*p.list, " ")
}

func (p *pathsFlag) Set(v string) error {
	*p.list = append(*p.list, v)
	return nil
}

// parseConfig is loadConfig without what the configuration files held
// besides settings.
func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (daemon.Config, error) {
	cfg, _, err := loadConfig(args, getenv, stdout)
	return cfg, err
}

// loadConfig builds the configuration from defaults, then Placement's
// configuration files (--config-file, daemon.ApplyPlacementConf), then
// environment variables, then flags (each overriding the one before), and
// validates it. It prints the usage to stdout and returns flag.ErrHelp
// for --help.
func loadConfig(args []string, getenv func(string) string, stdout io.Writer) (daemon.Config, daemon.PlacementConf, error) {
	// The files are named by a flag or the environment, and apply below
	// both: find them first.
	files, err := parseFlagsAndEnv(daemon.Default(), args, getenv, stdout)
	if err != nil {
		return files, daemon.PlacementConf{}, err
	}
	cfg := daemon.Default()
	pc, err := daemon.ApplyPlacementConf(&cfg, files.ConfigFiles)
	if err != nil {
		return cfg, pc, err
	}
	cfg, err = parseFlagsAndEnv(cfg, args, getenv, io.Discard)
	if err != nil {
		return cfg, pc, err
	}
	return cfg, pc, cfg.Validate()
}

// parseFlagsAndEnv sets cfg's fields from environment variables, then
// flags, each overriding the one before.
func parseFlagsAndEnv(cfg daemon.Config, args []string, getenv func(string) string, stdout io.Writer) (daemon.Config, error) {
	fs := newFlagSet(&cfg)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, o := range options() {
		if given[o.flag] {
			continue
		}
		for _, env := range o.envs {
			if v := getenv(env); v != "" {
				if err := fs.Set(o.flag, v); err != nil {
					return cfg, fmt.Errorf("$%s: %w", env, err)
				}
				given[o.flag] = true
				break
			}
		}
	}
	if port := getenv("PORT"); port != "" && !given["listen"] {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return cfg, fmt.Errorf("$PORT %q is not a port number", port)
		}
		cfg.Listen = "127.0.0.1:" + port
	}
	return cfg, nil
}

// printUsage writes the help text: commands, then every flag with its
// environment variables and default.
func printUsage(w io.Writer) {
	def := daemon.Default()
	fs := newFlagSet(&def)
	var b strings.Builder
	b.WriteString(`Usage:
  berthd [serve] [flags]   serve the OpenStack Placement API (the default command)
  berthd migrate [flags]   apply database migrations and exit
  berthd version           print the version and exit

With no database URL, berthd runs its own PostgreSQL cluster in <data-dir>/pg
(as root on Debian or Ubuntu it first installs PostgreSQL with apt-get if it is
missing) and stops it on exit.

SIGINT or SIGTERM shuts berthd down gracefully: /readyz fails for
--shutdown-delay, then in-flight requests get --shutdown-grace to finish.
GET /healthz, /readyz and /metrics need no authentication (docs/operations.md).

Flags (a flag overrides its environment variables, which override the default):
`)
	for _, o := range options() {
		name := "--" + o.flag
		if o.arg != "" {
			name += " " + o.arg
		}
		envs := make([]string, len(o.envs))
		for i, e := range o.envs {
			envs[i] = "$" + e
		}
		fmt.Fprintf(&b, "  %-32s %s\n", name, strings.Join(envs, ", "))
		for _, line := range strings.Split(o.help, "\n") {
			fmt.Fprintf(&b, "      %s\n", line)
		}
		if f := fs.Lookup(o.flag); !o.noDefault && f != nil {
			fmt.Fprintf(&b, "      Default: %s\n", f.DefValue)
		}
	}
	fmt.Fprint(w, b.String())
}
