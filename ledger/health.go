package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/migrations"
)

// PoolStats is a snapshot of the connection pool, for metrics.
type PoolStats struct {
	// MaxConns is the pool's cap.
	MaxConns int32
	// TotalConns is how many connections are open, idle or in use
	// (including ones being opened).
	TotalConns int32
	// AcquiredConns are in use by a request or transaction now.
	AcquiredConns int32
	// IdleConns are open and unused.
	IdleConns int32
	// AcquireCount is how many times a connection was handed out since the
	// pool opened; EmptyAcquireCount how many of those had to wait for one
	// (the pool was exhausted or still connecting); CanceledAcquireCount
	// how many waits ended with the caller's context.
	AcquireCount, EmptyAcquireCount, CanceledAcquireCount int64
	// AcquireDuration is the total time spent waiting for connections.
	AcquireDuration time.Duration
	// ClaimBatches is how many transactions the claim writers sent
	// (resources/claim_writers.go), and BatchedClaims how many claims they held:
	// their ratio is the mean batch size.
	ClaimBatches, BatchedClaims int64
	// ProviderWriteGroups is how many transactions the provider writers
	// sent (resources/provider_writers.go), and GroupedProviderWrites how many
	// provider writes they held.
	ProviderWriteGroups, GroupedProviderWrites int64
	// PrimarySwitches counts the times new connections of a multi-host
	// database URL landed on another host than before: failovers and
	// switchovers seen (ledger/internal/core/replication.go).
	PrimarySwitches int64
}

// PoolStats reports the connection pool's state. It takes no lock that
// queries hold and does no I/O.
func (s *Store) PoolStats() PoolStats {
	st := s.core.Pool.Stat()
	batches, claims, _ := s.Allocations.WriterStats()
	groups, writes, _ := s.Providers.WriterStats()
	return PoolStats{
		ClaimBatches:          batches,
		BatchedClaims:         claims,
		ProviderWriteGroups:   groups,
		GroupedProviderWrites: writes,
		MaxConns:              st.MaxConns(),
		TotalConns:            st.TotalConns(),
		AcquiredConns:         st.AcquiredConns(),
		IdleConns:             st.IdleConns(),
		AcquireCount:          st.AcquireCount(),
		EmptyAcquireCount:     st.EmptyAcquireCount(),
		CanceledAcquireCount:  st.CanceledAcquireCount(),
		AcquireDuration:       st.AcquireDuration(),
		PrimarySwitches:       s.primary.Switches(),
	}
}

// SchemaStatus is how the database's schema compares with the migrations
// built into this binary.
type SchemaStatus struct {
	// Version is the database's migration version; 0 when none was applied.
	Version uint
	// Dirty means a migration failed halfway and needs an operator.
	Dirty bool
	// Latest is the newest migration this binary carries.
	Latest uint
}

// Current reports whether the binary can use the schema: no failed
// migration and none of the binary's migrations missing. A database
// ahead of the binary counts as current, so that replicas of the previous
// release keep serving while a newer one migrates (migrations are written
// to be compatible with the release before them).
func (st SchemaStatus) Current() bool { return !st.Dirty && st.Version >= st.Latest }

// String describes the status for a readiness probe or log line.
func (st SchemaStatus) String() string {
	switch {
	case st.Dirty:
		return fmt.Sprintf("migration %d failed halfway (dirty); fix it and run `berthd migrate`", st.Version)
	case st.Version < st.Latest:
		return fmt.Sprintf("database schema at version %d, this berthd needs %d; run `berthd migrate`", st.Version, st.Latest)
	case st.Version > st.Latest:
		return fmt.Sprintf("database schema at version %d, ahead of this berthd (%d)", st.Version, st.Latest)
	}
	return fmt.Sprintf("database schema at version %d", st.Version)
}

// LatestMigration is the version of the newest migration in the
// migrations package.
func LatestMigration() (uint, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return 0, err
	}
	var latest uint
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".up.sql") {
			continue
		}
		v, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("ledger: migration %s: bad version", e.Name())
		}
		latest = max(latest, uint(v))
	}
	return latest, nil
}

// SchemaStatus reads the schema version golang-migrate recorded. It is
// one short query, cheap enough for a readiness probe; an error means the
// database did not answer.
func (s *Store) SchemaStatus(ctx context.Context) (SchemaStatus, error) {
	return schemaStatus(ctx, s.core.DB)
}

// SchemaStatusAt is SchemaStatus for a database no Store is open on (yet),
// over a connection of its own.
func SchemaStatusAt(ctx context.Context, databaseURL string) (SchemaStatus, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return SchemaStatus{}, fmt.Errorf("ledger: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return schemaStatus(ctx, conn)
}

func schemaStatus(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (SchemaStatus, error) {
	latest, err := LatestMigration()
	if err != nil {
		return SchemaStatus{}, err
	}
	st := SchemaStatus{Latest: latest}
	var version int64
	err = db.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &st.Dirty)
	switch {
	case errors.Is(err, pgx.ErrNoRows), core.PgCode(err) == core.SQLStateUndefinedTable:
		return st, nil // never migrated
	case err != nil:
		return SchemaStatus{}, fmt.Errorf("ledger: schema version: %w", err)
	}
	st.Version = uint(version)
	return st, nil
}
