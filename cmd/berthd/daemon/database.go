package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/berthd/berth/internal/pgcluster"
)

// Layout of the data directory.
const (
	pgSubdir     = "pg"  // the embedded cluster's data directory
	socketSubdir = "run" // its unix socket
)

// database is the database berthd uses: an external one (cluster nil) or
// the embedded cluster.
type database struct {
	url     string
	cluster *pgcluster.Cluster
	// tmpSocketDir is a socket directory made under $TMPDIR because
	// DataDir/run was too long for a unix socket path; removed on close.
	tmpSocketDir string
}

// openDatabase returns cfg.DatabaseURL if set. Otherwise it makes sure
// PostgreSQL is installed (installing it as root on Debian/Ubuntu), starts
// the embedded cluster in cfg.DataDir and creates its database.
func openDatabase(ctx context.Context, cfg Config, log *slog.Logger) (*database, error) {
	if cfg.DatabaseURL != "" {
		return &database{url: cfg.DatabaseURL}, nil
	}
	dataDir := cfg.DataDir
	if os.Geteuid() == 0 && dataDir == RootDataDir {
		var err error
		if dataDir, err = olderDataDir(RootDataDir, userDataDir(), pgcluster.Reachable, log); err != nil {
			return nil, err
		}
	}
	db, err := startCluster(ctx, dataDir, false, log)
	if err != nil {
		return nil, err
	}
	if err := db.cluster.CreateDatabase(ctx, EmbeddedDatabase); err != nil {
		_ = db.close(context.WithoutCancel(ctx), log)
		return nil, err
	}
	db.url = db.cluster.URL(EmbeddedDatabase)
	log.Info("using the embedded PostgreSQL", "url", db.url, "data_dir", db.cluster.DataDir(),
		"server_user", pgcluster.ServerAccount())
	return db, nil
}

// startCluster starts a cluster in dataDir/pg with its socket in
// dataDir/run, or in a new directory under $TMPDIR when that path is too
// long for a unix socket.
func startCluster(ctx context.Context, dataDir string, noSync bool, log *slog.Logger) (*database, error) {
	if err := pgcluster.EnsureInstalled(ctx, log); err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	// The server's account owns a data directory berthd creates, or an
	// empty one of the caller's it cannot enter (mktemp -d's); any other
	// that exists must let it through already: berthd changes no
	// permissions of other directories (pgcluster.ErrUnreachable).
	created, err := pgcluster.MakeHome(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if created {
		log.Info("prepared the data directory", "data_dir", dataDir, "mode", "0700",
			"owner", pgcluster.ServerAccount())
	}
	db := &database{}
	socketDir := filepath.Join(dataDir, socketSubdir)
	if !pgcluster.SocketDirFits(socketDir, pgcluster.DefaultPort) {
		if db.tmpSocketDir, err = os.MkdirTemp("", "berth-"); err != nil {
			return nil, err
		}
		log.Info("data directory path too long for a unix socket; using a temporary socket directory",
			"socket_dir", db.tmpSocketDir)
		socketDir = db.tmpSocketDir
	}
	db.cluster, err = pgcluster.Start(ctx, pgcluster.Options{
		DataDir:   filepath.Join(dataDir, pgSubdir),
		SocketDir: socketDir,
		NoSync:    noSync,
		Logger:    log.With("component", "postgres"),
	})
	if err != nil {
		if db.tmpSocketDir != "" {
			_ = os.RemoveAll(db.tmpSocketDir)
		}
		return nil, err
	}
	return db, nil
}

// olderDataDir is the data directory to use as root when the
// configuration names rootDir, the default: rootDir, unless a cluster an
// older berthd made in the user's default data directory (userDir,
// ~/.local/share/berth) is there and rootDir has none. That cluster is
// used where it is if the server's account can reach it as the
// permissions are now (older berthd opened root's home to it); if it
// cannot, berthd stops with what to do, rather than start an empty
// cluster beside the user's data or loosen a home directory again.
func olderDataDir(rootDir, userDir string, reachable func(string) error, log *slog.Logger) (string, error) {
	if userDir == "" || userDir == rootDir || !hasCluster(userDir) {
		return rootDir, nil
	}
	if hasCluster(rootDir) {
		log.Warn("a cluster of an older berthd is not used: the data directory as root is now "+rootDir,
			"data_dir", rootDir, "older_data_dir", userDir)
		return rootDir, nil
	}
	move := fmt.Sprintf("stop berthd, then: mv %s %s && chown -R %s: %s", userDir, rootDir, pgcluster.ServerAccount(), rootDir)
	if err := reachable(filepath.Join(userDir, pgSubdir)); err != nil {
		return "", fmt.Errorf("the cluster of an older berthd is in %s, which the %s user cannot reach: %w. "+
			"Its data is untouched. To keep it, move it where berthd keeps its data as root (%s), "+
			"or start berthd with --data-dir %s once the %s user can reach it; to start afresh, remove it",
			userDir, pgcluster.ServerAccount(), err, move, userDir, pgcluster.ServerAccount())
	}
	log.Warn("using the cluster an older berthd made in the user's data directory, where it is; "+
		"to move it where berthd keeps its data as root, "+move, "data_dir", userDir, "default_data_dir", rootDir)
	return userDir, nil
}

// hasCluster reports whether dataDir holds an embedded cluster.
func hasCluster(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, pgSubdir, "PG_VERSION"))
	return err == nil
}

// exited is closed when the embedded cluster exits; nil (never ready)
// for an external database.
func (db *database) exited() <-chan struct{} {
	if db.cluster == nil {
		return nil
	}
	return db.cluster.Exited()
}

// close stops the embedded cluster, if any.
func (db *database) close(ctx context.Context, log *slog.Logger) error {
	if db.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, clusterStopTimeout)
	defer cancel()
	err := db.cluster.Stop(ctx)
	if db.tmpSocketDir != "" {
		_ = os.RemoveAll(db.tmpSocketDir)
	}
	if err != nil {
		log.Error("stopping the embedded PostgreSQL", "error", err)
	}
	return err
}

// DevDB starts a throwaway cluster (fsync off) for development and tests
// in dataDir, or in a new temporary directory when dataDir is empty,
// writes the superuser URL of its "postgres" database to out as one line,
// and keeps it running until ctx ends. It then stops the cluster and
// removes a temporary directory.
func DevDB(ctx context.Context, dataDir string, out io.Writer, log *slog.Logger) (err error) {
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "berth-devdb-"); err != nil {
			return err
		}
		// Let a server running as another user (see pgcluster) reach pg/.
		if err := os.Chmod(dataDir, 0o701); err != nil {
			return err
		}
		defer os.RemoveAll(dataDir)
	}
	db, err := startCluster(ctx, dataDir, true, log)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, db.cluster.URL("postgres")); err != nil {
		_ = db.close(context.WithoutCancel(ctx), log)
		return err
	}
	select {
	case <-ctx.Done():
		return db.close(context.WithoutCancel(ctx), log)
	case <-db.cluster.Exited():
		return fmt.Errorf("postgres exited unexpectedly; see %s", db.cluster.LogFile())
	}
}
