package core

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB runs the ledger's reads that need no transaction, each statement on a
// pooled connection of its own, and hands back every error it or its rows
// give through DBError, the ledger's one boundary for driver errors (the
// others are WithTx and the one-trip pipelines). Each read is confirmed
// (replication.go, "Reads that outlive a failover"): SQLConfirm follows
// its statement in the same pipeline and implicit transaction, so it
// costs no round trip more, and the rows or row answer with the
// confirmation's error when it fails.
type DB struct {
	Pool     *pgxpool.Pool
	Unsynced *Unsynced
}

// send sends sql and SQLConfirm as one pipeline on a pooled connection;
// the caller reads sql's answer from the results and then ends them
// with confirmed.
func (d DB) send(ctx context.Context, sql string, args []any) (*confirmedRead, error) {
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	d.Unsynced.Forget(conn.Conn().PgConn()) // a mark left by another statement's commit
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue(SQLConfirm)
	return &confirmedRead{conn: conn, br: conn.SendBatch(ctx, b), unsynced: d.Unsynced}, nil
}

// confirmedRead is a read sent with its confirmation.
type confirmedRead struct {
	conn     *pgxpool.Conn
	br       pgx.BatchResults
	unsynced *Unsynced
	done     bool
	err      error
}

// confirmed reads the confirmation, ends the pipeline and releases the
// connection, once; it returns the first error of these.
func (r *confirmedRead) confirmed() error {
	if r.done {
		return r.err
	}
	r.done = true
	_, err := r.br.Exec()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.unsynced.Replicated(r.conn.Conn().PgConn())
	}
	r.conn.Release()
	r.err = err
	return err
}

// Query runs sql; its rows' Scan and Err answer in fault's kinds, and
// Err with the confirmation's error once the rows are read.
func (d DB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := d.send(ctx, sql, args)
	if err != nil {
		return nil, DBError(err)
	}
	rows, err := r.br.Query()
	if err != nil {
		if rows != nil {
			rows.Close()
		}
		_ = r.confirmed()
		return nil, DBError(err)
	}
	return &boundaryRows{Rows: rows, read: r}, nil
}

// QueryRow runs sql; its row's Scan answers in fault's kinds, with the
// confirmation's error if the row was read but not confirmed.
func (d DB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r, err := d.send(ctx, sql, args)
	if err != nil {
		return errRow{DBError(err)}
	}
	return boundaryRow{read: r}
}

// Exec runs sql.
func (d DB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.Pool.Exec(ctx, sql, args...)
	return tag, DBError(err)
}

// boundaryRows are rows whose errors went through DBError. When Next
// finds no more rows, or the caller closes them, the confirmation is
// read and the connection released.
type boundaryRows struct {
	pgx.Rows
	read *confirmedRead
}

func (r *boundaryRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *boundaryRows) Close() {
	r.Rows.Close()
	_ = r.read.confirmed()
}

func (r *boundaryRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return DBError(err)
	}
	if !r.read.done {
		return nil // still being read
	}
	return DBError(r.read.confirmed())
}

func (r *boundaryRows) Scan(dest ...any) error { return DBError(r.Rows.Scan(dest...)) }

// boundaryRow is a row whose error went through DBError.
type boundaryRow struct{ read *confirmedRead }

func (r boundaryRow) Scan(dest ...any) error {
	err := r.read.br.QueryRow().Scan(dest...)
	if cerr := r.read.confirmed(); cerr != nil && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
		err = cerr // an answer, found or not, that the standby may not have
	}
	return DBError(err)
}

// errRow is a row that could not be asked for.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// Querier is what both a pool and a transaction offer.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}
