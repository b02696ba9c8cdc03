package placement

import (
	"container/list"
	"context"
	"io"
	"sync"
	"weak"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/engine"
)

// AnswerCache keeps encoded answers of GET /allocation_candidates, so
// that a query asked again of an unchanged cloud is answered with the
// bytes computed the first time instead of by another search.
//
// An answer is kept for its query (the query string as sent, so two
// spellings of one query are two entries, never one answer for two
// queries), microversion and candidate cap, and for the snapshot it was
// computed on (snapshot.Cache.CandidatesSnapshot): it is looked up only
// after the request has taken its fresh snapshot as every read does, and
// it matches only that very snapshot. A snapshot is immutable and every
// change to the ledger publishes another one, so a kept answer is always
// the answer an uncached request would compute, byte for byte; after a
// write, whoever made it, the next read's snapshot is another and the
// answers of the old one stop matching. Only deterministic answers are
// kept: none with randomized candidates, none whose search its
// request's context cut short.
//
// Memory is bounded: at most budget bytes of answers, none above a
// budget/answerShare; the least recently used go first, and a query
// keeps one answer, the last computed, so answers of past snapshots do
// not accumulate. Concurrent identical misses compute the answer once: the
// first computes it, the others wait for it.
type AnswerCache struct {
	budget, entryMax int

	mu      sync.Mutex
	answers map[queryKey]*list.Element // of *answer
	lru     list.List                  // front: the most recently used
	flights map[answerKey]*flight
	bytes   int
}

// answerShare is how many of the largest answer kept fit in the budget.
const answerShare = 8

// queryKey is what an answer is asked for: everything the answer
// depends on but the ledger's state.
type queryKey struct {
	query   string
	version wire.Version
	max     int
}

// answerKey is a queryKey asked of one snapshot. The pointer is weak: a
// kept answer does not keep its snapshot alive, and once the snapshot is
// gone no other snapshot's key equals it.
type answerKey struct {
	queryKey
	snap weak.Pointer[engine.Snapshot]
}

// answer is an encoded answer: its body and how many allocation
// requests it holds.
type answer struct {
	key      answerKey
	body     []byte
	requests int
}

// flight is an answer being computed; done is closed when it is,
// kept then holds it, or nil when it was not kept.
type flight struct {
	done chan struct{}
	kept *answer
}

// NewAnswerCache returns a cache of at most budget bytes of answers, or
// nil (no cache) when budget is not positive.
func NewAnswerCache(budget int) *AnswerCache {
	if budget <= 0 {
		return nil
	}
	return &AnswerCache{budget: budget, entryMax: budget / answerShare,
		answers: map[queryKey]*list.Element{}, flights: map[answerKey]*flight{}}
}

// take returns the answer kept for k; or, when there is none, the
// flight that computes it, and whether the caller leads it: a leader
// computes the answer and must call land once, the others wait for
// done.
func (c *AnswerCache) take(k answerKey) (a *answer, f *flight, lead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.answers[k.queryKey]; ok && e.Value.(*answer).key == k {
		c.lru.MoveToFront(e)
		return e.Value.(*answer), nil, false
	}
	if f, ok := c.flights[k]; ok {
		return nil, f, false
	}
	f = &flight{done: make(chan struct{})}
	c.flights[k] = f
	return nil, f, true
}

// land ends f, the flight of k the caller leads, and keeps a, when it
// is not nil and not too large, in place of the answer k's query kept
// before (a query keeps one answer, the last computed),
// taking out the least recently used answers while the budget is
// exceeded. Calls after the first do nothing.
func (c *AnswerCache) land(ctx context.Context, k answerKey, f *flight, a *answer) {
	c.mu.Lock()
	if c.flights[k] != f {
		c.mu.Unlock()
		return
	}
	delete(c.flights, k)
	before := c.bytes
	if a != nil && len(a.body) <= c.entryMax {
		f.kept = a
		if e, ok := c.answers[k.queryKey]; ok {
			c.drop(e)
		}
		for c.bytes+len(a.body) > c.budget {
			c.drop(c.lru.Back())
		}
		c.answers[k.queryKey] = c.lru.PushFront(a)
		c.bytes += len(a.body)
	}
	delta := c.bytes - before
	c.mu.Unlock()
	close(f.done)
	if delta != 0 {
		instrument.CandidatesCacheBytes(ctx, int64(delta))
	}
}

// drop takes e's answer out. c.mu is held.
func (c *AnswerCache) drop(e *list.Element) {
	a := c.lru.Remove(e).(*answer)
	delete(c.answers, a.key.queryKey)
	c.bytes -= len(a.body)
}

// keeper is the writer of an answer being kept: it holds the pieces
// written to it back from w while they total at most max bytes; past
// that it writes what it held to w and passes the rest on (spilled), and
// the answer is not kept.
type keeper struct {
	w       io.Writer
	max     int
	n       int
	pieces  [][]byte
	spilled bool
}

func (k *keeper) Write(p []byte) (int, error) {
	if !k.spilled {
		if k.n+len(p) <= k.max {
			k.pieces = append(k.pieces, append([]byte(nil), p...))
			k.n += len(p)
			return len(p), nil
		}
		k.spilled = true
		for _, q := range k.pieces {
			if _, err := k.w.Write(q); err != nil {
				return 0, err
			}
		}
		k.pieces = nil
	}
	return k.w.Write(p)
}

// body is the whole answer held back, or nil when it spilled.
func (k *keeper) body() []byte {
	if k.spilled {
		return nil
	}
	b := make([]byte, 0, k.n)
	for _, q := range k.pieces {
		b = append(b, q...)
	}
	return b
}
