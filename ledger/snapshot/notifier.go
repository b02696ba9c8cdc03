package snapshot

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// notifier tells the other processes on the database that providers
// changed, after commit, coalescing the changes of many transactions into
// few notifications. A notification is a hint: it wakes a catch-up with
// the change log in its receivers (changelog.go), which keeps their
// snapshots warm; what they read is decided by the change log alone.
//
// Why not pg_notify inside each write transaction: PostgreSQL serialises
// the commits of every transaction that notified, cluster-wide, under one
// lock held through the commit's WAL flush, so notifying writers cannot
// share a flush (group commit), which cuts the rate of small write
// transactions several times over. Claims keep that rate only if they do
// not notify.
//
// A process killed between a commit and the notification (microseconds
// to milliseconds) sends none: its peers' next reads find the commit in
// the change log all the same, and their next background catch-up (at
// most warmInterval later) brings it to their claims' rankings.
type notifier struct {
	send   func(ctx context.Context, payloads []string) error
	sender string
	log    *slog.Logger

	mu      sync.Mutex
	pending []int64
	all     bool
	wake    chan struct{} // capacity 1: something is pending
}

func newNotifier(sender string, send func(ctx context.Context, payloads []string) error, log *slog.Logger) *notifier {
	return &notifier{sender: sender, send: send, log: log, wake: make(chan struct{}, 1)}
}

// add queues ids (or everything) for the next notification. It does not
// block.
func (n *notifier) add(ids []int64, all bool) {
	n.mu.Lock()
	n.pending = append(n.pending, ids...)
	n.all = n.all || all
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// take empties the queue.
func (n *notifier) take() (ids []int64, all bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ids, all = n.pending, n.all
	n.pending, n.all = nil, false
	return ids, all
}

// payloads renders a notification of ids (or everything): ids sorted,
// deduplicated and split so that no payload passes PostgreSQL's 8,000
// byte limit.
func (n *notifier) payloads(ids []int64, all bool) []string {
	if all {
		return []string{notifyPayload(n.sender, nil, true)}
	}
	if len(ids) == 0 {
		return nil
	}
	ids = slices.Clone(ids) // the caller re-queues ids if the send fails
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []string
	const perPayload = 500 // ids of at most 13 digits: under 7,000 bytes
	for len(ids) > 0 {
		k := min(perPayload, len(ids))
		out = append(out, notifyPayload(n.sender, ids[:k], false))
		ids = ids[k:]
	}
	return out
}

// run sends queued notifications until ctx is done, then sends what is
// left (for up to two seconds). While one send is in flight, changes
// queue up and go out together in the next. A failed send is retried
// after a pause.
func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			if payloads := n.payloads(n.take()); len(payloads) > 0 {
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				if err := n.send(fctx, payloads); err != nil {
					n.log.Warn("ledger: change notification lost at shutdown", "error", err)
				}
				cancel()
			}
			return
		case <-n.wake:
		}
		ids, all := n.take()
		payloads := n.payloads(ids, all)
		if len(payloads) == 0 {
			continue
		}
		if err := n.send(ctx, payloads); err != nil {
			if ctx.Err() == nil {
				n.log.Warn("ledger: sending change notification; will retry", "error", err)
			}
			n.add(ids, all)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}
