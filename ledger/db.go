package ledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// db runs the Store's reads that need no transaction, each statement on a
// pooled connection of its own, and hands back every error it or its rows
// give through dbError, the ledger's one boundary for driver errors (the
// others are withTx and the one-trip pipelines). Each read is confirmed
// (replication.go, "Reads that outlive a failover"): sqlConfirm follows
// its statement in the same pipeline and implicit transaction, so it
// costs no round trip more, and the rows or row answer with the
// confirmation's error when it fails.
type db struct {
	pool     *pgxpool.Pool
	unsynced *unsyncedCommits
}

// send sends sql and sqlConfirm as one pipeline on a pooled connection;
// the caller reads sql's answer from the results and then ends them
// with confirmed.
func (d db) send(ctx context.Context, sql string, args []any) (*confirmedRead, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	d.unsynced.forget(conn.Conn().PgConn()) // a mark left by another statement's commit
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue(sqlConfirm)
	return &confirmedRead{conn: conn, br: conn.SendBatch(ctx, b), unsynced: d.unsynced}, nil
}

// confirmedRead is a read sent with its confirmation.
type confirmedRead struct {
	conn     *pgxpool.Conn
	br       pgx.BatchResults
	unsynced *unsyncedCommits
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
		err = r.unsynced.replicated(r.conn.Conn().PgConn())
	}
	r.conn.Release()
	r.err = err
	return err
}

// Query runs sql; its rows' Scan and Err answer in fault's kinds, and
// Err with the confirmation's error once the rows are read.
func (d db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := d.send(ctx, sql, args)
	if err != nil {
		return nil, dbError(err)
	}
	rows, err := r.br.Query()
	if err != nil {
		if rows != nil {
			rows.Close()
		}
		_ = r.confirmed()
		return nil, dbError(err)
	}
	return &boundaryRows{Rows: rows, read: r}, nil
}

// QueryRow runs sql; its row's Scan answers in fault's kinds, with the
// confirmation's error if the row was read but not confirmed.
func (d db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r, err := d.send(ctx, sql, args)
	if err != nil {
		return errRow{dbError(err)}
	}
	return boundaryRow{read: r}
}

// Exec runs sql.
func (d db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.pool.Exec(ctx, sql, args...)
	return tag, dbError(err)
}

// boundaryRows are rows whose errors went through dbError. When Next
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
		return dbError(err)
	}
	if !r.read.done {
		return nil // still being read
	}
	return dbError(r.read.confirmed())
}

func (r *boundaryRows) Scan(dest ...any) error { return dbError(r.Rows.Scan(dest...)) }

// boundaryRow is a row whose error went through dbError.
type boundaryRow struct{ read *confirmedRead }

func (r boundaryRow) Scan(dest ...any) error {
	err := r.read.br.QueryRow().Scan(dest...)
	if cerr := r.read.confirmed(); cerr != nil && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
		err = cerr // an answer, found or not, that the standby may not have
	}
	return dbError(err)
}

// errRow is a row that could not be asked for.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// querier is what both a pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}
