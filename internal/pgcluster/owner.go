package pgcluster

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverUser is the system account the server runs as when we are root.
const serverUser = "postgres"

// owner is the account that owns the cluster's files and runs its
// processes when that is not the current user. A nil *owner means "the
// current user".
type owner struct {
	name     string
	uid, gid int
}

// clusterOwner returns nil when the current process may run PostgreSQL
// itself, and the postgres system user when it is root (PostgreSQL refuses
// to run as root).
func clusterOwner() (*owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root needs a %q system user to run PostgreSQL as "+
			"(the postgresql package creates it): %w", serverUser, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: uid of %s: %w", serverUser, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: gid of %s: %w", serverUser, err)
	}
	return &owner{name: serverUser, uid: uid, gid: gid}, nil
}

// sysProcAttr returns the attributes for a server process: its own process
// group, so that a terminal's Ctrl-C reaches only the parent, which then
// stops the server in order; SIGINT (fast shutdown) if the parent dies
// first; and, when o is not nil, o's credentials.
func (o *owner) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	if o != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid)}
	}
	return attr
}

// prepareDir creates dir (mode 0700) if needed, gives it to o and makes
// every ancestor traversable by o.
func (o *owner) prepareDir(dir string, logger *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if o == nil {
		return nil
	}
	if err := os.Chown(dir, o.uid, o.gid); err != nil {
		return fmt.Errorf("pgcluster: give %s to %s: %w", dir, o.name, err)
	}
	return o.makeTraversable(filepath.Dir(dir), logger)
}

// makeTraversable adds search (x) permission for others to dir and each of
// its ancestors that lacks it, so that o can reach the cluster's
// directories. Nothing becomes listable or readable that was not before.
func (o *owner) makeTraversable(dir string, logger *slog.Logger) error {
	for {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if !o.canSearch(fi) {
			mode := fi.Mode().Perm() | 0o001
			if err := os.Chmod(dir, mode); err != nil {
				return fmt.Errorf("pgcluster: make %s traversable for %s: %w", dir, o.name, err)
			}
			logger.Warn("made directory traversable for the PostgreSQL server user",
				"dir", dir, "user", o.name, "mode", fmt.Sprintf("%04o", mode))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// canSearch reports whether o may traverse a directory with info fi.
func (o *owner) canSearch(fi fs.FileInfo) bool {
	perm := fi.Mode().Perm()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if int(st.Uid) == o.uid {
			return perm&0o100 != 0
		}
		if int(st.Gid) == o.gid {
			return perm&0o010 != 0
		}
	}
	return perm&0o001 != 0
}
