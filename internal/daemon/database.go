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
	db, err := startCluster(ctx, cfg.DataDir, false, log)
	if err != nil {
		return nil, err
	}
	if err := db.cluster.CreateDatabase(ctx, EmbeddedDatabase); err != nil {
		_ = db.close(context.WithoutCancel(ctx), log)
		return nil, err
	}
	db.url = db.cluster.URL(EmbeddedDatabase)
	log.Info("using the embedded PostgreSQL", "url", db.url, "data_dir", db.cluster.DataDir())
	return db, nil
}

// startCluster starts a cluster in dataDir/pg with its socket in
// dataDir/run, or in a new directory under $TMPDIR when that path is too
// long for a unix socket.
func startCluster(ctx context.Context, dataDir string, noSync bool, log *slog.Logger) (*database, error) {
	if err := pgcluster.EnsureInstalled(ctx, log); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
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
