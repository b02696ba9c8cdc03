package ledger

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// db runs the Store's reads that need no transaction, each statement on a
// pooled connection of its own, and hands back every error it or its rows
// give through dbError, the ledger's one boundary for driver errors (the
// others are withTx and the one-trip pipelines).
type db struct{ pool *pgxpool.Pool }

// Query runs sql; its rows' Scan and Err answer in fault's kinds.
func (d db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := d.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, dbError(err)
	}
	return boundaryRows{rows}, nil
}

// QueryRow runs sql; its row's Scan answers in fault's kinds.
func (d db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return boundaryRow{d.pool.QueryRow(ctx, sql, args...)}
}

// Exec runs sql.
func (d db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.pool.Exec(ctx, sql, args...)
	return tag, dbError(err)
}

// boundaryRows are rows whose errors went through dbError.
type boundaryRows struct{ pgx.Rows }

func (r boundaryRows) Err() error             { return dbError(r.Rows.Err()) }
func (r boundaryRows) Scan(dest ...any) error { return dbError(r.Rows.Scan(dest...)) }

// boundaryRow is a row whose error went through dbError.
type boundaryRow struct{ pgx.Row }

func (r boundaryRow) Scan(dest ...any) error { return dbError(r.Row.Scan(dest...)) }

// querier is what both a pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}
