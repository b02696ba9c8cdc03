package scheduling_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/scheduling"
)

// TestShadowFlushInEveryExecMode flushes what two shadows counted (their
// counters, refusal messages and disagreements, which ShadowFlush sends
// as JSON arrays) twice over a store whose database URL sets each of
// pgx's query modes. With exec and simple_protocol pgx knows no
// parameter's type and would send JSON given as a []byte as a bytea.
// Every mode stores both flushes, ShadowGet reads back their sums, and
// every mode stores what the default mode does.
func TestShadowFlushInEveryExecMode(t *testing.T) {
	ledgertest.SameInEveryExecMode(t, "stored", func(t *testing.T, dbURL string) string {
		return flushShadows(t, newFixtureOn(t, dbURL))
	})
}

// flushShadows starts a shadow of a scriptlet and one of a policy,
// flushes two rounds of deltas for both, checks that ShadowGet reads
// back their sums, and returns the stored shadows as text.
func flushShadows(t *testing.T, f *fixture) string {
	t.Helper()
	s, ctx := f.Store.Catalogue, f.Ctx
	if _, err := s.ScriptletPut(ctx, "pick", "def instance_placement(r, m):\n    pass\n"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "gold", Spec: json.RawMessage(`{"filters": []}`)},
		scheduling.SchedulingPolicyPutParams{}); err != nil {
		t.Fatal(err)
	}
	kinds := []struct{ kind, name string }{{scheduling.ShadowScriptlet, "pick"}, {scheduling.ShadowPolicy, "gold"}}
	ids := make([]int64, len(kinds))
	for i, k := range kinds {
		sh, err := s.ShadowStart(ctx, k.kind, k.name)
		if err != nil {
			t.Fatalf("start the shadow of %s %s: %v", k.kind, k.name, err)
		}
		ids[i] = sh.ID
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC) // microseconds: what timestamptz keeps
	// delta is shadow i's delta of round r: every counter distinct, text
	// that JSON and bytea escapes would both change.
	delta := func(i, r int) scheduling.ShadowDelta {
		n := int64(100*i + 10*r)
		return scheduling.ShadowDelta{ShadowID: ids[i],
			Counts: scheduling.ShadowCounts{ClaimsSeen: n + 1, Agreed: n + 2, Disagreed: n + 3, WouldRefuse: n + 4,
				FailedSteps: n + 5, FailedMemory: n + 6, FailedDeadline: n + 7, FailedError: n + 8, Dropped: n + 9,
				WouldPreempt: n + 10, WouldPreemptVictims: n + 11, Nanoseconds: n + 12},
			Refusals: map[string]int64{`no room on "cn1" \ {a,b}`: n + 1, "é NULL, x": 1},
			Disagreements: []scheduling.ShadowDisagreement{{At: at.Add(time.Duration(10*i+r) * time.Second),
				ConsumerUUID: fmt.Sprintf("c%d-%d", i, r), Name: fmt.Sprintf(`vm "%d" \ {a,b} NULL é`, r), ProjectID: "p,q",
				ClaimRoot: "a", ClaimRootName: `cn"1"`, ClaimRefusal: `none \ fits`, ShadowRoot: "b", ShadowRootName: "cn{2}"}},
		}
	}
	for r := range 2 {
		deltas := make([]scheduling.ShadowDelta, len(kinds))
		for i := range kinds {
			deltas[i] = delta(i, r)
		}
		if err := s.ShadowFlush(ctx, deltas); err != nil {
			t.Fatalf("flush %d: %v", r, err)
		}
	}
	var out []string
	for i, k := range kinds {
		got, err := s.ShadowGet(ctx, k.kind, k.name)
		if err != nil {
			t.Fatalf("shadow of %s %s: %v", k.kind, k.name, err)
		}
		var want scheduling.Shadow
		want.Refusals = map[string]int64{}
		for r := range 2 {
			d := delta(i, r)
			want.Counts.Add(d.Counts)
			for m, n := range d.Refusals {
				want.Refusals[m] += n
			}
			want.Disagreements = append(want.Disagreements, d.Disagreements...)
		}
		if got.Counts != want.Counts {
			t.Errorf("shadow of %s %s counted %+v, want %+v", k.kind, k.name, got.Counts, want.Counts)
		}
		if !maps.Equal(got.Refusals, want.Refusals) {
			t.Errorf("shadow of %s %s's refusals %v, want %v", k.kind, k.name, got.Refusals, want.Refusals)
		}
		// Times compared as instants (they read back in the session's
		// time zone), the rest as sent.
		dis := slices.Clone(got.Disagreements)
		for j := range dis {
			if j < len(want.Disagreements) && dis[j].At.Equal(want.Disagreements[j].At) {
				dis[j].At = want.Disagreements[j].At
			}
		}
		if !reflect.DeepEqual(dis, want.Disagreements) {
			t.Errorf("shadow of %s %s's disagreements\n%+v\nwant\n%+v", k.kind, k.name, got.Disagreements, want.Disagreements)
		}
		refusals := slices.Sorted(maps.Keys(got.Refusals))
		for j, m := range refusals {
			refusals[j] = fmt.Sprintf("%q %d", m, got.Refusals[m])
		}
		out = append(out, fmt.Sprintf("%s %s: %+v; refusals %s; disagreements %+v", k.kind, k.name, got.Counts,
			strings.Join(refusals, ", "), dis))
	}
	return strings.Join(out, "\n")
}

// TestSchedulingJSONInEveryExecMode writes the catalogue's other JSON (a
// policy's spec and config values, given as json.RawMessage, and the
// storage pools of a provider's state, given as a map) over a store
// whose database URL sets each of pgx's query modes: every mode stores
// them and they read back as written.
func TestSchedulingJSONInEveryExecMode(t *testing.T) {
	for _, mode := range ledgertest.ExecModes() {
		t.Run(mode, func(t *testing.T) {
			f := newFixtureOn(t, ledgertest.NewDBInMode(t, mode))
			s, ctx := f.Store, f.Ctx
			spec := `{"filters": [], "weighers": [{"name": "spread \"x\" \\ é", "factor": 2}]}`
			if _, _, err := s.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: "gold", Spec: json.RawMessage(spec)},
				scheduling.SchedulingPolicyPutParams{Create: true}); err != nil {
				t.Fatalf("policy: %v", err)
			}
			p, err := s.Catalogue.SchedulingPolicyGet(ctx, "gold")
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, "policy spec", p.Spec, []byte(spec))

			value := `{"a": "b \"c\" \\ {d,e} é", "n": [1, null]}`
			if err := s.Catalogue.ConfigPatch(ctx, map[string]json.RawMessage{"k": json.RawMessage(value)}); err != nil {
				t.Fatalf("config: %v", err)
			}
			config, err := s.Catalogue.Config(ctx)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, "config value", config["k"], []byte(value))

			rp := f.Provider("cn1", ledgertest.Inv("VCPU", 8))
			st := engine.ProviderState{Load1: 1.5, MemoryFreeMB: 1024, ReportedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
				StoragePools: map[string]engine.StoragePoolState{`pool "a" \ é`: {Space: engine.UsedTotal{Used: 1, Total: 10},
					Inodes: engine.UsedTotal{Used: 2, Total: 20}}}}
			if err := s.Cloud.ProviderStatePut(ctx, rp, st); err != nil {
				t.Fatalf("provider state: %v", err)
			}
			got, err := s.Cloud.ProviderStateGet(ctx, rp)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.StoragePools, st.StoragePools) || got.Load1 != st.Load1 || !got.ReportedAt.Equal(st.ReportedAt) {
				t.Errorf("provider state %+v, want %+v", got, st)
			}
		})
	}
}

// jsonEqual checks that got and want are the same JSON value.
func jsonEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s %q: %v", what, got, err)
		return
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s %s, want %s", what, got, want)
	}
}
