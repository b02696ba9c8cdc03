package snapshot_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/snapshot"
)

// summary returns what the snapshot says of one provider.
func (f *fixture) summary(rp string) engine.ProviderSummary {
	f.T.Helper()
	return f.summaryBy(rp, "VCPU")
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

// A fast-path claim brings this process's snapshot up to date without a
// reload: nothing is left dirty, and what the snapshot says is what the
// database says.
func TestFastClaimPatchesSnapshot(t *testing.T) {
	f := newFixture(t)
	ledgertest.WaitFor(t, func() bool { return snapshot.Listening(f.Store.Snapshots) })
	a := f.Provider("a", ledgertest.Inv("VCPU", 8), ledgertest.Inv("MEMORY_MB", 1024))
	b := f.Provider("b", ledgertest.Inv("VCPU", 8))
	f.summary(a) // load the snapshot
	f.Known([]string{"p"}, []string{"u"}, nil)
	for i, w := range []resources.ConsumerAllocations{
		ledgertest.NewClaim(uuid.NewString(), a, ledgertest.Res("VCPU", 2), ledgertest.Res("MEMORY_MB", 512)),
		ledgertest.NewClaim(uuid.NewString(), a, ledgertest.Res("VCPU", 3)),
		{ConsumerUUID: uuid.NewString(), ProjectID: "p", UserID: "u", CheckGeneration: true, Allocations: []engine.Allocation{
			{ProviderUUID: a, Resources: []engine.ResourceAmount{ledgertest.Res("VCPU", 1)}},
			{ProviderUUID: b, Resources: []engine.ResourceAmount{ledgertest.Res("VCPU", 4)}}}},
	} {
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}); err != nil {
			t.Fatal(err)
		}
		if n := snapshot.SnapshotStale(f.Store.Snapshots); n != 0 {
			t.Fatalf("claim %d: %d providers dirty, want the write applied", i, n)
		}
		for _, rp := range []string{a, b} {
			s, u := f.summary(rp), f.Usages(rp)
			if s.Generation != u.Generation {
				t.Fatalf("claim %d: snapshot generation %d, database %d", i, s.Generation, u.Generation)
			}
			for _, r := range s.Resources {
				if r.Used != u.Usages[r.ResourceClass] {
					t.Fatalf("claim %d: snapshot %s used %d, database %d", i, r.ResourceClass, r.Used, u.Usages[r.ResourceClass])
				}
			}
		}
	}
	if u := f.Usages(a); u.Usages["VCPU"] != 6 || u.Usages["MEMORY_MB"] != 512 {
		t.Fatalf("usages of a: %+v", u)
	}

	// Without the listener the write is applied all the same: what the
	// snapshot trusts is the change log, not the listener (changelog.go).
	snapshot.SetListening(f.Store.Snapshots, false)
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), b, ledgertest.Res("VCPU", 1))}); err != nil {
		t.Fatal(err)
	}
	if n := snapshot.SnapshotStale(f.Store.Snapshots); n != 0 {
		t.Fatalf("write while not listening: %d providers marked dirty, want it applied", n)
	}
	snapshot.SetListening(f.Store.Snapshots, true)
	if s := f.summary(b); s.Resources[0].Used != 5 {
		t.Fatalf("b after reload: %+v", s)
	}
}
