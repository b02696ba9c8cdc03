package resources

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Group commit of the provider writes' fast paths (provider_pipeline.go):
// the writes a cloud is seeded and kept up to date with (a compute
// node's creation, inventories, aggregates and traits), which arrive
// many at a time from many agents. Alone, each is one implicit
// transaction; while a writer is busy, the writes that arrive are
// queued and then sent together (ledger/internal/core/group_writer.go), as one pipeline and
// one implicit transaction:
//
//  1. fastPlanSQL, once;
//  2. fastLockSQL over the providers every write of the group locks,
//     once, in id order, as every writer of allocations locks (claims
//     lock their providers so), so that a group and a claim batch
//     cannot deadlock on provider rows;
//  3. each write's own statements but its lock (lockProviderSQL, which
//     fastLockSQL took already), in the order of the providers' uuids
//     (writes on one provider in the order they came).
//
// Each write's statement checks what it checks alone and writes only
// if every check passes, against the rows as the writes before it in
// the group left them, as if each had run in a transaction of its own,
// one after the other. A write whose statement refuses writes nothing
// and does not stop the others; after the group commits, its caller
// runs the general path, as after a lone fast path that refused.
//
// A group is atomic as a whole only in failure: if any statement raises
// an error (a name taken by a concurrent create, a deadlock on a new
// aggregate, a lost connection), the whole implicit transaction rolls
// back and every write of the group is sent again alone, where it meets
// its own error or succeeds. So a group never changes what a write may
// do or the answer it gets, only what the writes cost.

// providerGroupMax bounds the writes of one group: a group holds the row
// locks of all its providers until it commits.
const providerGroupMax = 32

// startTripWriter starts n provider writers on s, which stop when ctx
// ends.
func (s *Providers) startTripWriter(ctx context.Context, n int) *core.GroupWriter[oneTrip, struct{}] {
	return core.StartGroupWriter(s.core, ctx, n, providerGroupMax, s.writeTrips)
}

// writeTrips sends group as one implicit transaction and answers each
// write: nil (written), errFallBack (its statement refused), errAlone
// (the group failed as a whole) or an outage. A group of one is sent
// alone, with its caller's context.
func (s *Providers) writeTrips(ctx context.Context, group []*core.GroupItem[oneTrip, struct{}]) {
	if len(group) == 1 {
		it := group[0]
		it.Answer(struct{}{}, s.sendAlone(it.Ctx, it.Req))
		return
	}
	slices.SortStableFunc(group, func(a, b *core.GroupItem[oneTrip, struct{}]) int { return strings.Compare(a.Req.lock, b.Req.lock) })
	trips := make([]oneTrip, len(group))
	for i, it := range group {
		trips[i] = it.Req
	}
	answers, err := s.sendTrips(ctx, trips)
	for i, it := range group {
		if err != nil {
			it.Answer(struct{}{}, err)
		} else {
			it.Answer(struct{}{}, answers[i])
		}
	}
}

// sendTrips sends trips (two or more) as one pipeline and one implicit
// transaction. It answers, per write, nil or errFallBack once the group
// committed (core.ErrNotReplicated for the written ones if the commit's wait
// for the synchronous standby was cancelled); errAlone when the group
// wrote nothing because of an error that the writes sent alone may not
// meet; any other error as is (no connection to be had, or an outage
// after which the group may have committed).
func (s *Providers) sendTrips(ctx context.Context, trips []oneTrip) ([]error, error) {
	var locks []string
	for _, w := range trips {
		if w.lock != "" {
			locks = append(locks, w.lock)
		}
	}
	b := planAndLock(locks)
	for _, w := range trips {
		qs := w.b.QueuedQueries
		if w.lock != "" {
			qs = qs[1:]
		}
		queueAfresh(b, qs)
	}
	answers := make([]error, len(trips))
	ts := make([]core.Txn, len(trips))
	err := s.sendPipeline(ctx, b, func(br pgx.BatchResults) error {
		if err := skipResults(br, 2); err != nil {
			return err
		}
		for i, w := range trips {
			wbr := br
			if w.lock != "" {
				wbr = &lockTaken{BatchResults: br}
			}
			if err := w.read(wbr, &ts[i]); errors.Is(err, errFallBack) {
				answers[i] = errFallBack // this write refused; the others go on
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errFallBack):
		// Nothing of the group was written: each write may meet
		// alone what failed it, or not.
		return nil, errAlone
	case err != nil && !errors.Is(err, core.ErrNotReplicated):
		return nil, err
	}
	t := &core.Txn{}
	for i := range trips {
		if answers[i] == nil {
			s.fastWrites.Add(1)
			t.Touched = append(t.Touched, ts[i].Touched...)
			answers[i] = err // nil, or core.ErrNotReplicated
		}
	}
	s.core.Notify(t)
	return answers, nil
}

// lockTaken hands a write's reader the answer of its lock statement,
// which its group left out (fastLockSQL took the lock), without reading
// from the pipeline: the reader skips it with Exec, as when alone.
type lockTaken struct {
	pgx.BatchResults
	answered bool
}

func (r *lockTaken) Exec() (pgconn.CommandTag, error) {
	if !r.answered {
		r.answered = true
		return pgconn.NewCommandTag("SELECT 1"), nil
	}
	return r.BatchResults.Exec()
}
