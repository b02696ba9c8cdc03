package placement

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"weak"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
)

// keyOf is the key of query q at the latest microversion on snap.
func keyOf(q string, snap *engine.Snapshot) answerKey {
	return answerKey{queryKey: queryKey{query: q, version: wire.MaxVersion}, snap: weak.Make(snap)}
}

// keep leads k's flight and lands an answer of n bytes; it reports
// whether it led (nothing was kept for k).
func keep(t *testing.T, c *AnswerCache, k answerKey, n int) bool {
	t.Helper()
	a, f, lead := c.take(k)
	if !lead {
		if a == nil {
			t.Fatalf("%s: neither an answer nor the lead", k.query)
		}
		return false
	}
	c.land(context.Background(), k, f, &answer{key: k, body: bytes.Repeat([]byte{'x'}, n)})
	return true
}

// kept reports whether c holds an answer for k.
func kept(c *AnswerCache, k answerKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.answers[k.queryKey]
	return ok && e.Value.(*answer).key == k
}

// TestAnswerCacheBudget: the bytes held never exceed the budget, the
// least recently used answer goes first, an answer above the budget's
// share is not kept, and a query keeps only its latest snapshot's answer.
func TestAnswerCacheBudget(t *testing.T) {
	c := NewAnswerCache(1000)
	if NewAnswerCache(0) != nil {
		t.Fatal("a budget of 0 gives a cache")
	}
	snap := new(engine.Snapshot)
	for i := range 8 {
		if !keep(t, c, keyOf(fmt.Sprint(i), snap), 120) {
			t.Fatalf("query %d was kept before it was asked", i)
		}
	}
	if c.bytes != 960 || c.lru.Len() != 8 {
		t.Fatalf("8 answers of 120 bytes: %d bytes in %d answers", c.bytes, c.lru.Len())
	}
	if keep(t, c, keyOf("0", snap), 120) {
		t.Fatal("query 0 asked again was computed again")
	}
	keep(t, c, keyOf("8", snap), 120) // over the budget: query 1, the least recently used, goes
	if c.bytes > 1000 || kept(c, keyOf("1", snap)) || !kept(c, keyOf("0", snap)) || !kept(c, keyOf("8", snap)) {
		t.Fatalf("after the ninth answer: %d bytes, 0 kept %v, 1 kept %v", c.bytes, kept(c, keyOf("0", snap)), kept(c, keyOf("1", snap)))
	}
	keep(t, c, keyOf("big", snap), 126) // 1000/8 = 125 at most
	if kept(c, keyOf("big", snap)) {
		t.Fatal("an answer above budget/8 was kept")
	}
	next := new(engine.Snapshot)
	before := c.bytes
	if !keep(t, c, keyOf("0", next), 50) {
		t.Fatal("query 0 on another snapshot matched the first snapshot's answer")
	}
	if kept(c, keyOf("0", snap)) || !kept(c, keyOf("0", next)) || c.bytes != before-120+50 {
		t.Fatalf("query 0's answers after a new snapshot: old kept %v, %d bytes", kept(c, keyOf("0", snap)), c.bytes)
	}
	other := keyOf("0", next)
	other.version = wire.Version{Major: 1, Minor: 12}
	if !keep(t, c, other, 10) {
		t.Fatal("query 0 at 1.12 matched its answer at the latest microversion")
	}
	limited := keyOf("0", next)
	limited.max = 3
	if !keep(t, c, limited, 10) {
		t.Fatal("query 0 under another candidate cap matched")
	}
}

// TestAnswerCacheFlight: concurrent takes of one key have one leader;
// the others get its answer once it lands, or nothing when it keeps
// none; landing twice is harmless.
func TestAnswerCacheFlight(t *testing.T) {
	c := NewAnswerCache(1 << 20)
	snap := new(engine.Snapshot)
	for _, keepIt := range []bool{true, false} {
		k := keyOf(fmt.Sprint("q", keepIt), snap)
		_, f, lead := c.take(k)
		if !lead {
			t.Fatal("the first take does not lead")
		}
		var wg sync.WaitGroup
		got := make([]*answer, 16)
		took := make(chan struct{}, len(got))
		for i := range got {
			wg.Go(func() {
				a, g, lead := c.take(k)
				took <- struct{}{}
				if lead {
					t.Error("a second leader")
					c.land(context.Background(), k, g, nil)
					return
				}
				if a == nil {
					<-g.done
					a = g.kept
				}
				got[i] = a
			})
		}
		for range got {
			<-took // every take before the flight lands
		}
		var a *answer
		if keepIt {
			a = &answer{key: k, body: []byte("{}"), requests: 1}
		}
		c.land(context.Background(), k, f, a)
		c.land(context.Background(), k, f, nil)
		wg.Wait()
		for i, g := range got {
			if g != a {
				t.Errorf("keep %v: waiter %d got %v, want %v", keepIt, i, g, a)
			}
		}
		if kept(c, k) != keepIt {
			t.Errorf("keep %v: kept %v", keepIt, kept(c, k))
		}
	}
}

// TestKeeper: an answer within the limit is held back whole; one past
// it reaches the writer whole, in order, and is not kept.
func TestKeeper(t *testing.T) {
	pieces := []string{"abc", "defg", "hi"}
	var w bytes.Buffer
	k := &keeper{w: &w, max: 9}
	for _, p := range pieces {
		if _, err := k.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if w.Len() != 0 || string(k.body()) != "abcdefghi" {
		t.Fatalf("within the limit: wrote %q, held %q", w.String(), k.body())
	}
	w.Reset()
	k = &keeper{w: &w, max: 8}
	for _, p := range pieces {
		if _, err := k.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if w.String() != "abcdefghi" || k.body() != nil {
		t.Fatalf("past the limit: wrote %q, held %q", w.String(), k.body())
	}
}
