package resources_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestPreemptWriteInEveryExecMode: a claim that displaces two consumers
// records each displacement (claimrecords.WritePreemptions: what the
// victim held and its stored claim's request, both JSON) over a store
// whose database URL sets each of pgx's query modes. With exec and
// simple_protocol pgx knows no parameter's type and would send JSON
// given as a []byte as a bytea. Every mode writes the claim, the records
// read back as written, and every mode records what the default mode
// does.
func TestPreemptWriteInEveryExecMode(t *testing.T) {
	ledgertest.SameInEveryExecMode(t, "recorded", func(t *testing.T, dbURL string) string {
		return preemptTwo(t, newFixtureOn(t, dbURL))
	})
}

// preemptTwo writes two preemptible consumers on a provider and a claim
// of higher priority that displaces both, checks the displacement
// records read back as written, and returns them as text, the
// provider's uuid replaced by its name.
func preemptTwo(t *testing.T, f *fixture) string {
	t.Helper()
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 4), ledgertest.Inv("MEMORY_MB", 1024))
	type victim struct {
		consumer string
		priority int64
		request  string
		holds    []engine.ResourceAmount // in class name order
	}
	victims := []victim{
		// Text that JSON and bytea escapes would both change.
		{"f0000000-0000-4000-8000-000000000001", -2, `{"preemptible": true, "priority": -2, "name": "vm \"1\" \\ {a,b} NULL é"}`,
			[]engine.ResourceAmount{ledgertest.Res("MEMORY_MB", 512), ledgertest.Res("VCPU", 2)}},
		{"f0000000-0000-4000-8000-000000000002", 0, `{"preemptible": true}`,
			[]engine.ResourceAmount{ledgertest.Res("VCPU", 2)}},
	}
	for _, v := range victims {
		w := ledgertest.NewClaim(v.consumer, rp, v.holds...)
		if err := f.Store.Allocations.ClaimWrite(f.Ctx, resources.ClaimWriteParams{Consumers: []resources.ConsumerAllocations{w},
			State: &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(v.request), RootUUID: rp},
			Request: &claimrecords.ClaimRequest{ConsumerUUID: v.consumer, Op: "claim", Fingerprint: []byte("f"),
				Request: []byte(v.request), Result: []byte(`{}`), Generation: 1},
		}); err != nil {
			t.Fatalf("victim %s: %v", v.consumer, err)
		}
	}
	plan, err := f.Store.Allocations.PreemptibleBelow(f.Ctx, 5)
	if err != nil || len(plan) != len(victims) {
		t.Fatalf("preemptible below 5: %+v, %v; want %d", plan, err, len(victims))
	}
	preemptor := "f0000000-0000-4000-8000-0000000000ff"
	if err := f.preemptWrite(preemptor, rp, 4, 5, plan); err != nil {
		t.Fatalf("a claim that displaces both: %v", err)
	}
	if u := f.Usages(rp); u.Usages["VCPU"] != 4 || u.Usages["MEMORY_MB"] != 0 {
		t.Errorf("usage after: %+v, want VCPU 4 (the claim's) and MEMORY_MB 0", u.Usages)
	}
	f.checkUsages()
	var out []string
	for _, v := range victims {
		p, err := f.Store.Claims.PreemptionOf(f.Ctx, v.consumer)
		if err != nil || p == nil {
			t.Fatalf("victim %s's record: %+v, %v", v.consumer, p, err)
		}
		if p.ConsumerUUID != v.consumer || p.PreemptedBy != preemptor || p.RootUUID != rp || p.Priority != v.priority ||
			p.PreemptorPriority != 5 || p.ProjectID != "proj" || p.UserID != "user" || p.PreemptedAt.IsZero() {
			t.Errorf("victim %s's record: %+v; want displaced by %s from %s, priority %d under 5, of proj and user",
				v.consumer, p, preemptor, rp, v.priority)
		}
		if want := []engine.Allocation{{ProviderUUID: rp, Resources: v.holds}}; !reflect.DeepEqual(p.Allocations, want) {
			t.Errorf("victim %s's record holds %+v, want %+v", v.consumer, p.Allocations, want)
		}
		var got, want any
		if err := json.Unmarshal(p.Request, &got); err != nil {
			t.Errorf("victim %s's recorded request %q: %v", v.consumer, p.Request, err)
		}
		if err := json.Unmarshal([]byte(v.request), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("victim %s's recorded request %s, want %s", v.consumer, p.Request, v.request)
		}
		out = append(out, strings.ReplaceAll(fmt.Sprintf("%s by %s from %s, %d under %d, %s %s: %+v %s",
			p.ConsumerUUID, p.PreemptedBy, p.RootUUID, p.Priority, p.PreemptorPriority, p.ProjectID, p.UserID,
			p.Allocations, p.Request), rp, "rp"))
	}
	return strings.Join(out, "\n")
}
