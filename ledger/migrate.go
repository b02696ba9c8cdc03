package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers pgx5://
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/migrations"
)

// Migrate applies every pending migration in the migrations package to the
// database at databaseURL. It is safe to run concurrently from several
// processes: golang-migrate holds an advisory lock while it works.
func Migrate(ctx context.Context, databaseURL string) error {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("ledger: migrations source: %w", err)
	}
	dbURL, err := migrateURL(databaseURL)
	if err != nil {
		return err
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, dbURL)
	if err != nil {
		return fmt.Errorf("ledger: migrate: %w", core.CheckPrimary(ctx, databaseURL, DefaultConnectTimeout, err))
	}
	defer m.Close()
	done := make(chan error, 1)
	go func() { done <- m.Up() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		m.GracefulStop <- true
		err = <-done
	}
	if err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("ledger: migrate up: %w", err)
	}
	return nil
}

// migrateURL turns a postgres:// URL into the pgx5:// form golang-migrate
// expects.
func migrateURL(databaseURL string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("ledger: database url must be postgres://...: %q", databaseURL)
	}
	return "pgx5" + strings.TrimPrefix(databaseURL, u.Scheme), nil
}
