package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/cmd/berthd/daemon"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   func(string) string
		check func(t *testing.T, c daemon.Config)
	}{
		{"defaults", nil, env(), func(t *testing.T, c daemon.Config) {
			if c.Listen != "127.0.0.1:8778" || c.Auth != "noauth2" || c.Policy != "admin" || c.PolicyFile != "" ||
				len(c.CORSAllowedOrigins) != 0 || c.MaxCandidates != 10000 ||
				c.RandomizeCandidates || c.OTelExporter != "none" || c.LogLevel != "info" || c.DatabaseURL != "" {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{"env", nil, env(
			"BERTH_LISTEN", "0.0.0.0:9000",
			"BERTH_DATABASE_URL", "postgres://a@/b",
			"DATABASE_URL", "postgres://ignored@/x",
			"BERTH_RANDOMIZE_CANDIDATES", "true",
			"BERTH_MAX_CANDIDATES", "42",
			"BERTH_LOG_LEVEL", "debug",
			"BERTH_LOG_FORMAT", "json",
			"BERTH_OTEL_EXPORTER", "stdout",
			"BERTH_DATA_DIR", "/srv/berth",
			"BERTH_INSECURE_ALLOW_NOAUTH_ON_NETWORK", "true",
		), func(t *testing.T, c daemon.Config) {
			if c.Listen != "0.0.0.0:9000" || c.DatabaseURL != "postgres://a@/b" || !c.RandomizeCandidates ||
				!c.InsecureAllowNoAuthOnNetwork ||
				c.MaxCandidates != 42 || c.LogLevel != "debug" || c.LogFormat != "json" ||
				c.OTelExporter != "stdout" || c.DataDir != "/srv/berth" {
				t.Errorf("from env: %+v", c)
			}
		}},
		{"audit thresholds", []string{"--audit-migration-age", "2h"}, env("BERTH_AUDIT_STATE_AGE", "15m"),
			func(t *testing.T, c daemon.Config) {
				if c.AuditMigrationAge != 2*time.Hour || c.AuditStateAge != 15*time.Minute {
					t.Errorf("audit thresholds: %s, %s", c.AuditMigrationAge, c.AuditStateAge)
				}
			}},
		{"flags beat env", []string{"--listen", "127.0.0.1:1", "--max-candidates=7", "--randomize-candidates=false"},
			env("BERTH_LISTEN", "0.0.0.0:9000", "BERTH_MAX_CANDIDATES", "42", "BERTH_RANDOMIZE_CANDIDATES", "1"),
			func(t *testing.T, c daemon.Config) {
				if c.Listen != "127.0.0.1:1" || c.MaxCandidates != 7 || c.RandomizeCandidates {
					t.Errorf("flags: %+v", c)
				}
			}},
		{"DATABASE_URL and PORT for the conformance harness", nil,
			env("DATABASE_URL", "postgres://postgres@/gabbi?host=/tmp&port=5432", "PORT", "40001"),
			func(t *testing.T, c daemon.Config) {
				if c.Listen != "127.0.0.1:40001" || c.DatabaseURL != "postgres://postgres@/gabbi?host=/tmp&port=5432" {
					t.Errorf("harness env: %+v", c)
				}
			}},
		{"policy and CORS from env", nil, env(
			"BERTH_POLICY", "secure",
			"BERTH_POLICY_FILE", "/etc/berth/policy.yaml",
			"BERTH_CORS_ALLOWED_ORIGINS", "http://a.example, https://b.example",
			"BERTH_AUTH", "keystone-headers",
		), func(t *testing.T, c daemon.Config) {
			if c.Policy != "secure" || c.PolicyFile != "/etc/berth/policy.yaml" || c.Auth != "keystone-headers" ||
				strings.Join(c.CORSAllowedOrigins, " ") != "http://a.example https://b.example" {
				t.Errorf("from env: %+v", c)
			}
		}},
		{"repeated CORS flag beats env", []string{"--cors-allowed-origin", "http://a.example",
			"--cors-allowed-origin=http://b.example,http://c.example", "--policy", "open"},
			env("BERTH_CORS_ALLOWED_ORIGINS", "http://env.example", "BERTH_POLICY", "legacy"),
			func(t *testing.T, c daemon.Config) {
				if c.Policy != "open" || strings.Join(c.CORSAllowedOrigins, " ") != "http://a.example http://b.example http://c.example" {
					t.Errorf("flags: %+v", c)
				}
			}},
		{"pool, timeouts and shutdown from env and flags", []string{"--shutdown-grace", "20s", "--migrate-on-start=false"},
			env("BERTH_DB_MIN_CONNS", "2", "BERTH_DB_CONNECT_TIMEOUT", "3s", "BERTH_DB_STATEMENT_TIMEOUT", "15s",
				"BERTH_HTTP_READ_TIMEOUT", "10s", "BERTH_HTTP_WRITE_TIMEOUT", "0", "BERTH_SHUTDOWN_DELAY", "5s",
				"BERTH_SHUTDOWN_GRACE", "1s", "BERTH_METRICS_LISTEN", "0.0.0.0:9090"),
			func(t *testing.T, c daemon.Config) {
				if c.DBMinConns != 2 || c.DBConnectTimeout != 3*time.Second || c.DBStatementTimeout != 15*time.Second ||
					c.HTTPReadTimeout != 10*time.Second || c.HTTPWriteTimeout != 0 || c.ShutdownDelay != 5*time.Second ||
					c.ShutdownGrace != 20*time.Second || c.MigrateOnStart || c.MetricsListen != "0.0.0.0:9090" ||
					c.HTTPIdleTimeout != daemon.DefaultHTTPIdleTimeout {
					t.Errorf("%+v", c)
				}
			}},
		{"keystone from env", []string{"--keystone-cache-ttl", "1m"}, env(
			"BERTH_AUTH", "keystone", "BERTH_KEYSTONE_AUTH_URL", "http://keystone:5000/v3",
			"BERTH_KEYSTONE_USERNAME", "placement", "BERTH_KEYSTONE_PASSWORD_FILE", "/run/secrets/pw",
			"BERTH_KEYSTONE_PROJECT_NAME", "service", "BERTH_KEYSTONE_CACHE_SIZE", "500",
			"BERTH_KEYSTONE_CACHE_TTL", "10m"),
			func(t *testing.T, c daemon.Config) {
				k := c.Keystone
				if c.Auth != "keystone" || k.AuthURL != "http://keystone:5000/v3" || k.Username != "placement" ||
					k.PasswordFile != "/run/secrets/pw" || k.ProjectName != "service" || k.UserDomainName != "Default" ||
					k.ProjectDomainName != "Default" || k.CacheTTL != time.Minute || k.CacheSize != 500 {
					t.Errorf("%+v", k)
				}
			}},
		{"PORT loses to BERTH_LISTEN", nil, env("PORT", "40001", "BERTH_LISTEN", "127.0.0.1:2"),
			func(t *testing.T, c daemon.Config) {
				if c.Listen != "127.0.0.1:2" {
					t.Errorf("Listen = %s", c.Listen)
				}
			}},
		{"PORT loses to --listen", []string{"-listen=127.0.0.1:3"}, env("PORT", "40001"),
			func(t *testing.T, c daemon.Config) {
				if c.Listen != "127.0.0.1:3" {
					t.Errorf("Listen = %s", c.Listen)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(tc.args, tc.env, new(bytes.Buffer))
			if err != nil {
				t.Fatalf("parseConfig: %v", err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) string
		want string
	}{
		{"bad env bool", nil, env("BERTH_RANDOMIZE_CANDIDATES", "maybe"), "$BERTH_RANDOMIZE_CANDIDATES"},
		{"bad env int", nil, env("BERTH_MAX_CANDIDATES", "lots"), "$BERTH_MAX_CANDIDATES"},
		{"bad PORT", nil, env("PORT", "http"), "$PORT"},
		{"tokens without file", []string{"--auth", "tokens"}, env(), "needs a token file"},
		{"unknown policy", []string{"--policy", "strict"}, env(), `policy "strict"`},
		{"bad origin", []string{"--cors-allowed-origin", "http://a.example/"}, env(), "CORS origin"},
		{"token file without tokens", []string{"--auth", "keystone-headers", "--token-file", "x"}, env(), "only used with"},
		{"unknown auth", []string{"--auth", "kerberos"}, env(), "want one of noauth2, tokens, keystone-headers, keystone"},
		{"keystone without url", []string{"--auth", "keystone", "--keystone-username", "placement",
			"--keystone-password", "x", "--keystone-project-name", "service"}, env(), "keystone auth url: required"},
		{"keystone without user", []string{"--auth", "keystone", "--keystone-auth-url", "http://k:5000/v3"}, env(), "needs a username"},
		{"keystone password twice", []string{"--auth", "keystone", "--keystone-auth-url", "http://k:5000/v3",
			"--keystone-username", "placement", "--keystone-password", "x", "--keystone-password-file", "f",
			"--keystone-project-name", "service"}, env(), "not both"},
		{"keystone half an app credential", []string{"--auth", "keystone", "--keystone-auth-url", "http://k:5000/v3",
			"--keystone-application-credential-id", "abc"}, env(), "both its id and its secret"},
		{"keystone cache ttl", []string{"--auth", "keystone", "--keystone-auth-url", "http://k:5000/v3",
			"--keystone-application-credential-id", "abc", "--keystone-application-credential-secret", "s",
			"--keystone-cache-ttl", "0s"}, env(), "keystone cache ttl"},
		{"bad exporter", []string{"--otel-exporter", "jaeger"}, env(), "otel exporter"},
		{"negative grace", []string{"--shutdown-grace", "-1s"}, env(), "shutdown grace"},
		{"min over max conns", []string{"--db-min-conns", "20", "--db-max-conns", "4"}, env(), "db min conns"},
		{"bad metrics listen", []string{"--metrics-listen", "everywhere"}, env(), "metrics listen"},
		{"bad env duration", nil, env("BERTH_DB_STATEMENT_TIMEOUT", "5"), "$BERTH_DB_STATEMENT_TIMEOUT"},
		{"stray argument", []string{"serve"}, env(), "unexpected argument"},
		{"not a postgres url", []string{"--database-url", "mysql://x"}, env(), "postgres://"},
		{"unknown flag", []string{"--colour"}, env(), "colour"},
		{"noauth2 on every interface", []string{"--listen", "0.0.0.0:8778"}, env(), "refusing --auth noauth2 on 0.0.0.0:8778"},
		{"noauth2 on a host name", nil, env("BERTH_LISTEN", "berth.example:8778", "BERTH_INSECURE_ALLOW_NOAUTH_ON_NETWORK", "false"),
			"--insecure-allow-noauth-on-network"},
		{"tiny header limit", []string{"--max-header-bytes", "100"}, env(), "max header bytes"},
		{"negative connection limit", []string{"--max-connections", "-1"}, env(), "max connections"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.args, tc.env, new(bytes.Buffer))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestHelpDocumentsEveryFlagAndEnv(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, env(), &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: err = %v", err)
	}
	cfg := daemon.Default()
	newFlagSet(&cfg).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out.String(), "--"+f.Name) {
			t.Errorf("help lacks --%s", f.Name)
		}
	})
	for _, o := range options() {
		for _, e := range o.envs {
			if !strings.Contains(out.String(), "$"+e) {
				t.Errorf("help lacks $%s", e)
			}
		}
		if newFlagSet(&cfg).Lookup(o.flag) == nil {
			t.Errorf("option %s has no flag", o.flag)
		}
	}
}

func TestRunCommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, env(), &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "berthd ") {
		t.Errorf("version: code %d, out %q", code, stdout.String())
	}
	if code := run([]string{"frobnicate"}, env(), &stdout, &stderr); code != exitUsage {
		t.Errorf("unknown command: code %d", code)
	}
	if code := run([]string{"serve", "--help"}, env(), &stdout, &stderr); code != exitOK {
		t.Errorf("serve --help: code %d", code)
	}
	if code := run([]string{"--log-level", "loud"}, env(), &stdout, &stderr); code != exitUsage {
		t.Errorf("bad flag value: code %d", code)
	}
}

// TestConfigFileUnderEnvAndFlags: Placement's configuration file sets
// what environment variables and flags leave alone; they override it.
func TestConfigFileUnderEnvAndFlags(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "placement.conf")
	if err := os.WriteFile(conf, []byte(`[api]
auth_strategy = keystone
[keystone_authtoken]
auth_url = http://keystone:5000/v3
username = placement
password = from-file
project_name = service
region_name = RegionOne
[placement]
max_allocation_candidates = 500
[placement_database]
connection = postgresql+psycopg2://placement@db/placement
[cors]
allowed_origin = https://file.example
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, pc, err := loadConfig([]string{"--config-file", conf, "--max-candidates", "42",
		"--cors-allowed-origin", "https://flag.example"},
		env("BERTH_KEYSTONE_USERNAME", "from-env"), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	k := c.Keystone
	if c.Auth != "keystone" || k.AuthURL != "http://keystone:5000/v3" || k.Username != "from-env" || k.Password != "from-file" ||
		c.MaxCandidates != 42 || c.DatabaseURL != "postgresql://placement@db/placement" ||
		strings.Join(c.CORSAllowedOrigins, ",") != "https://flag.example" || strings.Join(c.ConfigFiles, ",") != conf {
		t.Errorf("%+v", c)
	}
	if strings.Join(pc.Unused, ",") != "keystone_authtoken.region_name" {
		t.Errorf("unused %v", pc.Unused)
	}
	// From the environment too; a MySQL database is refused, with the way on.
	os.WriteFile(conf, []byte("[placement_database]\nconnection = mysql+pymysql://p:pw@db/placement\n"), 0o600)
	_, _, err = loadConfig(nil, env("BERTH_CONFIG_FILE", conf), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "berth import placement") {
		t.Errorf("a MySQL database: %v", err)
	}
}
