package daemon

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/pgcluster"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// serveAndCheck runs d, checks that / answers, then shuts d down.
func serveAndCheck(t *testing.T, d *Daemon) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx) }()

	resp, err := http.Get("http://" + d.Addr().String() + "/")
	if err != nil {
		cancel()
		t.Fatalf("GET /: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "versions") {
		t.Errorf("GET / = %d %s", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after cancel")
	}
}

func TestDaemonEmbeddedCluster(t *testing.T) {
	if _, err := pgcluster.FindBinaries(); err != nil {
		t.Skip(err)
	}
	cfg := Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = reachableTempDir(t)
	d, err := New(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	serveAndCheck(t, d)
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "run", ".s.PGSQL.5432")); !os.IsNotExist(err) {
		t.Errorf("embedded cluster still has its socket after Run returned: %v", err)
	}

	// The data survives: migrate starts the cluster on the same directory.
	if err := Migrate(context.Background(), cfg, testLogger(t)); err != nil {
		t.Fatalf("Migrate on the embedded cluster: %v", err)
	}
}

func TestDaemonExternalDatabase(t *testing.T) {
	cfg := Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = ledgertest.NewDB(t)
	cfg.DataDir = ""
	if err := Migrate(context.Background(), cfg, testLogger(t)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	d, err := New(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	serveAndCheck(t, d)
}

func TestNewFailsCleanly(t *testing.T) {
	cfg := Default()
	cfg.DatabaseURL = "postgres://nobody@/nodb?host=/nonexistent&port=1&connect_timeout=2"
	if _, err := New(context.Background(), cfg, testLogger(t)); err == nil {
		t.Fatal("New succeeded without a database")
	}
}
