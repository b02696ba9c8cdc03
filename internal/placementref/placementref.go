package placementref

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The programs Placement needs (python3-placement, uwsgi, uwsgi-plugin-python3).
const (
	ManageProgram = "/usr/bin/placement-manage"
	APIProgram    = "/usr/bin/placement-api"
	UWSGIProgram  = "/usr/bin/uwsgi"
)

// Bounds only a hung process reaches.
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = 30 * time.Second
)

// Server is a running Placement.
type Server struct {
	// URL is its base URL, http://127.0.0.1:PORT.
	URL string
	log *logBuffer
}

// Log returns what Placement and uwsgi printed so far.
func (s *Server) Log() string { return s.log.String() }

// Available reports whether the programs Start needs are installed, and
// if not, which one is missing.
func Available() error {
	for _, p := range []string{ManageProgram, APIProgram, UWSGIProgram} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("placementref: %s is missing (apt-get install python3-placement uwsgi uwsgi-plugin-python3)", p)
		}
	}
	return nil
}

// SQLAlchemyURL turns a postgres:// URL (as ledgertest and pgcluster make
// them, with the socket directory in a host query parameter or a TCP host
// in the authority) into the psycopg2 URL placement.conf wants.
func SQLAlchemyURL(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("placementref: not a postgres:// URL: %q", dbURL)
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

// Start creates Placement's schema in the empty database at dbURL
// (placement-manage db sync), serves Placement with noauth2 (send
// X-Auth-Token: admin) on a free loopback port, waits until GET / answers,
// and stops it (SIGTERM to its process group) when t ends.
func Start(t testing.TB, dbURL string) *Server {
	t.Helper()
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	dburl, err := SQLAlchemyURL(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := fmt.Sprintf("[DEFAULT]\ndebug = false\n[api]\nauth_strategy = noauth2\n[placement_database]\nconnection = %s\n", dburl)
	confFile := filepath.Join(dir, "placement.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ManageProgram, "--config-file", confFile, "db", "sync").CombinedOutput(); err != nil {
		t.Fatalf("placementref: placement-manage db sync: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cmd := exec.Command(UWSGIProgram, "--plugin", "python3", "--http11-socket", addr,
		"--wsgi-file", APIProgram, "--processes", "1", "--threads", "1", "--master", "--die-on-term")
	cmd.Env = append(os.Environ(), "OS_PLACEMENT_CONFIG_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("placementref: start uwsgi: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
		}
	})
	s := &Server{URL: "http://" + addr, log: log}
	client := &http.Client{Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		resp, err := client.Get(s.URL + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-exited:
			t.Fatalf("placementref: uwsgi exited before serving:\n%s", log)
		case <-ctx.Done():
			t.Fatalf("placementref: Placement did not answer GET / within %v:\n%s", startTimeout, log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logBuffer collects a process's output; it is written by the process's
// copier goroutines and read by the test.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
