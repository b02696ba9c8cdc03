package placementtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/berthd/berth/internal/testing/proctest"
)

// Server is a running Placement.
type Server struct {
	URL  string
	dir  string
	cmd  *exec.Cmd
	done chan error
	log  string
}

// Available reports why Placement cannot be started here, or nil.
func Available() error {
	for _, p := range []string{"/usr/bin/placement-manage", "/usr/bin/placement-api"} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("placementtest: %s missing (apt-get install python3-placement)", p)
		}
	}
	if _, err := exec.LookPath("uwsgi"); err != nil {
		return fmt.Errorf("placementtest: uwsgi missing (apt-get install uwsgi-core uwsgi-plugin-python3)")
	}
	return nil
}

// SQLAlchemyURL turns a postgres:// URL (as ledgertest and pgcluster make
// them, with the socket directory in a host query parameter or a TCP host
// in the authority) into the psycopg2 URL placement.conf wants.
func SQLAlchemyURL(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("placementtest: not a postgres:// URL: %q", dbURL)
	}
	out := url.URL{Scheme: "postgresql+psycopg2", User: u.User, Host: u.Host, Path: u.Path}
	q := url.Values{}
	for _, k := range []string{"host", "port", "sslmode"} {
		if v := u.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	out.RawQuery = strings.ReplaceAll(q.Encode(), "%2F", "/")
	return out.String(), nil
}

// ConfText is the placement.conf Start serves Placement with, for the
// database at dbURL (a SQLAlchemy URL: SQLAlchemyURL).
func ConfText(dbURL string) string {
	return fmt.Sprintf("[DEFAULT]\ndebug = false\n[api]\nauth_strategy = noauth2\n[placement_database]\nconnection = %s\n", dbURL)
}

// python3 is the system interpreter Debian's packages are installed for
// (a pyenv shim on PATH would not see them).
const python3 = "/usr/bin/python3"

// Start syncs the schema of the database at dbURL and serves Placement on
// it. Stop ends it.
func Start(ctx context.Context, dbURL string) (_ *Server, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "berth-placement-")
	if err != nil {
		return nil, fmt.Errorf("placementtest: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	conf := filepath.Join(dir, "placement.conf")
	if err := os.WriteFile(conf, []byte(ConfText(dbURL)), 0o600); err != nil {
		return nil, fmt.Errorf("placementtest: %w", err)
	}
	if err := syncConf(ctx, dir, conf); err != nil {
		return nil, err
	}
	ports, err := proctest.FreePorts(1)
	if err != nil {
		return nil, fmt.Errorf("placementtest: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	s := &Server{URL: "http://" + addr, dir: dir, done: make(chan error, 1), log: filepath.Join(dir, "uwsgi.log")}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, fmt.Errorf("placementtest: %w", err)
	}
	defer logf.Close()
	s.cmd = exec.Command("uwsgi", "--plugin", "python3", "--http11-socket", addr,
		"--wsgi-file", "/usr/bin/placement-api", "--processes", "2", "--threads", "1",
		"--master", "--die-on-term", "--disable-logging", "--need-app")
	s.cmd.Env = append(env(dir), "OS_PLACEMENT_CONFIG_DIR="+dir)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("placementtest: start uwsgi: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Sync creates Placement's schema in the database at dbURL with
// `placement-manage db sync`, as an operator does before starting it.
func Sync(ctx context.Context, dbURL string) error {
	if err := Available(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "berth-placement-sync-")
	if err != nil {
		return fmt.Errorf("placementtest: %w", err)
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "placement.conf")
	text := fmt.Sprintf("[placement_database]\nconnection = %s\n", dbURL)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return fmt.Errorf("placementtest: %w", err)
	}
	return syncConf(ctx, dir, conf)
}

func syncConf(ctx context.Context, dir, conf string) error {
	sync := exec.CommandContext(ctx, python3, "/usr/bin/placement-manage", "--config-file", conf, "db", "sync")
	sync.Env = env(dir)
	if out, err := sync.CombinedOutput(); err != nil {
		return fmt.Errorf("placementtest: placement-manage db sync: %v: %s", err, tail(string(out)))
	}
	return nil
}

func env(dir string) []string {
	var out []string
	for _, kv := range os.Environ() {
		// Keep pyenv and virtualenvs from hiding the system's packages.
		if strings.HasPrefix(kv, "PYTHON") || strings.HasPrefix(kv, "VIRTUAL_ENV=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+dir)
}

func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/resource_providers", nil)
		req.Header.Set("X-Auth-Token", "admin")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("placementtest: uwsgi exited (%v): %s", werr, tail(string(b)))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("placementtest: not answering after 90s: %s", tail(string(b)))
		}
	}
}

// Log returns the last lines Placement and uwsgi printed so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return tail(string(b))
}

// Stop ends uwsgi and removes the configuration directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		proctest.StopGroup(s.cmd.Process.Pid, s.done, 30*time.Second)
	}
	os.RemoveAll(s.dir)
}

func tail(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > 8 {
		ls = ls[len(ls)-8:]
	}
	return strings.Join(ls, " | ")
}
