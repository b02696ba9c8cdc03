package daemon

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/internal/testing/keystonetest"
	"github.com/berthd/berth/internal/testing/placementtest"
	"github.com/berthd/berth/ledger/engine"
)

func writeConf(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlacementConfOfTheTests reads the placement.conf the tests serve
// the real Placement with (internal/testing/placementtest): its PostgreSQL
// database (a postgresql+psycopg2 URL, the socket in a query parameter),
// noauth2, debug off; nothing unused.
func TestPlacementConfOfTheTests(t *testing.T) {
	sqla, err := placementtest.SQLAlchemyURL("postgres://postgres@/berth?host=/tmp/pg/run&port=5432")
	if err != nil {
		t.Fatal(err)
	}
	conf := writeConf(t, t.TempDir(), "placement.conf", placementtest.ConfText(sqla))
	cfg := Default()
	cfg.Auth = httpapi.AuthTokens
	pc, err := ApplyPlacementConf(&cfg, []string{conf})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != "postgresql://postgres@/berth?host=/tmp/pg/run&port=5432" || cfg.Auth != httpapi.AuthNoAuth2 ||
		cfg.LogLevel != "info" || len(pc.Unused) != 0 || len(pc.Notes) != 0 {
		t.Errorf("database %q, auth %q, log level %q, unused %v, notes %v", cfg.DatabaseURL, cfg.Auth, cfg.LogLevel, pc.Unused, pc.Notes)
	}
}

// TestPlacementConfKeystone reads a placement.conf as a deployment tool
// writes it for Keystone (devstack's options), naming Berth's test
// service user, and checks berthd's --auth keystone settings are those
// the Keystone tests give (internal/keystone's api_test), and the options
// Berth does not use are named.
func TestPlacementConfKeystone(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "policy.yaml", "\"placement:resource_providers:list\": \"role:reader\"\n")
	conf := writeConf(t, dir, "placement.conf", `[DEFAULT]
debug = True
log_dir = /var/log/placement

[api]
auth_strategy = keystone

[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1/identity
auth_url = http://127.0.0.1:5000/v3
auth_type = password
username = `+keystonetest.Placement+`
password = `+keystonetest.Password(keystonetest.Placement)+`#not;a comment
project_name = `+keystonetest.ServiceProject+`
user_domain_name = Default
project_domain_name = Default
memcached_servers = localhost:11211
service_token_roles_required = True

[placement]
randomize_allocation_candidates = true
max_allocation_candidates = 500

[placement_database]
connection = postgresql+psycopg2://placement:se%40cret@db.example/placement?sslmode=require
max_pool_size = 10

[oslo_policy]
policy_file = policy.yaml

[cors]
allowed_origin = https://dashboard.example, https://other.example
`)
	cfg := Default()
	pc, err := ApplyPlacementConf(&cfg, []string{conf})
	if err != nil {
		t.Fatal(err)
	}
	want := Default().Keystone
	want.AuthURL = "http://127.0.0.1:5000/v3"
	want.Username = keystonetest.Placement
	want.Password = keystonetest.Password(keystonetest.Placement) + "#not;a comment"
	want.ProjectName = keystonetest.ServiceProject
	if !reflect.DeepEqual(cfg.Keystone, want) {
		t.Errorf("keystone\n%+v, want\n%+v", cfg.Keystone, want)
	}
	if cfg.Auth != httpapi.AuthKeystone || cfg.LogLevel != "debug" || !cfg.RandomizeCandidates || cfg.MaxCandidates != 500 ||
		cfg.DatabaseURL != "postgresql://placement:se%40cret@db.example/placement?sslmode=require" ||
		cfg.PolicyFile != filepath.Join(dir, "policy.yaml") ||
		!reflect.DeepEqual(cfg.CORSAllowedOrigins, []string{"https://dashboard.example", "https://other.example"}) {
		t.Errorf("%+v", cfg)
	}
	wantUnused := []string{"DEFAULT.log_dir", "keystone_authtoken.www_authenticate_uri", "keystone_authtoken.memcached_servers",
		"keystone_authtoken.service_token_roles_required", "placement_database.max_pool_size"}
	if !reflect.DeepEqual(pc.Unused, wantUnused) {
		t.Errorf("unused %v, want %v", pc.Unused, wantUnused)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the configuration from the file: %v", err)
	}
}

// TestPlacementConfValues covers oslo.config's spellings and the values
// Berth refuses, and several files, the later winning.
func TestPlacementConfValues(t *testing.T) {
	dir := t.TempDir()
	apply := func(text string) (Config, PlacementConf, error) {
		cfg := Default()
		pc, err := ApplyPlacementConf(&cfg, []string{writeConf(t, dir, "p.conf", text)})
		return cfg, pc, err
	}
	for _, debug := range []string{"True", "true", "1", "yes", "ON"} {
		if cfg, _, err := apply("[DEFAULT]\ndebug = " + debug + "\n"); err != nil || cfg.LogLevel != "debug" {
			t.Errorf("debug = %s: %q %v", debug, cfg.LogLevel, err)
		}
	}
	if cfg, _, err := apply("[DEFAULT]\ndebug = False\n"); err != nil || cfg.LogLevel != "info" {
		t.Errorf("debug = False: %q %v", cfg.LogLevel, err)
	}
	for _, url := range []string{"postgresql://u@h/db", "postgres://u@h/db", "postgresql+psycopg2://u@h/db", "postgresql+pg8000://u@h/db"} {
		if cfg, _, err := apply("[placement_database]\nconnection = " + url + "\n"); err != nil || cfg.DatabaseURL != "postgresql://u@h/db" {
			t.Errorf("%s: %q %v", url, cfg.DatabaseURL, err)
		}
	}
	for text, want := range map[string]string{
		"[placement_database]\nconnection = mysql+pymysql://placement:secret@db/placement\n": "berth import placement",
		"[placement_database]\nconnection = sqlite:////var/lib/placement.db\n":               "needs PostgreSQL",
		"[api]\nauth_strategy = magic\n":                                                     "keystone and noauth2",
		"[DEFAULT]\ndebug = maybe\n":                                                         "not a boolean",
		"[placement]\nmax_allocation_candidates = 0\n":                                       "positive",
		"[keystone_authtoken]\nauth_type = v3token\n":                                        "password",
	} {
		_, _, err := apply(text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error repeats a password: %v", err)
		}
	}
	cfg, pc, err := apply("[placement]\nmax_allocation_candidates = -1\n[oslo_policy]\npolicy_file = missing.yaml\n")
	if err != nil || cfg.MaxCandidates != engine.DefaultMaxCandidates || cfg.PolicyFile != "" || len(pc.Notes) != 2 {
		t.Errorf("-1 and a missing policy file: %d %q %v %v", cfg.MaxCandidates, cfg.PolicyFile, pc.Notes, err)
	}

	// Several files: the later one wins, option by option.
	first := writeConf(t, dir, "first.conf", "[api]\nauth_strategy = keystone\n[placement]\nmax_allocation_candidates = 7\n")
	second := writeConf(t, dir, "second.conf", "[placement]\nmax_allocation_candidates = 9\n")
	cfg = Default()
	if _, err := ApplyPlacementConf(&cfg, []string{first, second}); err != nil || cfg.MaxCandidates != 9 || cfg.Auth != httpapi.AuthKeystone {
		t.Errorf("two files: %d %q %v", cfg.MaxCandidates, cfg.Auth, err)
	}
	if _, err := ApplyPlacementConf(&cfg, []string{filepath.Join(dir, "nope.conf")}); err == nil {
		t.Error("a missing file is not an error")
	}
}
