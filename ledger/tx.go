package ledger

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

// Transactions: withTx is the ledger's one transaction helper; the few
// writes that bypass it for one round trip say so where withTx is
// documented.

// txn is a transaction plus the record of which providers it changed.
type txn struct {
	pgx.Tx
	touched []int64
	all     bool
	// writes, when set, are all the transaction changed, in commit
	// order: new allocations only, so the snapshot can apply them
	// instead of reloading.
	writes []*ownWrite
}

// touch records that the providers with these ids changed (inventory,
// usage, traits, aggregates, tree shape) so caches drop them after commit.
func (t *txn) touch(ids ...int64) { t.touched = append(t.touched, ids...) }

// touchAll records a change that may affect any provider.
func (t *txn) touchAll() { t.all = true }

// maxTxAttempts bounds how often withTx runs fn when PostgreSQL reports a
// serialization failure or deadlock, or BEGIN fails on a broken connection.
const maxTxAttempts = 4

// txMode is the kind of transaction withTx runs.
type txMode int

const (
	// txWrite is a READ COMMITTED transaction: every mutation runs in one.
	txWrite txMode = iota
	// txReadOnly is a REPEATABLE READ READ ONLY transaction, for reads
	// whose statements must see one state of the database (the cloud
	// data of a scriptlet).
	txReadOnly
	// txReadConfirmed is txReadOnly for a read that answers a client
	// (a snapshot load, Store.readTx): it ends with sqlConfirm, so it is
	// not READ ONLY (replication.go, "Reads that outlive a failover").
	txReadConfirmed
)

// txBeginner begins transactions on a pool: what withTx needs, shared by
// the Store and its snapshot cache.
type txBeginner struct {
	pool *pgxpool.Pool
	// acquireTimeout bounds getting a connection and beginning a
	// transaction (Config.AcquireTimeout).
	acquireTimeout time.Duration
	// unsynced marks commits whose wait for the synchronous standby was
	// cancelled (replication.go).
	unsynced *unsyncedCommits
}

// withTx is the ledger's one transaction helper: it runs fn in a
// transaction of the given mode and commits it; its errors have been
// through dbError. fn may run more than once:
// if PostgreSQL aborts the transaction with a serialization failure or
// deadlock, withTx rolls back, waits briefly (in a select on ctx) and runs
// fn again, up to maxTxAttempts times. fn must therefore not keep state
// between runs. A BEGIN that fails because the database is out of reach is
// tried again the same way (after a restart of PostgreSQL the pool may
// still hold connections to the old server, each good for one failure); an
// outage during fn or COMMIT is not, since the transaction may have
// committed; nor is a COMMIT whose wait for the synchronous standby was
// cancelled (PostgreSQL's WARNING, replication.go): withTx then returns
// the committed transaction together with errNotReplicated. Rollback uses
// context.WithoutCancel so a cancelled request still releases its locks.
// It returns the committed transaction's record of what fn touched;
// Store.withTx hands it to the change hooks.
//
// Three kinds of statements bypass it, each for one round trip: the claim fast path and
// its batches send their statements as one implicit transaction
// (claim_write.go, claim_batch.go; sendClaimPipeline makes the same
// replication check), so do the provider writes' fast paths
// (provider_fast.go, sendOneTrip, which fall back to withTx whenever they
// write nothing), and a partial snapshot reload pipelines its own BEGIN
// and COMMIT (loadProvidersOneTrip, read only).
func (b txBeginner) withTx(ctx context.Context, mode txMode, fn func(t *txn) error) (*txn, error) {
	for attempt := 1; ; attempt++ {
		t, err := b.runTx(ctx, mode, fn)
		if err == nil || t != nil {
			// t with an error: committed, but the synchronous standby
			// did not confirm it (runTx); never run again.
			return t, dbError(err)
		}
		if !(retryable(err) || brokenPooledConn(err)) || attempt == maxTxAttempts {
			return nil, dbError(err)
		}
		if err := backoff(ctx, attempt, err); err != nil {
			return nil, dbError(err)
		}
	}
}

// runTx is one attempt of withTx.
func (b txBeginner) runTx(ctx context.Context, mode txMode, fn func(t *txn) error) (*txn, error) {
	var opts pgx.TxOptions
	switch mode {
	case txReadOnly:
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	case txReadConfirmed:
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead}
	}
	conn, tx, err := begin(ctx, b.pool, opts, b.acquireTimeout)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	t := &txn{Tx: tx}
	pc := conn.Conn().PgConn()
	b.unsynced.forget(pc) // a mark left by another statement's commit
	if err := fn(t); err != nil {
		if _, answer := fault.As(err); answer && !errors.Is(err, fault.ErrUnavailable) {
			// A refusal (a 404, a 409) answers with what fn read:
			// confirmed too, after the rollback, on the same
			// connection.
			_ = tx.Rollback(context.WithoutCancel(ctx))
			if cerr := confirm(ctx, conn); cerr != nil {
				return nil, cerr
			}
			if cerr := b.unsynced.replicated(pc); cerr != nil {
				return nil, cerr
			}
		}
		return nil, err
	}
	// A read is confirmed (replication.go, "Reads that outlive a
	// failover"): a transaction that changed no provider may be one,
	// whose answer is what it read; one that did waits at COMMIT anyway.
	if mode == txReadConfirmed || mode == txWrite && len(t.touched) == 0 && !t.all {
		if err := confirm(ctx, tx); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("ledger: commit: %w", err)
	}
	if err := b.unsynced.replicated(pc); err != nil {
		// Committed on this primary all the same: t goes back with the
		// error so the change hooks still run (Store.withTx).
		return t, err
	}
	return t, nil
}

// withTx runs fn in a write transaction (txBeginner.withTx: fn may run
// more than once) and, after commit, tells the change hooks what it
// touched.
func (s *Store) withTx(ctx context.Context, fn func(t *txn) error) error {
	t, err := s.txs.withTx(ctx, txWrite, fn)
	if t != nil {
		// err may be errNotReplicated: committed here, not confirmed by
		// the synchronous standby (replication.go).
		s.notify(t)
	}
	return err
}

// readTx runs fn in a transaction that only reads (txBeginner.withTx: fn
// may run more than once) whose statements all see one state of the
// database: a read of several statements (a provider's generation and
// its usages) answers as of one moment, as Placement's does. It is
// confirmed (txReadConfirmed).
func (s *Store) readTx(ctx context.Context, fn func(t *txn) error) error {
	_, err := s.txs.withTx(ctx, txReadConfirmed, fn)
	return err
}

// backoff waits before retry number attempt+1 of a transaction that
// failed with err, growing quadratically (5 ms, 20 ms, 45 ms, ...). It
// returns err joined with the context's error if ctx ends first.
func backoff(ctx context.Context, attempt int, err error) error {
	select {
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		return nil
	}
}

// beginError is a failure to get a connection or begin a transaction:
// nothing of the transaction reached the database.
type beginError struct{ err error }

func (e *beginError) Error() string { return "ledger: begin: " + e.err.Error() }

func (e *beginError) Unwrap() error { return e.err }

// begin starts a transaction on a pooled connection, waiting at most the
// acquire timeout for the connection and the BEGIN. The transaction itself
// is bound to ctx only: pgx watches a context during each call, not after.
// The caller releases the connection once the transaction has ended.
func begin(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, timeout time.Duration) (*pgxpool.Conn, pgx.Tx, error) {
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pool.Acquire(bctx)
	if err != nil {
		return nil, nil, &beginError{err: err}
	}
	tx, err := conn.BeginTx(bctx, opts)
	if err != nil {
		conn.Release()
		return nil, nil, &beginError{err: err}
	}
	return conn, tx, nil
}

// brokenPooledConn reports whether err is a BEGIN that failed on a pooled
// connection the server had closed (after a restart of PostgreSQL, say).
// Trying again takes another connection. A failure to open a connection or
// a timeout is not such a failure: the database is down, and retrying would
// only make the caller wait longer for its 503.
func brokenPooledConn(err error) bool {
	var be *beginError
	var connectErr *pgconn.ConnectError
	return errors.As(err, &be) && unavailable(be.err) &&
		!errors.As(be.err, &connectErr) &&
		!errors.Is(be.err, context.DeadlineExceeded) && !pgconn.Timeout(be.err)
}
