package ledger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Group commit of fast-path claims.
//
// Each fast-path claim alone is one implicit transaction: one round trip,
// one commit, one WAL flush, one backend wake-up. On a small machine most
// of PostgreSQL's CPU per claim goes to that fixed cost, not to the rows
// written (pgbench here: about 1,900 one-row update transactions/s at 16
// clients, whatever the row). So claims that arrive while the writers are
// busy are written together: a few writer goroutines each take the claims
// queued, up to claimBatchMax, and send them as one pipeline, one implicit
// transaction:
//
//  1. fastPlanSQL, once;
//  2. fastLockSQL over every provider of every claim of the batch, once,
//     in id order (as every writer of allocations locks), so batches
//     cannot deadlock on provider rows;
//  3. fastWriteSQL once per claim, in queue order.
//
// Each write statement is the one a lone claim runs, with its own
// capacity re-check; a later statement of the same transaction sees the
// rows of the earlier ones, so two claims of one batch on one provider
// are checked against each other as two transactions would be. A claim
// whose statement refuses (no room, an unknown class, a consumer that
// exists) writes nothing and does not stop the others; its caller runs
// the general path, as after a lone fast write that refused.
//
// A batch is atomic as a whole only in failure: if any statement raises
// an error (a deadlock on a new project name with another process, a
// value PostgreSQL rejects, a lost connection), the whole implicit
// transaction rolls back and every claim of the batch is sent again
// alone, where it meets its own error or succeeds. So a batch never
// changes what a claim may do or the error it gets, only what the claims
// cost.
//
// A lone claim at an idle writer goes out at once: batches form only
// from claims that would otherwise wait, and no claim waits for a timer.

// claimBatchMax bounds the claims of one batch: a batch holds the row
// locks of all its providers until it commits, so a very large batch
// would hold other writers back for longer. At 16 with one writer, 64
// clients queued faster than batches drained (790 claims/s against
// 1,300 to 1,500 at 64).
const claimBatchMax = 64

// DefaultClaimWriters is how many batches are in flight at once when
// Config.ClaimWriters is 0. One is the classic group commit: while a
// batch is on its way, the next one gathers. On the 2-core machine of
// docs/performance.md one writer gave the most claims per second at 16
// and at 64 clients; more writers make smaller batches, which cost
// PostgreSQL more CPU per claim.
const DefaultClaimWriters = 1

// errAlone tells a caller that its claim was part of a batch that failed
// as a whole and that it must send its claim again, alone.
var errAlone = errors.New("ledger: claim batch failed; send alone")

// errClosed answers claims queued when the store closes.
var errClosed = errors.New("ledger: store closed")

// claimReq is one claim queued for a writer, and where its answer goes.
type claimReq struct {
	ctx  context.Context
	fc   fastClaim
	done chan claimAnswer // capacity 1
}

type claimAnswer struct {
	w   *ownWrite // nil: the statement refused, nothing written
	err error
}

// claimBatcher runs the writers.
type claimBatcher struct {
	queue chan *claimReq
	// gone is closed when every writer has returned.
	gone chan struct{}
	// sent counts the transactions the writers sent and the claims in
	// them.
	batches, claims atomic.Int64
}

// startClaimBatcher starts n writers on s, which stop when ctx ends.
func (s *Store) startClaimBatcher(ctx context.Context, n int) *claimBatcher {
	b := &claimBatcher{queue: make(chan *claimReq, 1024), gone: make(chan struct{})}
	var writers sync.WaitGroup
	for range n {
		writers.Add(1)
		go func() {
			defer writers.Done()
			s.writeBatches(ctx, b.queue)
		}()
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		writers.Wait()
		close(b.gone)
	}()
	return b
}

// writeBatches is one writer: it takes a claim, then whatever else is
// queued (up to claimBatchMax), and writes them as one batch, until ctx
// ends. Claims still queued then are answered with errClosed.
func (s *Store) writeBatches(ctx context.Context, queue chan *claimReq) {
	batch := make([]*claimReq, 0, claimBatchMax)
	for {
		batch = batch[:0]
		if ctx.Err() != nil {
			for {
				select {
				case r := <-queue:
					r.done <- claimAnswer{err: errClosed}
				default:
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			continue
		case r := <-queue:
			batch = appendLive(batch, r)
		}
	fill:
		for len(batch) < claimBatchMax {
			select {
			case r := <-queue:
				batch = appendLive(batch, r)
			default:
				break fill
			}
		}
		if len(batch) > 0 {
			s.claims.batches.Add(1)
			s.claims.claims.Add(int64(len(batch)))
			s.writeBatch(ctx, batch)
		}
	}
}

// appendLive appends r to batch unless its caller has given up, in which
// case r is answered with the caller's error and never sent.
func appendLive(batch []*claimReq, r *claimReq) []*claimReq {
	if err := r.ctx.Err(); err != nil {
		r.done <- claimAnswer{err: err}
		return batch
	}
	return append(batch, r)
}

// writeBatch sends batch as one implicit transaction and answers each
// claim. A batch of one answers with its error as sendFast does; a
// larger batch that fails answers errAlone to every claim.
func (s *Store) writeBatch(ctx context.Context, batch []*claimReq) {
	if len(batch) == 1 {
		// The caller's context, as a lone claim always had: a caller
		// that gives up cancels its statement.
		r := batch[0]
		w, err := s.sendFastAndNotify(r.ctx, r.fc)
		r.done <- claimAnswer{w: w, err: err}
		return
	}
	fcs := make([]fastClaim, len(batch))
	for i, r := range batch {
		fcs[i] = r.fc
	}
	ws, err := s.sendWrites(ctx, fcs)
	if err != nil {
		for _, r := range batch {
			r.done <- claimAnswer{err: errAlone}
		}
		return
	}
	// The snapshot applies the writes at once, in commit order (two
	// claims of the batch on one provider bump its generation twice),
	// before any caller learns of its write (read-your-writes).
	t := &txn{}
	for _, w := range ws {
		if w != nil {
			t.touched = append(t.touched, w.providers...)
			t.writes = append(t.writes, w)
		}
	}
	s.notify(t)
	for i, r := range batch {
		r.done <- claimAnswer{w: ws[i]}
	}
}

// queueClaim hands fc to the writers and waits for its answer. Once
// queued, it waits even if ctx ends: the claim may be in a batch on its
// way to a commit, and its caller must learn whether it was written. A
// claim whose caller gave up before its batch formed is never sent.
func (s *Store) queueClaim(ctx context.Context, fc fastClaim) (*ownWrite, error) {
	r := &claimReq{ctx: ctx, fc: fc, done: make(chan claimAnswer, 1)}
	select {
	case s.claims.queue <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.claims.gone:
		return nil, errClosed
	}
	select {
	case a := <-r.done:
		return a.w, a.err
	case <-s.claims.gone:
		// Every writer has returned; one may have answered just before.
		select {
		case a := <-r.done:
			return a.w, a.err
		default:
			return nil, errClosed
		}
	}
}
