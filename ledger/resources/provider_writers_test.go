package resources_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// groupFixture is a store with one provider writer whose first write (on
// held) waits behind another transaction's lock until release is called,
// so that the provider writes sent meanwhile queue up and go out as the
// next group.
type groupFixture struct {
	*fixture
	dbURL   string
	release func()
	first   chan error
}

func newGroupFixture(t *testing.T) *groupFixture {
	t.Helper()
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	store, err := ledger.Open(f.Ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 8, ProviderWriters: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	f.Store = store
	return &groupFixture{fixture: f, dbURL: dbURL}
}

// inventories reads rp's inventories and generation.
func (g *groupFixture) inventories(rp string) resources.ProviderInventories {
	g.T.Helper()
	inv, err := g.Store.Providers.InventoryList(g.Ctx, rp)
	if err != nil {
		g.T.Fatal(err)
	}
	return inv
}

// hold makes the writer busy: a traits write on a provider whose row
// another transaction holds.
func (g *groupFixture) hold(t *testing.T) {
	t.Helper()
	held := g.Provider("held")
	g.release = holdProvider(t, g.fixture, g.dbURL, held)
	groups, _ := resources.ProviderGroups(g.Store.Providers)
	g.first = make(chan error, 1)
	go func() {
		_, _, err := g.Store.Providers.ProviderTraitsReplace(g.Ctx, held, 0, []string{"HW_CPU_X86_AVX2"})
		g.first <- err
	}()
	ledgertest.WaitFor(t, func() bool { n, _ := resources.ProviderGroups(g.Store.Providers); return n == groups+1 })
}

// queue sends write in a goroutine and waits until it is queued, so that
// writes queue in the order sent.
func (g *groupFixture) queue(t *testing.T, write func() error) chan error {
	t.Helper()
	queued := resources.QueuedProviderWrites(g.Store.Providers)
	out := make(chan error, 1)
	go func() { out <- write() }()
	ledgertest.WaitFor(t, func() bool { return resources.QueuedProviderWrites(g.Store.Providers) == queued+1 })
	return out
}

// TestProviderGroupWritesQueuedWritesTogether queues seven provider
// writes of every kind while the writer is busy: they go out as one
// group, in which each write sees the rows of the writes before it. The
// five that pass their checks are written by the group; the two that do
// not (a generation the group's first write bumped, a trait that does
// not exist) get the general path's answer.
func TestProviderGroupWritesQueuedWritesTogether(t *testing.T) {
	g := newGroupFixture(t)
	a := g.Provider("a", ledgertest.Inv("VCPU", 8)) // generation 1
	b := g.Provider("b")
	c := g.Provider("c")
	d := g.Provider("d")
	e := g.Provider("e")
	agg := uuid.NewString()
	fresh := uuid.NewString()
	g.hold(t)
	fastBefore := resources.FastWrites(g.Store.Providers)
	groupsBefore, writesBefore := resources.ProviderGroups(g.Store.Providers)

	invA := g.queue(t, func() error {
		_, err := g.Store.Providers.InventoriesReplace(g.Ctx, resources.InventoryParams{ProviderUUID: a, Generation: ledgertest.Gen(1)}, []engine.Inventory{ledgertest.Inv("VCPU", 16)})
		return err
	})
	staleA := g.queue(t, func() error {
		_, _, err := g.Store.Providers.ProviderTraitsReplace(g.Ctx, a, 1, []string{"HW_CPU_X86_AVX2"})
		return err
	})
	aggB := g.queue(t, func() error {
		_, err := g.Store.Providers.ProviderAggregatesReplace(g.Ctx, b, []string{agg}, resources.AggregatesReplaceParams{Generation: ledgertest.Gen(0)})
		return err
	})
	create := g.queue(t, func() error {
		_, err := g.Store.Providers.ProviderCreate(g.Ctx, resources.ProviderCreateParams{UUID: fresh, Name: "fresh"})
		return err
	})
	noTrait := g.queue(t, func() error {
		_, _, err := g.Store.Providers.ProviderTraitsReplace(g.Ctx, c, 0, []string{"CUSTOM_NO_SUCH_TRAIT"})
		return err
	})
	delD := g.queue(t, func() error { return g.Store.Providers.ProviderDelete(g.Ctx, d) })
	invE := g.queue(t, func() error {
		_, err := g.Store.Providers.InventoriesReplace(g.Ctx, resources.InventoryParams{ProviderUUID: e, Generation: ledgertest.Gen(0)}, []engine.Inventory{ledgertest.Inv("DISK_GB", 100)})
		return err
	})
	g.release()
	if err := <-g.first; err != nil {
		t.Fatalf("held write: %v", err)
	}
	for name, ch := range map[string]chan error{"inventories of a": invA, "aggregates of b": aggB, "create": create,
		"delete of d": delD, "inventories of e": invE} {
		if err := <-ch; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	ledgertest.Rejection(t, <-staleA, fault.ErrConflict)
	if err := <-noTrait; err == nil {
		t.Errorf("traits of c with an unknown trait: written, want refused")
	}
	groups, writes := resources.ProviderGroups(g.Store.Providers)
	if groups-groupsBefore != 1 || writes-writesBefore != 7 {
		t.Fatalf("writers sent %d groups of %d writes, want 1 of 7", groups-groupsBefore, writes-writesBefore)
	}
	if n := resources.FastWrites(g.Store.Providers) - fastBefore; n != 1+5 {
		t.Errorf("%d writes committed by the fast path, want the held one and the 5 that passed their checks", n)
	}

	if inv := g.inventories(a); inv.Generation != 2 || len(inv.Inventories) != 1 || inv.Inventories[0].Total != 16 {
		t.Errorf("a after the group: %+v, want VCPU 16 at generation 2", inv)
	}
	if _, traits, err := g.Store.Providers.ProviderTraits(g.Ctx, a); err != nil || len(traits) != 0 {
		t.Errorf("traits of a: %v %v, want none", traits, err)
	}
	if gen, aggs, err := g.Store.Providers.ProviderAggregates(g.Ctx, b); err != nil || len(aggs) != 1 || aggs[0] != agg || gen != 1 {
		t.Errorf("aggregates of b: %v at %d (%v), want [%s] at 1", aggs, gen, err, agg)
	}
	if p, err := g.Store.Providers.ProviderGet(g.Ctx, fresh); err != nil || p.Name != "fresh" {
		t.Errorf("created provider: %+v %v", p, err)
	}
	if _, err := g.Store.Providers.ProviderGet(g.Ctx, d); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("deleted provider d: %v, want not found", err)
	}
	if inv := g.inventories(e); inv.Generation != 1 || len(inv.Inventories) != 1 {
		t.Errorf("e after the group: %+v, want DISK_GB at generation 1", inv)
	}
	if inv := g.inventories(c); inv.Generation != 0 {
		t.Errorf("c after the refused traits write: generation %d, want 0", inv.Generation)
	}
}

// TestProviderGroupFailingStatementSendsWritesAlone queues two creates of
// one name and an inventory write: the second create fails the group's
// transaction on the name's unique index, so nothing of the group is
// written, and each write is sent again alone: one create and the
// inventory write succeed, the other create gets the general path's
// conflict.
func TestProviderGroupFailingStatementSendsWritesAlone(t *testing.T) {
	g := newGroupFixture(t)
	a := g.Provider("a") // generation 0
	g.hold(t)
	groupsBefore, writesBefore := resources.ProviderGroups(g.Store.Providers)
	u1, u2 := uuid.NewString(), uuid.NewString()
	twin := func(u string) func() error {
		return func() error {
			_, err := g.Store.Providers.ProviderCreate(g.Ctx, resources.ProviderCreateParams{UUID: u, Name: "twin"})
			return err
		}
	}
	c1, c2 := g.queue(t, twin(u1)), g.queue(t, twin(u2))
	invA := g.queue(t, func() error {
		_, err := g.Store.Providers.InventoriesReplace(g.Ctx, resources.InventoryParams{ProviderUUID: a, Generation: ledgertest.Gen(0)}, []engine.Inventory{ledgertest.Inv("VCPU", 4)})
		return err
	})
	g.release()
	if err := <-g.first; err != nil {
		t.Fatalf("held write: %v", err)
	}
	if err := <-invA; err != nil {
		t.Fatalf("inventories of a: %v", err)
	}
	e1, e2 := <-c1, <-c2
	if (e1 == nil) == (e2 == nil) {
		t.Fatalf("creates of one name: %v and %v, want exactly one written", e1, e2)
	}
	if e1 != nil {
		ledgertest.Rejection(t, e1, fault.ErrConflict)
	} else {
		ledgertest.Rejection(t, e2, fault.ErrConflict)
	}
	groups, writes := resources.ProviderGroups(g.Store.Providers)
	if groups-groupsBefore != 1 || writes-writesBefore != 3 {
		t.Fatalf("writers sent %d groups of %d writes, want 1 of 3", groups-groupsBefore, writes-writesBefore)
	}
	if inv := g.inventories(a); inv.Generation != 1 || len(inv.Inventories) != 1 {
		t.Errorf("a: %+v, want VCPU at generation 1", inv)
	}
	var n int
	if err := g.DB.QueryRow(context.Background(), `SELECT count(*) FROM resource_providers WHERE name = 'twin'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("providers named twin: %d (%v), want 1", n, err)
	}
}

// TestProviderWriteSentAgainAfterFailedPrepare: a provider write whose
// first send failed while pgx prepared its statements (the connection
// ended by its server, as at a failover, which makes a group send each
// of its writes again alone) is written when sent again, by its fast
// path. pgx used to keep the failed preparation in the write's queued
// statements, and the second send failed to build them: a 500.
func TestProviderWriteSentAgainAfterFailedPrepare(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	rp := f.Provider("a") // generation 0
	dead, err := pgx.Connect(f.Ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Close(context.Background()) })
	pid := dead.PgConn().PID()
	if _, err := f.DB.Exec(f.Ctx, `SELECT pg_terminate_backend($1, 30000)`, pid); err != nil {
		t.Fatal(err)
	}
	fastBefore := resources.FastWrites(f.Store.Providers)
	first, next, err := resources.SendTraitsAgain(f.Ctx, f.Store.Providers, dead, rp, 0, []string{"HW_CPU_X86_AVX2"})
	if first == nil {
		t.Fatal("the send on the ended connection succeeded")
	}
	if err != nil {
		t.Fatalf("sent again: %v (the first send: %v)", err, first)
	}
	if next != 1 {
		t.Errorf("sent again: generation %d, want 1", next)
	}
	if n := resources.FastWrites(f.Store.Providers) - fastBefore; n != 1 {
		t.Errorf("%d writes committed by the fast path, want 1", n)
	}
	if gen, traits, err := f.Store.Providers.ProviderTraits(f.Ctx, rp); err != nil || gen != 1 || len(traits) != 1 {
		t.Errorf("traits of a: %v at %d (%v), want HW_CPU_X86_AVX2 at 1", traits, gen, err)
	}
}
