package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Transactions: WithTx is the ledger's one transaction helper; the few
// writes that bypass it for one round trip say so where WithTx is
// documented.

// Txn is a transaction plus the record of which providers it changed.
type Txn struct {
	pgx.Tx
	Touched []int64
	All     bool
	// writes, when set, are all the transaction changed, in commit
	// order: new allocations only, so the snapshot can apply them
	// instead of reloading.
	Writes []*OwnWrite
}

// Touch records that the providers with these ids changed (inventory,
// usage, traits, aggregates, tree shape) so caches drop them after commit.
func (t *Txn) Touch(ids ...int64) { t.Touched = append(t.Touched, ids...) }

// TouchAll records a change that may affect any provider.
func (t *Txn) TouchAll() { t.All = true }

// MaxTxAttempts bounds how often WithTx runs fn when PostgreSQL reports a
// serialization failure or deadlock, or BEGIN fails on a broken connection.
const MaxTxAttempts = 4

// TxMode is the kind of transaction WithTx runs.
type TxMode int

const (
	// TxWrite is a READ COMMITTED transaction: every mutation runs in one.
	TxWrite TxMode = iota
	// TxReadOnly is a REPEATABLE READ READ ONLY transaction, for reads
	// whose statements must see one state of the database (the cloud
	// data of a scriptlet).
	TxReadOnly
	// TxReadConfirmed is TxReadOnly for a read that answers a client
	// (a snapshot load, Core.ReadTx): it ends with SQLConfirm, so it is
	// not READ ONLY (replication.go, "Reads that outlive a failover").
	TxReadConfirmed
)

// TxBeginner begins transactions on a pool: what WithTx needs, shared by
// the Core and the snapshot cache.
type TxBeginner struct {
	Pool *pgxpool.Pool
	// AcquireTimeout bounds getting a connection and beginning a
	// transaction (Config.AcquireTimeout).
	AcquireTimeout time.Duration
	// Unsynced marks commits whose wait for the synchronous standby was
	// cancelled (replication.go).
	Unsynced *Unsynced
}

// WithTx is the ledger's one transaction helper: it runs fn in a
// transaction of the given mode and commits it; its errors have been
// through DBError. fn may run more than once:
// if PostgreSQL aborts the transaction with a serialization failure or
// deadlock, WithTx rolls back, waits briefly (in a select on ctx) and runs
// fn again, up to MaxTxAttempts times. fn must therefore not keep state
// between runs. A BEGIN that fails because the database is out of reach is
// tried again the same way (after a restart of PostgreSQL the pool may
// still hold connections to the old server, each good for one failure); an
// outage during fn or COMMIT is not, since the transaction may have
// committed; nor is a COMMIT whose wait for the synchronous standby was
// cancelled (PostgreSQL's WARNING, replication.go): WithTx then returns
// the committed transaction together with ErrNotReplicated. Rollback uses
// context.WithoutCancel so a cancelled request still releases its locks.
// It returns the committed transaction's record of what fn touched;
// Core.WithTx hands it to Notify.
//
// Three kinds of statements bypass it, each for one round trip: the claim fast path and
// its batches send their statements as one implicit transaction
// (ledger/resources/claim_write.go, ledger/resources/claim_writers.go; sendClaimPipeline makes the same
// replication check), so do the provider writes' fast paths
// (ledger/resources/provider_pipeline.go, sendOneTrip, which fall back to WithTx whenever they
// write nothing), and a partial snapshot reload pipelines its own BEGIN
// and COMMIT (loadProvidersOneTrip, read only).
func (b TxBeginner) WithTx(ctx context.Context, mode TxMode, fn func(t *Txn) error) (*Txn, error) {
	for attempt := 1; ; attempt++ {
		t, err := b.runTx(ctx, mode, fn)
		if err == nil || t != nil {
			// t with an error: committed, but the synchronous standby
			// did not confirm it (runTx); never run again.
			return t, DBError(err)
		}
		if !(Retryable(err) || brokenPooledConn(err)) || attempt == MaxTxAttempts {
			return nil, DBError(err)
		}
		if err := Backoff(ctx, attempt, err); err != nil {
			return nil, DBError(err)
		}
	}
}

// runTx is one attempt of WithTx.
func (b TxBeginner) runTx(ctx context.Context, mode TxMode, fn func(t *Txn) error) (*Txn, error) {
	var opts pgx.TxOptions
	switch mode {
	case TxReadOnly:
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	case TxReadConfirmed:
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead}
	}
	conn, tx, err := begin(ctx, b.Pool, opts, b.AcquireTimeout)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	t := &Txn{Tx: tx}
	pc := conn.Conn().PgConn()
	b.Unsynced.Forget(pc) // a mark left by another statement's commit
	if err := fn(t); err != nil {
		if _, answer := fault.As(err); answer && !errors.Is(err, fault.ErrUnavailable) {
			// A refusal (a 404, a 409) answers with what fn read:
			// confirmed too, after the rollback, on the same
			// connection.
			_ = tx.Rollback(context.WithoutCancel(ctx))
			if cerr := confirm(ctx, conn); cerr != nil {
				return nil, cerr
			}
			if cerr := b.Unsynced.Replicated(pc); cerr != nil {
				return nil, cerr
			}
		}
		return nil, err
	}
	// A read is confirmed (replication.go, "Reads that outlive a
	// failover"): a transaction that changed no provider may be one,
	// whose answer is what it read; one that did waits at COMMIT anyway.
	if mode == TxReadConfirmed || mode == TxWrite && len(t.Touched) == 0 && !t.All {
		if err := confirm(ctx, tx); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("ledger: commit: %w", err)
	}
	if err := b.Unsynced.Replicated(pc); err != nil {
		// Committed on this primary all the same: t goes back with the
		// error so the change hooks still run (Core.WithTx).
		return t, err
	}
	return t, nil
}

// WithTx runs fn in a write transaction (TxBeginner.WithTx: fn may run
// more than once) and, after commit, tells the change hooks what it
// touched (Notify).
func (c *Core) WithTx(ctx context.Context, fn func(t *Txn) error) error {
	t, err := c.Txs.WithTx(ctx, TxWrite, fn)
	if t != nil {
		// err may be ErrNotReplicated: committed here, not confirmed by
		// the synchronous standby (replication.go).
		c.Notify(t)
	}
	return err
}

// ReadTx runs fn in a transaction that only reads (TxBeginner.WithTx: fn
// may run more than once) whose statements all see one state of the
// database: a read of several statements (a provider's generation and
// its usages) answers as of one moment, as Placement's does. It is
// confirmed (TxReadConfirmed).
func (c *Core) ReadTx(ctx context.Context, fn func(t *Txn) error) error {
	_, err := c.Txs.WithTx(ctx, TxReadConfirmed, fn)
	return err
}

// Backoff waits before retry number attempt+1 of a transaction that
// failed with err, growing quadratically (5 ms, 20 ms, 45 ms, ...). It
// returns err joined with the context's error if ctx ends first.
func Backoff(ctx context.Context, attempt int, err error) error {
	select {
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		return nil
	}
}

// BeginError is a failure to get a connection or begin a transaction:
// nothing of the transaction reached the database.
type BeginError struct{ Err error }

func (e *BeginError) Error() string { return "ledger: begin: " + e.Err.Error() }

func (e *BeginError) Unwrap() error { return e.Err }

// begin starts a transaction on a pooled connection, waiting at most the
// acquire timeout for the connection and the BEGIN. The transaction itself
// is bound to ctx only: pgx watches a context during each call, not after.
// The caller releases the connection once the transaction has ended.
func begin(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, timeout time.Duration) (*pgxpool.Conn, pgx.Tx, error) {
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pool.Acquire(bctx)
	if err != nil {
		return nil, nil, &BeginError{Err: err}
	}
	tx, err := conn.BeginTx(bctx, opts)
	if err != nil {
		conn.Release()
		return nil, nil, &BeginError{Err: err}
	}
	return conn, tx, nil
}

// brokenPooledConn reports whether err is a BEGIN that failed on a pooled
// connection the server had closed (after a restart of PostgreSQL, say).
// Trying again takes another connection. A failure to open a connection or
// a timeout is not such a failure: the database is down, and retrying would
// only make the caller wait longer for its 503.
func brokenPooledConn(err error) bool {
	var be *BeginError
	var connectErr *pgconn.ConnectError
	return errors.As(err, &be) && Unavailable(be.Err) &&
		!errors.As(be.Err, &connectErr) &&
		!errors.Is(be.Err, context.DeadlineExceeded) && !pgconn.Timeout(be.Err)
}
