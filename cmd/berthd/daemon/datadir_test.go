package daemon

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/berthd/berth/internal/pgcluster"
)

// reachableTempDir is a temporary directory of the test that the
// cluster's account may pass through: as root the server runs as
// postgres, and berthd changes no permissions of directories it did not
// create, so the test opens its own (only the test's directories).
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeCluster makes dir look like a data directory with a cluster.
func fakeCluster(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, pgSubdir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, pgSubdir, "PG_VERSION"), []byte("17\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOlderDataDir covers a cluster an older berthd left, as root, in the
// user's data directory: used where it is if the server's account can
// reach it, else berthd stops and says what to do, touching nothing.
func TestOlderDataDir(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	reach := func(ok bool) func(string) error {
		return func(string) error {
			if ok {
				return nil
			}
			return pgcluster.ErrUnreachable
		}
	}
	root, user := filepath.Join(t.TempDir(), "var-lib-berth"), filepath.Join(t.TempDir(), "home-berth")

	// Nothing older: the root default.
	if got, err := olderDataDir(root, user, reach(false), log); err != nil || got != root {
		t.Errorf("no older cluster: %q %v", got, err)
	}
	fakeCluster(t, user)
	// Reachable as things are: used where it is, with a warning that
	// says how to move it.
	logs.Reset()
	if got, err := olderDataDir(root, user, reach(true), log); err != nil || got != user {
		t.Errorf("reachable older cluster: %q %v", got, err)
	}
	if !strings.Contains(logs.String(), "mv "+user+" "+root) {
		t.Errorf("the warning does not say how to move it: %s", logs.String())
	}
	// Unreachable: an error that says what to do; nothing is created.
	_, err := olderDataDir(root, user, reach(false), log)
	if !errors.Is(err, pgcluster.ErrUnreachable) || !strings.Contains(err.Error(), "mv "+user+" "+root) ||
		!strings.Contains(err.Error(), "--data-dir "+user) || !strings.Contains(err.Error(), "untouched") {
		t.Errorf("unreachable older cluster: %v", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the root data directory was created: %v", err)
	}
	// Both: the root default wins, with a warning.
	fakeCluster(t, root)
	logs.Reset()
	if got, err := olderDataDir(root, user, reach(false), log); err != nil || got != root {
		t.Errorf("both clusters: %q %v", got, err)
	}
	if !strings.Contains(logs.String(), "not used") {
		t.Errorf("no warning for the older cluster left aside: %s", logs.String())
	}
}

// TestEmbeddedClusterLoosensNothing runs berthd's embedded cluster as root
// in a data directory whose parent the postgres user cannot pass: berthd
// refuses with pgcluster.ErrUnreachable and leaves the parent's mode as it
// was (older berthd made it 0701, as it did root's home). In a data
// directory it creates under a reachable parent, the cluster starts and
// the directory is postgres's own.
func TestEmbeddedClusterLoosensNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the embedded cluster runs as another account only when berthd is root")
	}
	if _, err := pgcluster.FindBinaries(); err != nil {
		t.Skip(err)
	}
	closed := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.DataDir = filepath.Join(closed, "berth")
	_, err := openDatabase(context.Background(), cfg, testLogger(t))
	if !errors.Is(err, pgcluster.ErrUnreachable) || !strings.Contains(err.Error(), closed) {
		t.Fatalf("a data directory behind a closed one: %v", err)
	}
	if fi, err := os.Stat(closed); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the closed directory's mode changed: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(cfg.DataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the data directory was created behind it: %v", err)
	}

	cfg.DataDir = filepath.Join(reachableTempDir(t), "berth")
	db, err := openDatabase(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("a data directory it creates: %v", err)
	}
	defer db.close(context.Background(), testLogger(t))
	fi, err := os.Stat(cfg.DataDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v %v", fi, err)
	}
	if err := pgcluster.Reachable(filepath.Join(cfg.DataDir, pgSubdir)); err != nil {
		t.Errorf("the cluster's directory: %v", err)
	}
}

// TestEmbeddedClusterInAnEmptyDirectory runs berthd's embedded cluster as
// root in a data directory made as `mktemp -d` makes one (root's, mode
// 0700, empty), as docs/examples.md suggests: berthd gives it to the
// postgres user and starts. A directory of root's that holds something
// is not taken over: berthd refuses, saying what to do, and changes
// nothing.
func TestEmbeddedClusterInAnEmptyDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the embedded cluster runs as another account only when berthd is root")
	}
	if _, err := pgcluster.FindBinaries(); err != nil {
		t.Skip(err)
	}
	parent := reachableTempDir(t)
	full := filepath.Join(parent, "full")
	if err := os.Mkdir(full, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "notes"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.DataDir = full
	_, err := openDatabase(context.Background(), cfg, testLogger(t))
	if !errors.Is(err, pgcluster.ErrUnreachable) || !strings.Contains(err.Error(), "chown -R postgres: "+full) ||
		!strings.Contains(err.Error(), "empty directory") {
		t.Fatalf("a data directory of root's that is not empty: %v", err)
	}
	if fi, err := os.Stat(full); err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the directory changed: %v %v", fi, err)
	}

	empty, err := os.MkdirTemp(parent, "tmp.")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = empty
	db, err := openDatabase(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatalf("an empty data directory of root's: %v", err)
	}
	defer db.close(context.Background(), testLogger(t))
	fi, err := os.Stat(empty)
	if err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid == 0 {
		t.Fatalf("data directory: %v %v", fi, err)
	}
	if err := pgcluster.Reachable(filepath.Join(empty, pgSubdir)); err != nil {
		t.Errorf("the cluster's directory: %v", err)
	}
}
