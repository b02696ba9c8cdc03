package resources_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestFastClaimWrites checks that a new consumer's write leaves what the
// general path leaves: generations (provider +1, consumer 1), type,
// owner, usage; for an owner that exists (the fast path) and for a new
// project, user and type (the general path, which creates them).
func TestFastClaimWrites(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 8), ledgertest.Inv("MEMORY_MB", 1024))
	f.Known([]string{"known-project"}, []string{"known-user"}, nil)
	for i, owner := range [][3]string{{"known-project", "known-user", "INSTANCE"}, {"fresh-project", "fresh-user", "FRESH"}} {
		c := uuid.NewString()
		w := ledgertest.NewClaim(c, rp, ledgertest.Res("VCPU", 2), ledgertest.Res("MEMORY_MB", 512))
		w.ProjectID, w.UserID, w.ConsumerType = owner[0], owner[1], owner[2]
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}); err != nil {
			t.Fatal(err)
		}
		u := f.Usages(rp)
		if u.Generation != int64(2+i) || u.Usages["VCPU"] != int64(2+2*i) || u.Usages["MEMORY_MB"] != int64(512+512*i) {
			t.Fatalf("provider after claim %d: %+v", i+1, u)
		}
		got, err := f.Store.Allocations.AllocationsByConsumer(f.Ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		want := resources.Consumer{UUID: c, ProjectID: owner[0], UserID: owner[1], Generation: 1, Type: owner[2]}
		if got.Consumer == nil || *got.Consumer != want || len(got.Allocations) != 2 {
			t.Fatalf("consumer %+v with %d allocations, want %+v with 2", got.Consumer, len(got.Allocations), want)
		}
		// The consumer exists now: the same write is a generation conflict.
		le := ledgertest.Rejection(t, f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}), fault.ErrConflict)
		if le.Code != fault.CodeConcurrentUpdate || !strings.Contains(le.Msg, "expected 1 but got None") {
			t.Fatalf("second write: %v (%s)", le, le.Code)
		}
	}
	f.checkUsages()
}

// TestFastClaimRefusals makes the fast path refuse in each way it can and
// checks that the answer is the general path's error and nothing changed:
// each case's owner exists (the fast path writes no other), but for the
// last, whose new project, user and type the refusal leaves uncreated.
func TestFastClaimRefusals(t *testing.T) {
	f := newFixture(t)
	disk := ledgertest.Inv("DISK_GB", 100)
	disk.StepSize, disk.MinUnit, disk.MaxUnit = 10, 10, 50
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 4), disk)
	other := f.Provider("other", ledgertest.Inv("MEMORY_MB", 64))
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 3))}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		w      resources.ConsumerAllocations
		kind   error
		detail string
	}{
		{"over capacity", ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 2)), fault.ErrConflict, "would exceed the capacity"},
		{"step_size", ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("DISK_GB", 15)), fault.ErrConflict, "violate inventory constraints"},
		{"max_unit", ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("DISK_GB", 60)), fault.ErrConflict, "violate inventory constraints"},
		{"class without inventory", ledgertest.NewClaim(uuid.NewString(), other, ledgertest.Res("VCPU", 1)), fault.ErrConflict, "Inventory for 'VCPU' on resource provider '" + other + "' invalid"},
		{"unknown class", ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("CUSTOM_NOPE", 1)), fault.ErrInvalid, "No such resource class CUSTOM_NOPE"},
		{"unknown provider", ledgertest.NewClaim(uuid.NewString(), uuid.NewString(), ledgertest.Res("VCPU", 1)), fault.ErrInvalid, "that does not exist"},
		{"over capacity, new owner", ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 2)), fault.ErrConflict, "would exceed the capacity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.w.ProjectID, tt.w.UserID, tt.w.ConsumerType = "p-"+tt.name, "u-"+tt.name, "T_"+strings.ToUpper(strings.ReplaceAll(tt.name, " ", "_"))
			if !strings.HasSuffix(tt.name, "new owner") {
				f.Known([]string{tt.w.ProjectID}, []string{tt.w.UserID}, []string{tt.w.ConsumerType})
			}
			before := f.Dump()
			le := ledgertest.Rejection(t, f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{tt.w}), tt.kind)
			if !strings.Contains(le.Msg, tt.detail) {
				t.Errorf("message %q lacks %q", le.Msg, tt.detail)
			}
			if after := f.Dump(); after != before {
				t.Errorf("refused write changed the ledger:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestFastClaimsConcurrent races many new-consumer claims on two small
// providers: the ones accepted fill them exactly, none overcommits, and
// usage is the sum of the accepted claims.
func TestFastClaimsConcurrent(t *testing.T) {
	f := newFixture(t)
	rps := []string{f.Provider("a", ledgertest.Inv("VCPU", 10)), f.Provider("b", ledgertest.Inv("VCPU", 7))}
	var mu sync.Mutex
	accepted := map[string]int64{}
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rp := rps[i%2]
			err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.NewClaim(uuid.NewString(), rp, ledgertest.Res("VCPU", 1))})
			if err != nil {
				ledgertest.Rejection(t, err, fault.ErrConflict)
				return
			}
			mu.Lock()
			accepted[rp]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	for i, capacity := range []int64{10, 7} {
		u := f.Usages(rps[i])
		if accepted[rps[i]] != capacity || u.Usages["VCPU"] != capacity {
			t.Errorf("provider %d: %d accepted, usage %d, capacity %d", i, accepted[rps[i]], u.Usages["VCPU"], capacity)
		}
		if u.Generation != 1+capacity {
			t.Errorf("provider %d: generation %d, want %d", i, u.Generation, 1+capacity)
		}
	}
}

// TestFastClaimDetails: a claim's name, properties and sticky keys are
// written by the fast path as the general path writes them.
func TestFastClaimDetails(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 8))
	if _, err := f.DB.Exec(f.Ctx, `INSERT INTO provider_placement_keys (resource_provider_id, name, value, sticky)
		SELECT id, k, v, s FROM resource_providers, (VALUES ('rack', 0.5, true), ('row', 0.25, false)) AS x(k, v, s)
		WHERE uuid = $1`, rp); err != nil {
		t.Fatal(err)
	}
	details := func(c string) string {
		t.Helper()
		var out string
		if err := f.DB.QueryRow(f.Ctx, `
			SELECT c.generation || ' ' || COALESCE(c.name, '-') || ' ' || COALESCE(c.properties::text, '-') || ' ' ||
			       COALESCE((SELECT string_agg(k.name || '=' || k.value, ',' ORDER BY k.name)
			                 FROM consumer_placement_keys k WHERE k.consumer_id = c.id), '-')
			FROM consumers c WHERE c.uuid = $1`, c).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	fast, general := uuid.NewString(), uuid.NewString()
	for _, c := range []string{fast, general} {
		w := ledgertest.NewClaim(c, rp, ledgertest.Res("VCPU", 1))
		w.Name, w.Properties, w.CopyStickyKeys = "vm-1", map[string]any{"group": "g1"}, true
		w.CheckGeneration = c == fast // without a generation check, the general path
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}); err != nil {
			t.Fatal(err)
		}
	}
	want := `1 vm-1 {"group": "g1"} rack=0.5`
	if got := details(fast); got != want {
		t.Errorf("fast path wrote %q, want %q", got, want)
	}
	if got := details(general); got != want {
		t.Errorf("general path wrote %q, want %q", got, want)
	}
	// Without details, neither writes any.
	plain := uuid.NewString()
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.NewClaim(plain, rp, ledgertest.Res("VCPU", 1))}); err != nil {
		t.Fatal(err)
	}
	if got := details(plain); got != "1 - - -" {
		t.Errorf("plain claim wrote %q", got)
	}
}
