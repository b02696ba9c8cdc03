package snapshot

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestNotifierCoalescesAndSplits: changes queued while a send is in
// flight go out together, deduplicated, in payloads under PostgreSQL's
// limit that parse back to every id; a failed send is retried.
func TestNotifierCoalescesAndSplits(t *testing.T) {
	var mu sync.Mutex
	var got []string
	release := make(chan struct{})
	calls := 0
	send := func(ctx context.Context, payloads []string) error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			<-release // hold the first send while more changes queue
		}
		if n == 2 {
			return errors.New("database went away")
		}
		mu.Lock()
		got = append(got, payloads...)
		mu.Unlock()
		return nil
	}
	n := newNotifier("me", send, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.run(ctx); close(done) }()

	n.add([]int64{1}, false)
	time.Sleep(50 * time.Millisecond) // the first send is now in flight
	var want []int64
	for i := int64(1200); i > 0; i-- {
		n.add([]int64{i, i}, false)
		want = append(want, i)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		var ids []int64
		for _, p := range got {
			if len(p) > 7000 {
				t.Errorf("payload of %d bytes", len(p))
			}
			sender, some, all, ok := parseNotifyPayload(p)
			if !ok || sender != "me" || all {
				t.Fatalf("payload %q", p)
			}
			ids = append(ids, some...)
		}
		c := calls
		mu.Unlock()
		slices.Sort(ids)
		// The first send carried 1; the coalesced one failed once, then
		// carried 1..1200 once each.
		if len(ids) == 1201 {
			if !slices.Equal(ids[1:], slices.Sorted(slices.Values(want))) || c != 3 {
				t.Fatalf("%d sends, ids %v...", c, ids[:5])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d sends, %d ids notified", c, len(ids))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}
