package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
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

// Pipelines. SendBatch sends a pgx.Batch as pgx's conn.SendBatch does,
// but in pgx's default query mode (cache_statement) it sends it itself,
// over pgconn, with buffers the connection keeps: pgx's argument
// builder shrinks its buffer after every statement and its send buffer
// after every flush, and grows both again through every claim batch's
// JSON arguments.

// SendBatch sends b on conn as one pipeline and one implicit transaction,
// as conn.SendBatch does, and returns its results, which the caller must
// close before it releases conn. In the cache_statement mode, with pgx's
// statement cache on, each statement is prepared once per connection
// (pgx.Conn.Prepare, named for its text, which pgx's own batches of the
// same text then use too), its arguments are encoded by conn's type map
// in the formats pgx chooses, and each statement is sent as pgx sends a
// described one (Bind, Execute; one Sync at the end). In every other
// mode it is conn.SendBatch. The rows of a result are valid until the
// next result is asked for.
func SendBatch(ctx context.Context, conn *pgx.Conn, b *pgx.Batch) pgx.BatchResults {
	pc := conn.PgConn()
	p, _ := pc.CustomData()[pipeKey].(*pipe)
	if p == nil {
		cfg := conn.Config()
		p = &pipe{own: cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement && cfg.StatementCacheCapacity > 0}
		p.tracer, _ = cfg.Tracer.(pgx.BatchTracer)
		pc.CustomData()[pipeKey] = p
	}
	if !p.own || len(b.QueuedQueries) == 0 {
		return conn.SendBatch(ctx, b)
	}
	br := &p.results
	*br = pipeResults{ctx: ctx, conn: conn, b: b, tracer: p.tracer}
	if br.tracer != nil {
		br.ctx = br.tracer.TraceBatchStart(ctx, conn, pgx.TraceBatchStartData{Batch: b})
	}
	p.sds = p.sds[:0]
	for _, q := range b.QueuedQueries {
		sd, err := conn.Prepare(br.ctx, q.SQL, q.SQL)
		if err != nil {
			br.err = err
			return br
		}
		p.sds = append(p.sds, sd)
	}
	if err := p.encode(conn.TypeMap(), b); err != nil {
		br.err = err
		return br
	}
	pipeline := pc.StartPipeline(br.ctx)
	pc.Frontend().Send(&p.send)
	for i, sd := range p.sds {
		v, r := p.stmts[i].values, p.stmts[i].results
		nv, nr := v+len(sd.ParamOIDs), r+len(sd.Fields)
		pipeline.SendQueryStatement(sd, p.values[v:nv], p.formats[v:nv], p.resultFormats[r:nr:nr])
	}
	if err := pipeline.Sync(); err != nil {
		_ = pipeline.Close()
		br.err = err
		return br
	}
	br.pipeline = pipeline
	return br
}

// pipeKey is where a connection keeps its pipe (pgconn.PgConn.CustomData).
const pipeKey = "berth.pipe"

// pipeBufferMax bounds the buffers a connection keeps: a larger one,
// grown by an unusually large batch, is dropped before the next.
const pipeBufferMax = 1 << 20

// pipe is a connection's buffers for SendBatch, kept from one batch to
// the next: the statements' encoded arguments, their formats, the
// results' formats, the send buffer, and the results.
type pipe struct {
	own           bool // SendBatch sends itself (the cache_statement mode)
	tracer        pgx.BatchTracer
	sds           []*pgconn.StatementDescription
	stmts         []pipeStmt
	params        []byte
	values        [][]byte
	formats       []int16
	resultFormats []int16
	send          sendBuffer
	results       pipeResults
}

// ArgEncoder encodes a batch's arguments as SendBatch does, into
// buffers of its own kept from one batch to the next (for
// BenchmarkClaimBatchArgs).
type ArgEncoder struct{ p pipe }

// Encode encodes the arguments of b's statements, described by sds.
func (e *ArgEncoder) Encode(m *pgtype.Map, sds []*pgconn.StatementDescription, b *pgx.Batch) error {
	e.p.sds = sds
	return e.p.encode(m, b)
}

// pipeStmt is where a statement's arguments and result formats start in
// its pipe's slices.
type pipeStmt struct{ values, results int }

// encode encodes the arguments of b's statements (described by p.sds)
// as pgx's extended query builder does, and sizes p.send for their
// messages.
func (p *pipe) encode(m *pgtype.Map, b *pgx.Batch) error {
	if cap(p.params) > pipeBufferMax {
		p.params = nil
	}
	p.params, p.values, p.formats, p.resultFormats = p.params[:0], p.values[:0], p.formats[:0], p.resultFormats[:0]
	p.stmts = p.stmts[:0]
	size := 5 // Sync
	for i, q := range b.QueuedQueries {
		sd := p.sds[i]
		if len(sd.ParamOIDs) != len(q.Arguments) {
			return fmt.Errorf("mismatched param and argument count")
		}
		p.stmts = append(p.stmts, pipeStmt{values: len(p.values), results: len(p.resultFormats)})
		for k, arg := range q.Arguments {
			if err := p.appendParam(m, sd.ParamOIDs[k], arg); err != nil {
				return fmt.Errorf("failed to encode args[%d]: %w", k, err)
			}
			size += 6 + len(p.values[len(p.values)-1]) // its format, length, value
		}
		for _, fd := range sd.Fields {
			p.resultFormats = append(p.resultFormats, m.FormatCodeForOID(fd.DataTypeOID))
		}
		// Bind: type, length, portal, name, the counts, result formats;
		// Describe if no fields are known; Execute.
		size += 5 + 1 + len(sd.Name) + 1 + 6 + 2*len(sd.Fields) + 7 + 10
	}
	p.send.need = size
	return nil
}

// appendParam encodes arg, of type oid, in the format pgx prefers, or
// else in the other.
func (p *pipe) appendParam(m *pgtype.Map, oid uint32, arg any) error {
	format := m.FormatCodeForOID(oid)
	switch arg.(type) {
	case string, *string:
		format = pgtype.TextFormatCode
	}
	err := p.encodeParam(m, oid, format, arg)
	if err != nil && p.encodeParam(m, oid, 1-format, arg) == nil {
		return nil
	}
	return err
}

func (p *pipe) encodeParam(m *pgtype.Map, oid uint32, format int16, arg any) error {
	pos := len(p.params)
	buf, err := m.Encode(oid, format, arg, p.params)
	if err != nil {
		return err
	}
	var v []byte
	if buf != nil {
		p.params = buf
		v = buf[pos:len(buf):len(buf)]
	}
	p.values = append(p.values, v)
	p.formats = append(p.formats, format)
	return nil
}

// sendBuffer is a connection's send buffer. It is no message: sent
// first in a pipeline, it hands the frontend the buffer with what the
// frontend holds copied in and room for need bytes more, so that the
// pipeline's messages are written into a buffer of the connection's own
// (the frontend replaces a large buffer by a small one at every flush).
type sendBuffer struct {
	buf  []byte
	need int
}

func (s *sendBuffer) Frontend() {}

func (s *sendBuffer) Decode([]byte) error { return errors.New("a send buffer is not a message") }

func (s *sendBuffer) Encode(dst []byte) ([]byte, error) {
	if cap(s.buf) < len(dst)+s.need || cap(s.buf) > pipeBufferMax {
		s.buf = make([]byte, 0, len(dst)+s.need)
	}
	return append(s.buf[:0], dst...), nil
}

// pipeResults are SendBatch's results (pgx.BatchResults), as pgx's
// pipeline results read them.
type pipeResults struct {
	ctx      context.Context
	conn     *pgx.Conn
	pipeline *pgconn.Pipeline
	b        *pgx.Batch
	next     int // the next statement's results
	rows     pipeRows
	err      error
	closed   bool
	tracer   pgx.BatchTracer
}

// reader returns the next statement's result reader.
func (br *pipeResults) reader() (*pgconn.ResultReader, error) {
	switch {
	case br.err != nil:
		return nil, br.err
	case br.closed:
		return nil, errors.New("batch already closed")
	case br.rows.err != nil:
		br.err = br.rows.err
		return nil, br.err
	case br.next >= len(br.b.QueuedQueries):
		return nil, errors.New("no more results in batch")
	}
	br.next++
	res, err := br.pipeline.GetResults()
	if err == nil {
		rr, ok := res.(*pgconn.ResultReader)
		if ok {
			return rr, nil
		}
		err = fmt.Errorf("unexpected pipeline result: %T", res)
	}
	br.err = err
	br.traceQuery(pgconn.CommandTag{}, err)
	return nil, err
}

func (br *pipeResults) traceQuery(tag pgconn.CommandTag, err error) {
	if br.tracer != nil {
		q := br.b.QueuedQueries[br.next-1]
		br.tracer.TraceBatchQuery(br.ctx, br.conn, pgx.TraceBatchQueryData{SQL: q.SQL, Args: q.Arguments, CommandTag: tag, Err: err})
	}
}

func (br *pipeResults) Exec() (pgconn.CommandTag, error) {
	rr, err := br.reader()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := rr.Close()
	br.err = err
	br.traceQuery(tag, err)
	return tag, err
}

func (br *pipeResults) Query() (pgx.Rows, error) {
	rr, err := br.reader()
	br.rows = pipeRows{br: br, rr: rr, err: err, closed: err != nil}
	return &br.rows, err
}

// Tx is nil: a pipeline of SendBatch begins no transaction.
func (br *pipeResults) Tx() pgx.Tx { return nil }

func (br *pipeResults) QueryRow() pgx.Row {
	_, _ = br.Query()
	return pipeRow{&br.rows}
}

// Close reads the results not read yet and ends the pipeline. After an
// error that says a prepared statement changed or is gone, the batch's
// statements are deallocated, to be prepared again on their next use
// (pgx's statement cache forgets a statement after any error).
func (br *pipeResults) Close() error {
	if br.closed {
		return br.err
	}
	if br.err == nil && br.rows.err != nil {
		br.err = br.rows.err
	}
	for br.err == nil && br.next < len(br.b.QueuedQueries) {
		_, _ = br.Exec()
	}
	br.closed = true
	if br.pipeline != nil {
		if err := br.pipeline.Close(); br.err == nil {
			br.err = err
		}
	}
	if br.tracer != nil {
		br.tracer.TraceBatchEnd(br.ctx, br.conn, pgx.TraceBatchEndData{Err: br.err})
	}
	var pgErr *pgconn.PgError
	if errors.As(br.err, &pgErr) && (pgErr.Code == "0A000" || pgErr.Code == "26000") && !br.conn.IsClosed() {
		for _, q := range br.b.QueuedQueries {
			_ = br.conn.Deallocate(context.WithoutCancel(br.ctx), q.SQL)
		}
	}
	return br.err
}

// pipeRows are a statement's rows (pgx.Rows), read from its result
// reader and scanned as pgx scans them.
type pipeRows struct {
	br     *pipeResults
	rr     *pgconn.ResultReader
	tag    pgconn.CommandTag
	err    error
	closed bool
}

func (r *pipeRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	tag, err := r.rr.Close()
	r.tag = tag
	if r.err == nil {
		r.err = err
	}
	r.br.traceQuery(tag, r.err)
}

// fail closes r with err, unless it failed before.
func (r *pipeRows) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.Close()
}

func (r *pipeRows) Err() error { return r.err }

func (r *pipeRows) CommandTag() pgconn.CommandTag { return r.tag }

func (r *pipeRows) FieldDescriptions() []pgconn.FieldDescription {
	if r.rr == nil {
		return nil
	}
	return r.rr.FieldDescriptions()
}

func (r *pipeRows) Next() bool {
	if r.closed {
		return false
	}
	if r.rr.NextRow() {
		return true
	}
	r.Close()
	return false
}

func (r *pipeRows) Scan(dest ...any) error {
	if len(dest) == 1 {
		if rs, ok := dest[0].(pgx.RowScanner); ok {
			err := rs.ScanRow(r)
			if err != nil {
				r.fail(err)
			}
			return err
		}
	}
	fds, vals := r.FieldDescriptions(), r.RawValues()
	if len(fds) != len(dest) {
		err := fmt.Errorf("number of field descriptions must equal number of destinations, got %d and %d", len(fds), len(dest))
		r.fail(err)
		return err
	}
	m := r.br.conn.TypeMap()
	for i, fd := range fds {
		if dest[i] == nil {
			continue
		}
		if err := m.Scan(fd.DataTypeOID, fd.Format, vals[i], dest[i]); err != nil {
			err = pgx.ScanArgError{ColumnIndex: i, FieldName: fd.Name, Err: err}
			r.fail(err)
			return err
		}
	}
	return nil
}

func (r *pipeRows) Values() ([]any, error) {
	if r.closed {
		return nil, errors.New("rows is closed")
	}
	m := r.br.conn.TypeMap()
	fds, vals := r.FieldDescriptions(), r.RawValues()
	values := make([]any, len(fds))
	for i, fd := range fds {
		switch dt, ok := m.TypeForOID(fd.DataTypeOID); {
		case vals[i] == nil:
		case ok:
			v, err := dt.Codec.DecodeValue(m, fd.DataTypeOID, fd.Format, vals[i])
			if err != nil {
				r.fail(err)
				return nil, err
			}
			values[i] = v
		case fd.Format == pgtype.TextFormatCode:
			values[i] = string(vals[i])
		default:
			values[i] = bytes.Clone(vals[i])
		}
	}
	return values, r.err
}

func (r *pipeRows) RawValues() [][]byte { return r.rr.Values() }

func (r *pipeRows) Conn() *pgx.Conn { return r.br.conn }

func (r *pipeRows) TypeMap() *pgtype.Map { return r.br.conn.TypeMap() }

// pipeRow is a statement's one row (pgx.Row), as pgx's QueryRow reads it.
type pipeRow struct{ rows *pipeRows }

func (r pipeRow) Scan(dest ...any) error {
	rows := r.rows
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range dest {
		if _, ok := d.(*pgtype.DriverBytes); ok {
			rows.Close()
			return errors.New("cannot scan into *pgtype.DriverBytes from QueryRow")
		}
	}
	if !rows.Next() {
		if rows.Err() == nil {
			return pgx.ErrNoRows
		}
		return rows.Err()
	}
	_ = rows.Scan(dest...)
	rows.Close()
	return rows.Err()
}
