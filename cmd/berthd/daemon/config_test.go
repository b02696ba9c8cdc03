package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/authz"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestDefaultDataDir(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/xdg")
	if got := userDataDir(); got != "/xdg/berth" {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/ops")
	if got := userDataDir(); got != "/home/ops/.local/share/berth" {
		t.Errorf("with HOME: %s", got)
	}
	// As root, never a home directory: the cluster's account owns it.
	want := userDataDir()
	if os.Geteuid() == 0 {
		want = RootDataDir
	}
	if got := Default().DataDir; got != want {
		t.Errorf("default: %s, want %s", got, want)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Config{Listen: "nope", LogLevel: "loud", LogFormat: "xml", LogFlushInterval: time.Minute, Auth: "tokens", OTelExporter: "x",
		Policy: "strict", CORSAllowedOrigins: []string{"http://ok.example", "ok.example"}}
	err := c.Validate()
	for _, want := range []string{"listen address", "no database URL", "log level", "log format", "log flush interval",
		"needs a token file", "max candidates", "otel exporter", `policy "strict"`, `CORS origin "ok.example"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestLoadTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	content := `# token  roles  project  user
admin-secret   admin
svc-nova       service,reader  proj-1  nova

reader-x       reader          proj-2
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadTokens(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]authz.Credentials{
		"admin-secret": {Roles: []string{"admin"}},
		"svc-nova":     {Roles: []string{"service", "reader"}, ProjectID: "proj-1", UserID: "nova"},
		"reader-x":     {Roles: []string{"reader"}, ProjectID: "proj-2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadTokens = %+v\nwant %+v", got, want)
	}
}

func TestLoadTokensErrors(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"empty", "# nothing\n", "no tokens"},
		{"no roles", "lonely\n", ":1: want TOKEN"},
		{"too many fields", "t admin p u extra\n", ":1: want TOKEN"},
		{"empty role", "t admin,,reader\n", "empty role"},
		{"duplicate", "t admin\nt reader\n", ":2: token repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadTokens(path, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	content := `# looser usages, and a typo
"placement:usages": "role:reader"
"placement:usage": "@"
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e, err := LoadPolicy(Config{Policy: "secure", PolicyFile: path}, log)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.CheckString("placement:usages"); got != "role:reader" || e.Set() != "secure" {
		t.Errorf("set %s, placement:usages = %q", e.Set(), got)
	}
	if !strings.Contains(logs.String(), "rule=placement:usage ") {
		t.Errorf("no warning about the typo: %s", logs.String())
	}

	if err := os.WriteFile(path, []byte(`"placement:usages": "role:reader or"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPolicy(Config{Policy: "secure", PolicyFile: path}, log); err == nil {
		t.Error("a bad check string was accepted")
	}
	if e, err := LoadPolicy(Default(), log); err != nil || e.Set() != "admin" {
		t.Errorf("default: %v, %v", e, err)
	}
}

func TestLoadSchedulerPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := Default()
	if p, err := cfg.LoadSchedulerPolicy(nil); p != nil || err != nil {
		t.Fatalf("no files: %v %v", p, err)
	}
	cfg.SchedulerPolicy = write("policy.json", `{"weighers": [{"name": "spread", "factor": 2}]}`)
	cfg.Scriptlet = write("s.star", "def instance_placement(request, candidate_members):\n    return None\n")
	p, err := cfg.LoadSchedulerPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, weighers := p.Describe(); weighers["spread"] != 2 {
		t.Errorf("weighers %v", weighers)
	}
	cfg.SchedulerPolicy = write("bad.json", `{"filters": [{"name": "nope"}]}`)
	if _, err := cfg.LoadSchedulerPolicy(nil); err == nil || !strings.Contains(err.Error(), `unknown filter "nope"`) {
		t.Errorf("bad policy: %v", err)
	}
	cfg.Scriptlet = filepath.Join(dir, "missing.star")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "scriptlet") {
		t.Errorf("missing scriptlet passes validation: %v", err)
	}
}

func TestValidateOpsSettings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		adjust func(*Config)
		want   string // "" for valid
	}{
		{"metrics off", func(c *Config) { c.MetricsListen = MetricsOff }, ""},
		{"metrics on its own port", func(c *Config) { c.MetricsListen = "0.0.0.0:9090" }, ""},
		{"metrics on the API address", func(c *Config) { c.MetricsListen = c.Listen }, "same as the API listener"},
		{"metrics not an address", func(c *Config) { c.MetricsListen = "9090" }, "metrics listen"},
		{"negative idle timeout", func(c *Config) { c.HTTPIdleTimeout = -1 }, "http idle timeout"},
		{"statement timeout under a millisecond", func(c *Config) { c.DBStatementTimeout = time.Microsecond }, "at least 1ms"},
		{"min conns over max", func(c *Config) { c.DBMinConns = c.DBMaxConns + 1 }, "db min conns"},
		{"no request timeout", func(c *Config) { c.RequestTimeout = -1 }, ""},
		{"negative audit age", func(c *Config) { c.AuditStateAge = -time.Minute }, "audit ages"},
		{"audit ages of zero: the defaults", func(c *Config) { c.AuditMigrationAge, c.AuditStateAge = 0, 0 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.DataDir = "/tmp/x"
			tc.adjust(&c)
			err := c.Validate()
			if tc.want == "" && err != nil {
				t.Fatalf("valid settings refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
