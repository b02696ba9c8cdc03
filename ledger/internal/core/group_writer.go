package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Group commit: writes that arrive while the writers are busy are sent
// together, as one pipeline and one implicit transaction. Claims
// (ledger/resources/claim_writers.go) and the provider writes' fast paths
// (ledger/resources/provider_writers.go) use it. On a small machine much of PostgreSQL's
// CPU per write goes to its fixed cost (the round trip, the transaction's
// start and commit, the backend's wake-up), not to the rows written.
//
// A few writer goroutines each take a queued write and whatever else is
// queued then, up to a bound, and hand them to the write function as one
// group. A lone write at an idle writer goes out at once: groups form
// only from writes that would otherwise wait, and no write waits for a
// timer.

// GroupItem is one write queued for a writer, and where its answer goes.
type GroupItem[Req, Ans any] struct {
	Ctx  context.Context
	Req  Req
	done chan groupAnswer[Ans] // capacity 1
}

type groupAnswer[Ans any] struct {
	val Ans
	err error
}

// Answer sends the item its answer; each item is answered once.
func (it *GroupItem[Req, Ans]) Answer(val Ans, err error) {
	it.done <- groupAnswer[Ans]{val: val, err: err}
}

// GroupWriter runs the writers of one kind of write.
type GroupWriter[Req, Ans any] struct {
	queue chan *GroupItem[Req, Ans]
	// items are answered items, with their channels, for Send to use
	// again: a write function must not touch an item once it answered it.
	items sync.Pool
	// gone is closed when every writer has returned.
	gone chan struct{}
	// Groups and Items count the groups the writers handed to write and
	// the writes in them.
	Groups, Items atomic.Int64
}

// StartGroupWriter starts n writers on s's background work, which stop
// when ctx ends. Each hands write a group of at most max items, which
// write must answer, every one.
func StartGroupWriter[Req, Ans any](c *Core, ctx context.Context, n, max int,
	write func(ctx context.Context, group []*GroupItem[Req, Ans])) *GroupWriter[Req, Ans] {
	g := &GroupWriter[Req, Ans]{queue: make(chan *GroupItem[Req, Ans], 1024), gone: make(chan struct{})}
	var writers sync.WaitGroup
	for range n {
		writers.Add(1)
		go func() {
			defer writers.Done()
			g.run(ctx, max, write)
		}()
	}
	c.Go(func() {
		writers.Wait()
		close(g.gone)
	})
	return g
}

// run is one writer: it takes a write, then whatever else is queued (up
// to max), and hands them to write as one group, until ctx ends. Writes
// still queued then are answered with ErrClosed.
func (g *GroupWriter[Req, Ans]) run(ctx context.Context, max int, write func(context.Context, []*GroupItem[Req, Ans])) {
	group := make([]*GroupItem[Req, Ans], 0, max)
	var none Ans
	for {
		group = group[:0]
		if ctx.Err() != nil {
			for {
				select {
				case it := <-g.queue:
					it.Answer(none, ErrClosed)
				default:
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			continue
		case it := <-g.queue:
			group = appendLive(group, it)
		}
	fill:
		for len(group) < max {
			select {
			case it := <-g.queue:
				group = appendLive(group, it)
			default:
				break fill
			}
		}
		if len(group) > 0 {
			g.Groups.Add(1)
			g.Items.Add(int64(len(group)))
			write(ctx, group)
		}
	}
}

// appendLive appends it to group unless its caller has given up, in
// which case it is answered with the caller's error and never sent.
func appendLive[Req, Ans any](group []*GroupItem[Req, Ans], it *GroupItem[Req, Ans]) []*GroupItem[Req, Ans] {
	if err := it.Ctx.Err(); err != nil {
		var none Ans
		it.Answer(none, err)
		return group
	}
	return append(group, it)
}

// Send queues req for the writers and waits for its answer. Once
// queued, it waits even if ctx ends: the write may be in a group on its
// way to a commit, and its caller must learn whether it was written. A
// write whose caller gave up before its group formed is never sent.
func (g *GroupWriter[Req, Ans]) Send(ctx context.Context, req Req) (Ans, error) {
	var none Ans
	if err := ctx.Err(); err != nil {
		return none, err
	}
	it, _ := g.items.Get().(*GroupItem[Req, Ans])
	if it == nil {
		it = &GroupItem[Req, Ans]{done: make(chan groupAnswer[Ans], 1)}
	}
	it.Ctx, it.Req = ctx, req
	select {
	case g.queue <- it:
		// Room in the queue: queued at once. (A caller that gives up
		// now is answered by the writer with its error; writers that
		// have returned, below.)
	default:
		select {
		case g.queue <- it:
		case <-ctx.Done():
			g.release(it)
			return none, ctx.Err()
		case <-g.gone:
			g.release(it)
			return none, ErrClosed
		}
	}
	select {
	case a := <-it.done:
		g.release(it)
		return a.val, a.err
	case <-g.gone:
		// Every writer has returned; one may have answered just before.
		select {
		case a := <-it.done:
			return a.val, a.err
		default:
			return none, ErrClosed
		}
	}
}

// release keeps it, answered or never queued, for another Send.
func (g *GroupWriter[Req, Ans]) release(it *GroupItem[Req, Ans]) {
	var none Req
	it.Ctx, it.Req = nil, none
	g.items.Put(it)
}

// Queued is how many writes wait for the writers.
func (g *GroupWriter[Req, Ans]) Queued() int { return len(g.queue) }

// ErrClosed answers writes queued when the ledger closes.
var ErrClosed = errors.New("ledger: store closed")
