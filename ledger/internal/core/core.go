package core

import (
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Core is what every part of the ledger shares, one of each: the
// connection pool, the reads outside transactions (DB), the one
// transaction helper (WithTx, ReadTx), the background work that Close
// waits for (Go), and what runs after every commit that changed
// providers (Notify: the snapshot and the notifier first, then the
// change hooks). Every store type of the ledger holds the one Core of
// its Open.
type Core struct {
	// Pool is the connection pool.
	Pool *pgxpool.Pool
	// DB runs reads outside transactions (db.go).
	DB  DB
	Log *slog.Logger
	// Txs begins the transactions (WithTx).
	Txs TxBeginner
	// Unsynced marks commits whose wait for the synchronous standby was
	// cancelled (replication.go).
	Unsynced *Unsynced

	// follow hears first of every commit that changed providers, with
	// the writes it can apply (Follow).
	follow func(touched []int64, all bool, writes []*OwnWrite)
	// changeHooks run after a transaction that changed providers commits,
	// with the ids of the providers it touched (all=true: anything may have
	// changed). They must not block.
	changeHooks []func(providerIDs []int64, all bool)
	bg          sync.WaitGroup
}

// New returns the Core of pool: its transactions wait at most
// acquireTimeout for a connection and their BEGIN (TxBeginner).
func New(pool *pgxpool.Pool, log *slog.Logger, acquireTimeout time.Duration, unsynced *Unsynced) *Core {
	return &Core{Pool: pool, DB: DB{Pool: pool, Unsynced: unsynced}, Log: log, Unsynced: unsynced,
		Txs: TxBeginner{Pool: pool, AcquireTimeout: acquireTimeout, Unsynced: unsynced}}
}

// Go runs fn in a goroutine of the ledger's background work, which Wait
// waits for.
func (c *Core) Go(fn func()) {
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		fn()
	}()
}

// Wait waits until the background work has returned.
func (c *Core) Wait() { c.bg.Wait() }

// Follow makes fn the first to hear of every commit that changed
// providers (Notify): the snapshot's (ledger/snapshot), set once, before
// anything is written. fn must not block.
func (c *Core) Follow(fn func(touched []int64, all bool, writes []*OwnWrite)) { c.follow = fn }

// OnChange registers fn to run after every committed transaction that
// changed providers. fn must be quick and must not call back into the
// ledger.
func (c *Core) OnChange(fn func(providerIDs []int64, all bool)) {
	c.changeHooks = append(c.changeHooks, fn)
}

// Notify tells, after a commit, what it touched: first the follower
// (which applies t's writes to the snapshot, or marks its providers
// dirty, and queues the change notification for the other processes on
// the database), then the change hooks.
func (c *Core) Notify(t *Txn) {
	if len(t.Touched) == 0 && !t.All {
		return
	}
	c.follow(t.Touched, t.All, t.Writes)
	for _, fn := range c.changeHooks {
		fn(t.Touched, t.All)
	}
}

// OwnWrite is what a claim's one-round-trip write changed, as the
// database answered it: the providers' new generations and updated_at,
// and the allocations added. The snapshot applies it without a reload
// (ledger/snapshot).
type OwnWrite struct {
	// Xid is the id of the transaction that wrote it (0: unknown).
	Xid            uint64
	Providers      []int64
	Generations    []int64
	UpdatedAt      []time.Time
	AllocProviders []int64
	AllocClasses   []int64
	Amounts        []int64
}

// SQLOwnXid is the id of the transaction it runs in, if it has one: a
// pipeline of writes sends it after them, so that the snapshot knows its
// own change rows (ledger/snapshot's change log).
const SQLOwnXid = `SELECT pg_current_xact_id_if_assigned()::text`

// OwnXid reads SQLOwnXid's answer: 0 if the transaction has no id.
func OwnXid(br pgx.BatchResults) (uint64, error) {
	var xid *string
	if err := br.QueryRow().Scan(&xid); err != nil {
		return 0, err
	}
	if xid == nil {
		return 0, nil
	}
	return strconv.ParseUint(*xid, 10, 64)
}
