package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
)

// ErrNotInstalled means the PostgreSQL server binaries could not be found.
var ErrNotInstalled = errors.New("pgcluster: PostgreSQL server binaries (initdb, pg_ctl, postgres) not found")

// serverBinaries are the programs FindBinaries requires in one directory.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// debianRoot is where Debian and Ubuntu install one directory per major
// version, e.g. /usr/lib/postgresql/15/bin.
const debianRoot = "/usr/lib/postgresql"

// FindBinaries returns the directory holding initdb, pg_ctl and postgres.
// It looks in each directory of $PATH first, then in the highest
// version's directory under /usr/lib/postgresql (Debian and Ubuntu do not
// put the server binaries on $PATH), then /usr/local/pgsql/bin. It returns
// an error wrapping ErrNotInstalled when none has all three.
func FindBinaries() (dir string, err error) {
	var candidates []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d != "" {
			candidates = append(candidates, d)
		}
	}
	candidates = append(candidates, debianBinDirs(debianRoot)...)
	candidates = append(candidates, "/usr/local/pgsql/bin")
	for _, d := range candidates {
		if hasServerBinaries(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w on $PATH or under %s/<version>/bin", ErrNotInstalled, debianRoot)
}

// debianBinDirs lists root/<major>/bin, highest major version first.
func debianBinDirs(root string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	type version struct {
		major float64
		dir   string
	}
	var vs []version
	for _, e := range entries {
		// Versions before 10 are named like "9.6".
		major, err := strconv.ParseFloat(e.Name(), 64)
		if err != nil {
			continue
		}
		vs = append(vs, version{major, filepath.Join(root, e.Name(), "bin")})
	}
	slices.SortFunc(vs, func(a, b version) int {
		switch {
		case a.major > b.major:
			return -1
		case a.major < b.major:
			return 1
		}
		return 0
	})
	dirs := make([]string, len(vs))
	for i, v := range vs {
		dirs[i] = v.dir
	}
	return dirs
}

func hasServerBinaries(dir string) bool {
	for _, name := range serverBinaries {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// EnsureInstalled makes sure FindBinaries succeeds. When the binaries are
// missing and this process is root on a Debian-like system (apt-get on
// $PATH and /etc/debian_version present), it runs `apt-get update` and
// `apt-get install -y --no-install-recommends postgresql`
// non-interactively, which takes a minute or so. Otherwise it returns an
// error wrapping ErrNotInstalled that says what to install.
func EnsureInstalled(ctx context.Context, logger *slog.Logger) error {
	if _, err := FindBinaries(); err == nil {
		return nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	_, debErr := os.Stat("/etc/debian_version")
	aptGet, aptErr := exec.LookPath("apt-get")
	if os.Geteuid() != 0 || debErr != nil || aptErr != nil {
		return fmt.Errorf("%w: install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; "+
			"Fedora/RHEL: dnf install postgresql-server; macOS: brew install postgresql) "+
			"or point Berth at an existing server with a database URL", ErrNotInstalled)
	}
	logger.Info("PostgreSQL server not found; installing it with apt-get (this takes a minute)")
	for _, args := range [][]string{
		{"update"},
		{"install", "-y", "--no-install-recommends", "postgresql"},
	} {
		cmd := exec.CommandContext(ctx, aptGet, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdin = nil
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("pgcluster: apt-get %s: %w\n%s", args[0], err, tail(out.Bytes(), 20))
		}
		logger.Debug("apt-get done", "args", args)
	}
	dir, err := FindBinaries()
	if err != nil {
		return fmt.Errorf("pgcluster: installed postgresql but still: %w", err)
	}
	logger.Info("PostgreSQL installed", "bin_dir", dir)
	return nil
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	b = bytes.TrimRight(b, "\n")
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
