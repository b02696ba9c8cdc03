package pgcluster

import (
	"errors"
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

// ServerAccount names the account that runs the server and owns the
// directories Start and MakeHome create: serverUser when the caller is
// root, else the caller.
func ServerAccount() string {
	if os.Geteuid() == 0 {
		return serverUser
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Geteuid())
}

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

// prepareDir creates dir (mode 0700) if needed and gives it to o. The
// ancestors it creates are o's too (mkdirOwned); the others must let o
// through already (see reachable). With loosenParents, those that do not
// are made traversable instead (makeTraversable: test clusters in
// temporary directories only).
func (o *owner) prepareDir(dir string, loosenParents bool, logger *slog.Logger) error {
	if o != nil && !loosenParents {
		// Before anything is created where the server could not use it.
		if err := o.reachable(filepath.Dir(dir)); err != nil {
			return err
		}
	}
	if err := o.mkdirOwned(dir); err != nil {
		return err
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
	if loosenParents {
		return o.makeTraversable(filepath.Dir(dir), logger)
	}
	return nil
}

// mkdirOwned creates dir and its missing ancestors, each mode 0700 and
// given to o (nil: the caller), as MkdirAll would create them for the
// caller.
func (o *owner) mkdirOwned(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("pgcluster: %w", err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if o != nil {
			if err := os.Chown(missing[i], o.uid, o.gid); err != nil {
				return fmt.Errorf("pgcluster: give %s to %s: %w", missing[i], o.name, err)
			}
		}
	}
	return nil
}

// ErrUnreachable is the error kind of a directory the server's account
// cannot reach without a change of its ancestors' permissions.
var ErrUnreachable = errors.New("pgcluster: the PostgreSQL server's account cannot reach the directory")

// reachable reports an error wrapping ErrUnreachable, naming the first
// directory (dir or an ancestor) that exists and that o may not traverse.
// Directories that do not exist are skipped: prepareDir and MakeHome
// create them as o's.
func (o *owner) reachable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !o.canSearch(fi):
			return fmt.Errorf("%w: %s (mode %04o) does not let the %s user through, and the permissions of "+
				"directories the cluster did not create are not changed: choose a directory it can reach, "+
				"such as one under /var/lib, or grant it passage yourself (chmod o+x %s)",
				ErrUnreachable, d, fi.Mode().Perm(), o.name, d)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("pgcluster: %w", err)
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// Reachable reports whether the account that runs the server (the
// postgres user when the caller is root, else the caller) can reach dir
// as the permissions are now: nil, or an error wrapping ErrUnreachable
// that names the first directory in the way.
func Reachable(dir string) error {
	o, err := clusterOwner()
	if err != nil || o == nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return o.reachable(abs)
}

// MakeHome creates dir, if it does not exist, as a private directory
// (mode 0700) of the account that runs the server (the postgres user when
// the caller is root, else the caller), for a cluster's data and socket
// directories to go in: they are then reachable without changing the
// permissions of any other directory. An existing dir the server's
// account can enter is left as it is. One it cannot enter is given to
// it (mode 0700) when it is empty and the caller's (root's), as `mktemp
// -d` makes one: the caller hands it over, nothing in it is exposed;
// any other is refused (ErrUnreachable, saying what to do). It returns
// whether it created or took over dir.
func MakeHome(dir string) (bool, error) {
	o, err := clusterOwner()
	if err != nil {
		return false, err
	}
	if fi, err := os.Stat(dir); err == nil {
		return o.takeOver(dir, fi)
	}
	if o != nil {
		if err := o.reachable(filepath.Dir(dir)); err != nil {
			return false, err
		}
	}
	return true, o.mkdirOwned(dir)
}

// takeOver gives the existing directory dir (fi) to o when o cannot
// enter it and it is empty and the caller's (see MakeHome), and reports
// whether it did.
func (o *owner) takeOver(dir string, fi fs.FileInfo) (bool, error) {
	if o == nil || o.canSearch(fi) {
		return false, nil
	}
	if err := o.reachable(filepath.Dir(dir)); err != nil {
		return false, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("pgcluster: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || len(entries) > 0 || !ok || int(st.Uid) != os.Geteuid() {
		return false, fmt.Errorf("%w: %s (mode %04o) does not let the %s user through, and it is not an empty "+
			"directory of yours that berthd could give it: give it to that user (chown -R %s: %s), or name an "+
			"empty directory (such as one mktemp -d makes) or one that does not exist yet, which berthd gives it",
			ErrUnreachable, dir, fi.Mode().Perm(), o.name, o.name, dir)
	}
	if err := os.Chown(dir, o.uid, o.gid); err != nil {
		return false, fmt.Errorf("pgcluster: give %s to %s: %w", dir, o.name, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return false, fmt.Errorf("pgcluster: %w", err)
	}
	return true, nil
}

// makeTraversable adds search (x) permission for others to dir and each of
// its ancestors that lacks it, so that o can reach the cluster's
// directories. Nothing becomes listable or readable that was not before.
// Only for Options.LoosenParents.
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
