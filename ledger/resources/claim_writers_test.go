package resources_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// holdProvider locks provider rp's row in a transaction of its own, as a
// writer of another process would, and returns the function that ends
// that transaction.
func holdProvider(t *testing.T, f *fixture, dbURL, rp string) (release func()) {
	t.Helper()
	conn, err := pgx.Connect(f.Ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(f.Ctx, `SELECT 1 FROM resource_providers WHERE uuid = $1 FOR UPDATE`, rp); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = tx.Rollback(context.Background())
			_ = conn.Close(context.Background())
		})
	}
	t.Cleanup(release)
	return release
}

// batchFixture is a store with one claim writer, whose first claim (on
// held) waits behind another transaction's lock until release is
// called, so that the claims sent meanwhile queue up and go out in the
// next batch.
type batchFixture struct {
	*fixture
	store   *ledger.Store
	first   chan error
	release func()
	dbURL   string
}

func newBatchFixture(t *testing.T) (bf *batchFixture, held string) {
	t.Helper()
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	store, err := ledger.Open(f.Ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 8, ClaimWriters: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	f.Store = store
	ledgertest.WaitFor(t, func() bool { return ledgertest.Listening(store) })
	held = f.Provider("held", ledgertest.Inv("VCPU", 8))
	bf = &batchFixture{fixture: f, store: store, first: make(chan error, 1), dbURL: dbURL}
	bf.release = holdProvider(t, f, dbURL, held)
	go func() {
		bf.first <- store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), held, ledgertest.Res("VCPU", 1))})
	}()
	// The writer has taken the first claim once the queue is empty
	// and a batch was counted.
	ledgertest.WaitFor(t, func() bool { b, _ := claimBatches(store); return b == 1 })
	return bf, held
}

// send sends ws concurrently, each alone, and waits until all are queued.
func (bf *batchFixture) send(t *testing.T, ws []resources.ConsumerAllocations) []chan error {
	t.Helper()
	queued := queuedClaims(bf.store)
	out := make([]chan error, len(ws))
	for i, w := range ws {
		out[i] = make(chan error, 1)
		go func() { out[i] <- bf.store.Allocations.AllocationsReplace(bf.Ctx, []resources.ConsumerAllocations{w}) }()
	}
	ledgertest.WaitFor(t, func() bool { return queuedClaims(bf.store) == queued+len(ws) })
	return out
}

// TestClaimBatchCommitsQueuedClaimsTogether queues eight claims for five
// free units while the writer is busy: they go out as one transaction,
// whose statements see each other's rows, so exactly five are written and
// three refused with the general path's capacity error. The snapshot
// applies the five writes in commit order, with no reload.
func TestClaimBatchCommitsQueuedClaimsTogether(t *testing.T) {
	bf, held := newBatchFixture(t)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 5), ledgertest.Inv("MEMORY_MB", 64))
	bf.summaryBy(rp, "MEMORY_MB") // load the snapshot
	bf.Known([]string{"batch-project"}, []string{"batch-user"}, nil)
	var ws []resources.ConsumerAllocations
	for range 8 {
		w := ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))
		w.ProjectID, w.UserID = "batch-project", "batch-user" // shared by the batch
		ws = append(ws, w)
	}
	answers := bf.send(t, ws)
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	written := 0
	for _, a := range answers {
		err := <-a
		switch {
		case err == nil:
			written++
		default:
			if le := ledgertest.Rejection(t, err, fault.ErrConflict); !strings.Contains(le.Msg, "would exceed the capacity") {
				t.Errorf("refused claim: %v", le)
			}
		}
	}
	if written != 5 {
		t.Fatalf("%d claims written, want 5", written)
	}
	if u := bf.Usages(rp); u.Usages["VCPU"] != 5 || u.Generation != 1+5 {
		t.Fatalf("provider after the batch: %+v, want VCPU 5 at generation 6", u)
	}
	if n := snapshotStale(bf.store); n != 0 {
		t.Fatalf("%d providers dirty after the batch, want its writes applied", n)
	}
	if s := bf.summaryBy(rp, "MEMORY_MB"); s.Generation != 6 || ledgertest.Used(s, "VCPU") != 5 {
		t.Fatalf("snapshot after the batch: %+v, want VCPU 5 used at generation 6", s)
	}
	if u := bf.Usages(held); u.Usages["VCPU"] != 1 {
		t.Fatalf("held provider: %+v, want VCPU 1", u)
	}
	if batches, claims := claimBatches(bf.store); batches != 2 || claims != 9 {
		t.Fatalf("writers sent %d transactions of %d claims, want 2 of 9 (the first alone, then eight together)", batches, claims)
	}
}

// sendInOrder sends ws each alone, one after the other, each once the
// one before is queued, so that the writer takes them in this order.
func (bf *batchFixture) sendInOrder(t *testing.T, ws []resources.ConsumerAllocations) []chan error {
	t.Helper()
	queued := queuedClaims(bf.store)
	out := make([]chan error, len(ws))
	for i, w := range ws {
		out[i] = make(chan error, 1)
		go func() { out[i] <- bf.store.Allocations.AllocationsReplace(bf.Ctx, []resources.ConsumerAllocations{w}) }()
		ledgertest.WaitFor(t, func() bool { return queuedClaims(bf.store) == queued+i+1 })
	}
	return out
}

// TestClaimBatchRefusalsInTheMiddle queues, in this order, eight claims
// on a provider with 5 free VCPU, one of them for a class that does not
// exist and the last on another provider: 1, 2, 3 (no room left: 6 of
// 5), 1, the unknown class, 2 (no room: 6 of 5), 1, and 1 elsewhere.
// They go out as one batch; each is checked against exactly the claims
// written before it in queue order, so claims 3, 5 and 6 are refused
// with the general path's errors and the five others written, the
// provider full, its generation bumped once per claim written.
func TestClaimBatchRefusalsInTheMiddle(t *testing.T) {
	bf, _ := newBatchFixture(t)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 5), ledgertest.Inv("MEMORY_MB", 64))
	other := bf.Provider("other", ledgertest.Inv("VCPU", 5))
	bf.summaryBy(rp, "MEMORY_MB") // load the snapshot
	bf.Known([]string{"batch-project"}, []string{"batch-user"}, nil)
	claim := func(rp string, r engine.ResourceAmount) resources.ConsumerAllocations {
		w := ledgertest.NewClaim(uuid.NewString(), rp, r)
		w.ProjectID, w.UserID = "batch-project", "batch-user" // shared by the batch
		return w
	}
	ws := []resources.ConsumerAllocations{
		claim(rp, ledgertest.Res("VCPU", 1)), claim(rp, ledgertest.Res("VCPU", 2)), claim(rp, ledgertest.Res("VCPU", 3)),
		claim(rp, ledgertest.Res("VCPU", 1)), claim(rp, ledgertest.Res("CUSTOM_NO_SUCH_CLASS", 1)), claim(rp, ledgertest.Res("VCPU", 2)),
		claim(rp, ledgertest.Res("VCPU", 1)), claim(other, ledgertest.Res("VCPU", 1)),
	}
	answers := bf.sendInOrder(t, ws)
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	for i, a := range answers {
		err := <-a
		switch i + 1 {
		case 3, 6:
			if le := ledgertest.Rejection(t, err, fault.ErrConflict); !strings.Contains(le.Msg, "would exceed the capacity") {
				t.Errorf("claim %d: %v, want no room", i+1, le)
			}
		case 5:
			if le := ledgertest.Rejection(t, err, fault.ErrInvalid); !strings.Contains(le.Msg, "No such resource class") {
				t.Errorf("claim 5: %v, want an unknown class", le)
			}
		default:
			if err != nil {
				t.Errorf("claim %d: %v, want it written", i+1, err)
			}
		}
	}
	for i, w := range ws {
		got, err := bf.store.Allocations.AllocationsByConsumer(bf.Ctx, w.ConsumerUUID)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if n := i + 1; n != 3 && n != 5 && n != 6 {
			want = 1
		}
		if len(got.Allocations) != want || (want == 1 && got.Allocations[0].Used != w.Allocations[0].Resources[0].Amount) {
			t.Errorf("claim %d holds %+v, want %d allocation of %v", i+1, got.Allocations, want, w.Allocations[0].Resources)
		}
	}
	if u := bf.Usages(rp); u.Usages["VCPU"] != 5 || u.Generation != 1+4 {
		t.Fatalf("provider after the batch: %+v, want VCPU 5 at generation 5", u)
	}
	if u := bf.Usages(other); u.Usages["VCPU"] != 1 || u.Generation != 1+1 {
		t.Fatalf("other provider after the batch: %+v, want VCPU 1 at generation 2", u)
	}
	if n := snapshotStale(bf.store); n != 0 {
		t.Fatalf("%d providers dirty after the batch, want its writes applied", n)
	}
	if s := bf.summaryBy(rp, "MEMORY_MB"); s.Generation != 5 || ledgertest.Used(s, "VCPU") != 5 {
		t.Fatalf("snapshot after the batch: %+v, want VCPU 5 used at generation 5", s)
	}
	if batches, claims := claimBatches(bf.store); batches != 2 || claims != 9 {
		t.Fatalf("writers took %d batches of %d claims, want 2 of 9 (the first alone, then eight together)", batches, claims)
	}
}

// TestClaimBatchNewNames queues, in one batch, claims of a known owner
// and claims of a new project, one of them with a new user and more than
// the provider holds.
// The fast path creates no project, user or type (claim_write.go): the
// batch stops at the first claim of a new name, and that claim and those
// after it are written, or refused, as alone: the claims of the new
// project by the general path, which creates it; the one without room is
// refused with the general path's error and leaves no user behind.
func TestClaimBatchNewNames(t *testing.T) {
	bf, _ := newBatchFixture(t)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 4))
	claim := func(project, user string, vcpu int64) resources.ConsumerAllocations {
		w := ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", vcpu))
		w.ProjectID, w.UserID = project, user
		return w
	}
	ws := []resources.ConsumerAllocations{
		claim("proj", "user", 1), claim("new-project", "user", 1), claim("proj", "user", 1),
		claim("new-project", "new-user", 5), claim("new-project", "user", 1),
	}
	answers := bf.sendInOrder(t, ws)
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	for i, a := range answers {
		err := <-a
		if i == 3 {
			if le := ledgertest.Rejection(t, err, fault.ErrConflict); !strings.Contains(le.Msg, "would exceed the capacity") {
				t.Errorf("claim 4: %v, want no room", le)
			}
		} else if err != nil {
			t.Errorf("claim %d: %v, want it written", i+1, err)
		}
	}
	if u := bf.Usages(rp); u.Usages["VCPU"] != 4 {
		t.Fatalf("provider after the batch: %+v, want VCPU 4", u)
	}
	var users int
	if err := bf.DB.QueryRow(bf.Ctx, `SELECT count(*) FROM users WHERE external_id = 'new-user'`).Scan(&users); err != nil {
		t.Fatal(err)
	}
	if users != 0 {
		t.Fatalf("the refused claim's new user was created")
	}
	if batches, claims := claimBatches(bf.store); batches != 2 || claims != 6 {
		t.Fatalf("writers took %d batches of %d claims, want 2 of 6 (the first alone, then five together)", batches, claims)
	}
	bf.checkUsages()
}

// TestClaimBatchSameConsumerTwice queues two claims for one new
// consumer in one batch: the first is written, the second finds the
// consumer written and is refused as after any claim for an existing
// consumer, and the claim queued after them is written.
func TestClaimBatchSameConsumerTwice(t *testing.T) {
	bf, _ := newBatchFixture(t)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 8))
	consumer := uuid.NewString()
	ws := []resources.ConsumerAllocations{
		ledgertest.NewClaim(consumer, rp, ledgertest.Res("VCPU", 1)), ledgertest.NewClaim(consumer, rp, ledgertest.Res("VCPU", 2)), ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 4)),
	}
	answers := bf.sendInOrder(t, ws)
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := <-answers[0]; err != nil {
		t.Fatalf("first claim of the consumer: %v", err)
	}
	ledgertest.Rejection(t, <-answers[1], fault.ErrConflict)
	if err := <-answers[2]; err != nil {
		t.Fatalf("claim after them: %v", err)
	}
	got, err := bf.store.Allocations.AllocationsByConsumer(bf.Ctx, consumer)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Allocations) != 1 || got.Allocations[0].Used != 1 {
		t.Fatalf("consumer holds %+v, want VCPU 1", got.Allocations)
	}
	if u := bf.Usages(rp); u.Usages["VCPU"] != 5 {
		t.Fatalf("provider: %+v, want VCPU 5", u)
	}
}

// TestClaimBatchFailureSendsAlone puts a claim PostgreSQL rejects (a NUL
// byte in its name) in a batch with good ones: the batch rolls back as a
// whole, every claim is sent again alone, the good ones are written and
// the bad one gets the error it gets alone, having written nothing.
func TestClaimBatchFailureSendsAlone(t *testing.T) {
	bf, _ := newBatchFixture(t)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 8))
	var ws []resources.ConsumerAllocations
	for range 4 {
		ws = append(ws, ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1)))
	}
	bad := ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))
	bad.Name = "bad\x00name"
	ws = append(ws[:2], append([]resources.ConsumerAllocations{bad}, ws[2:]...)...)
	answers := bf.send(t, ws)
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	for i, a := range answers {
		err := <-a
		if i == 2 {
			// As a lone fast write fails; the ledger words it for clients.
			if le, ok := fault.As(err); !ok || !errors.Is(le, fault.ErrInvalid) {
				t.Errorf("claim with a NUL byte: %v, want fault.ErrInvalid", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("claim %d: %v", i, err)
		}
	}
	if u := bf.Usages(rp); u.Usages["VCPU"] != 4 {
		t.Fatalf("provider after the batch: %+v, want VCPU 4", u)
	}
	got, err := bf.store.Allocations.AllocationsByConsumer(bf.Ctx, bad.ConsumerUUID)
	if err != nil && !errors.Is(err, fault.ErrNotFound) {
		t.Fatal(err)
	}
	if err == nil && (got.Consumer != nil || len(got.Allocations) > 0) {
		t.Fatalf("the rejected claim left %+v", got)
	}
}

// TestClaimBatchSkipsAbandonedClaims queues a claim whose caller gives
// up while the writer is busy: it is never sent, its caller gets its
// context's error, and the claims queued with it are written.
func TestClaimBatchSkipsAbandonedClaims(t *testing.T) {
	bf, _ := newBatchFixture(t)
	rp := bf.Provider("rp", ledgertest.Inv("VCPU", 8))
	ctx, cancel := context.WithCancel(bf.Ctx)
	gone := ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))
	abandoned := make(chan error, 1)
	go func() {
		abandoned <- bf.store.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{gone})
	}()
	ledgertest.WaitFor(t, func() bool { return queuedClaims(bf.store) == 1 })
	kept := bf.send(t, []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 2))})
	cancel()
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := <-abandoned; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned claim: %v, want context.Canceled", err)
	}
	if err := <-kept[0]; err != nil {
		t.Fatalf("claim queued with it: %v", err)
	}
	if u := bf.Usages(rp); u.Usages["VCPU"] != 2 {
		t.Fatalf("provider: %+v, want VCPU 2 (the abandoned claim not written)", u)
	}
}

// summaryBy returns what the snapshot says of one provider, found as a
// candidate for one unit of class.
func (f *fixture) summaryBy(rp, class string) engine.ProviderSummary {
	f.T.Helper()
	c, err := f.Store.Snapshots.AllocationCandidates(f.Ctx, engine.CandidatesParams{NestedAware: true,
		Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: class, Amount: 1}}}}})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, s := range c.Summaries {
		if s.UUID == rp {
			return s
		}
	}
	f.T.Fatalf("provider %s not in the candidates", rp)
	return engine.ProviderSummary{}
}

// TestClaimBatchLogsItsChangeOnce: a batch statement writes the change
// log's row of the providers its claims changed itself, and the triggers
// of its statement do not run (migrations/0017 and 0019): one row, every
// provider. Only the statement that begins with the mark skips them: a
// later statement of the same transaction logs as before.
func TestClaimBatchLogsItsChangeOnce(t *testing.T) {
	bf, _ := newBatchFixture(t)
	bf.Known([]string{"batch-project"}, []string{"batch-user"}, nil)
	var rps []string
	var ws []resources.ConsumerAllocations
	for i := range 3 {
		rp := bf.Provider(fmt.Sprint("rp", i), ledgertest.Inv("VCPU", 8))
		rps = append(rps, rp)
		w := ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))
		w.ProjectID, w.UserID = "batch-project", "batch-user"
		ws = append(ws, w)
	}
	var before []string // the change log's rows before the batch
	rows, err := bf.DB.Query(bf.Ctx, `SELECT xid::text FROM ledger_changes`)
	if err != nil {
		t.Fatal(err)
	}
	if before, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	answers := bf.send(t, ws)
	bf.release()
	if err := <-bf.first; err != nil {
		t.Fatal(err)
	}
	for _, a := range answers {
		if err := <-a; err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := claimBatches(bf.store); b != 2 {
		t.Fatalf("%d transactions, want 2 (the first claim alone, then the batch)", b)
	}
	changes := func(where string, args ...any) [][]int64 {
		t.Helper()
		rows, err := bf.DB.Query(bf.Ctx, `SELECT providers FROM ledger_changes WHERE `+where+` ORDER BY providers`, args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[[]int64])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	var ids []int64
	for _, rp := range rps {
		var id int64
		if err := bf.DB.QueryRow(bf.Ctx, `SELECT id FROM resource_providers WHERE uuid = $1`, rp).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	got := changes(`providers && $1::bigint[] AND xid::text <> ALL ($2::text[])`, ids, before)
	if len(got) != 1 || !slices.Equal(slices.Sorted(slices.Values(got[0])), ids) {
		t.Fatalf("the batch's change log rows: %v, want one row of %v", got, ids)
	}

	// The mark, by hand: a statement that begins with it runs neither
	// trigger; the next statement of the same transaction logs, and so
	// does one that holds the mark elsewhere than at its start.
	tx, err := bf.DB.Begin(bf.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(bf.Ctx)
	var xid string
	if err := tx.QueryRow(bf.Ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	const mark = `/* berth: claim write, logs its own change */`
	const upd = ` UPDATE resource_providers SET updated_at = now() WHERE uuid = $1`
	for i, sql := range []string{mark + upd, upd, `/* another */ ` + mark + upd} {
		if _, err := tx.Exec(bf.Ctx, sql, rps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(bf.Ctx); err != nil {
		t.Fatal(err)
	}
	if got := changes(`xid = $1::xid8`, xid); !slices.EqualFunc(got, [][]int64{ids[1:2], ids[2:3]}, slices.Equal) {
		t.Fatalf("change log rows of a transaction whose first statement began with the mark: %v, want %v and %v", got, ids[1:2], ids[2:3])
	}
}

// TestLoneClaimLogsItsChangeOnce: a lone claim's statement (fastWriteSQL)
// writes the change log's row of its provider itself, and the triggers of
// its statement do not run (migrations/0019): one row, its provider.
func TestLoneClaimLogsItsChangeOnce(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 8))
	var id int64
	if err := f.DB.QueryRow(f.Ctx, `SELECT id FROM resource_providers WHERE uuid = $1`, rp).Scan(&id); err != nil {
		t.Fatal(err)
	}
	claim := func() {
		t.Helper()
		if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{
			ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))}}); err != nil {
			t.Fatal(err)
		}
	}
	claim() // the project, user and type, by the general path
	var last string
	if err := f.DB.QueryRow(f.Ctx, `SELECT max(xid)::text FROM ledger_changes`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	claim()
	rows, err := f.DB.Query(f.Ctx, `SELECT providers FROM ledger_changes WHERE xid > $1::xid8`, last)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[[]int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got[0], []int64{id}) {
		t.Fatalf("the lone claim's change log rows: %v, want one row of [%d]", got, id)
	}
}

// pipeBatch is a batch of statements of every kind of argument
// and answer SendBatch's callers use, and one that fails.
func pipeBatch(fail bool) *pgx.Batch {
	name := `a "name" \ {x,y}`
	var none *string
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`)
	b.Queue(`SELECT $1::text, $2::text, $3::uuid, $4::jsonb, $5::bytea, $6::text[], $7::bigint[], $8::int, $9::boolean, $10::json, $11::text`,
		"t", &name, "e0000000-0000-4000-8000-000000000001", json.RawMessage(`{"b": [1, "x"]}`), []byte{0, '\\', 0xff},
		[]string{"p", `q"r`}, []int64{1, -2}, 7, true, nil, none)
	if fail {
		b.Queue(`SELECT 1 / $1::int`, 0)
	}
	b.Queue(`SELECT g, g * 2, now() FROM generate_series(1, $1::int) g`, 3)
	b.Queue(`SELECT array_agg(g) FROM generate_series(1, 0) g`)
	return b
}

// readPipe reads pipeBatch's results from br, and what each read
// answered, as text.
func readPipe(br pgx.BatchResults, fail bool) []string {
	var out []string
	add := func(v ...any) { out = append(out, fmt.Sprint(v...)) }
	tag, err := br.Exec()
	add(tag.String(), err)
	var s1, s2, u, j, ta string
	var by []byte
	var ints []int64
	var n *int32
	var ok bool
	var js, nothing *string
	err = br.QueryRow().Scan(&s1, &s2, &u, &j, &by, &ta, &ints, &n, &ok, &js, &nothing)
	if n != nil {
		add(*n)
	}
	add(s1, s2, u, j, by, ta, ints, ok, js, nothing, err)
	if fail {
		var x int
		add(br.QueryRow().Scan(&x), x)
	}
	rows, err := br.Query()
	add(err)
	for rows.Next() {
		vals, err := rows.Values()
		add(len(vals), vals[0], vals[1], err)
	}
	rows.Close()
	add(rows.Err(), rows.CommandTag().String())
	var empty []int64
	err = br.QueryRow().Scan(&empty)
	add(empty == nil, err)
	add(br.Close())
	return out
}

// TestSendBatchAsPgx sends the same batches with core.SendBatch and with
// pgx's SendBatch in every query mode and reads the same answers and
// errors from both; after an error the connection is usable.
func TestSendBatchAsPgx(t *testing.T) {
	ctx := context.Background()
	for _, mode := range ledgertest.ExecModes() {
		t.Run(mode, func(t *testing.T) {
			conn, err := pgx.Connect(ctx, ledgertest.NewDBInMode(t, mode))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, fail := range []bool{false, true, false} {
				want := readPipe(conn.SendBatch(ctx, pipeBatch(fail)), fail)
				for range 2 { // the statements prepared, then as prepared
					if got := readPipe(core.SendBatch(ctx, conn, pipeBatch(fail)), fail); !reflect.DeepEqual(got, want) {
						t.Errorf("failing %t: SendBatch read\n%q\nwant, as pgx's,\n%q", fail, got, want)
					}
				}
			}
		})
	}
}

// TestSendBatchPreparesAgain: a prepared statement whose answer's type
// changed fails once, as with pgx's statement cache, and is prepared
// again for the next batch.
func TestSendBatchPreparesAgain(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ledgertest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE pipe_t (a int); INSERT INTO pipe_t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	read := func() (string, error) {
		b := &pgx.Batch{}
		b.Queue(`SELECT 1`)
		b.Queue(`SELECT * FROM pipe_t`)
		br := core.SendBatch(ctx, conn, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return "", err
		}
		var v any
		if err := br.QueryRow().Scan(&v); err != nil {
			return "", err
		}
		return fmt.Sprint(v), br.Close()
	}
	if v, err := read(); err != nil || v != "1" {
		t.Fatalf("first read: %q, %v", v, err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE pipe_t ALTER a TYPE text`); err != nil {
		t.Fatal(err)
	}
	_, err = read()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "0A000" {
		t.Fatalf("read after the column's type changed: %v; want 0A000 (cached plan must not change result type)", err)
	}
	if v, err := read(); err != nil || v != "1" {
		t.Fatalf("read again: %q, %v; want it prepared again", v, err)
	}
}
