package claims_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
)

// evacuationScriptlet is the evacuation scenario of Incus's scriptlet
// test suite: reason evacuation, the evacuated member not a candidate,
// the second member by name chosen (here: a candidate_members[1] that
// does not exist is a runtime error, which refuses).
const evacuationScriptlet = `
def instance_placement(request, candidate_members):
        if request.reason != "evacuation":
                return "Expecting reason evacuation"

        for member in candidate_members:
                if member.server_name == "a" or member.status != "Online":
                        fail("the evacuated member is a candidate")

        candidate_names = sorted([candidate.server_name for candidate in candidate_members])
        set_target(candidate_names[1])

        return # No error.
`

// place claims n VCPU for consumer on the root named target.
func (f *fixture) place(c *claims.Claimer, consumer, target string, n int64) {
	f.t.Helper()
	p := params(n)
	p.ConsumerUUID, p.Target, p.Name = consumer, target, "vm-"+consumer[len(consumer)-2:]
	if _, err := c.ClaimUnrecorded(f.ctx, p); err != nil {
		f.t.Fatalf("placing %s on %s: %v", consumer, target, err)
	}
}

func consumerN(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i) }

func TestEvacuate(t *testing.T) {
	f := newFixture(t)
	a, _, c := f.provider("a", 32), f.provider("b", 8), f.provider("c", 8)
	plain := f.claimer(`{}`, "")
	x, y, big, huge := consumerN(1), consumerN(2), consumerN(3), consumerN(4)
	f.place(plain, x, "a", 2)
	f.place(plain, y, "a", 2)
	f.place(plain, big, "a", 7)
	f.place(plain, huge, "a", 12)
	f.place(plain, consumerN(5), "b", 1) // elsewhere: not looked at
	cl := f.claimer(`{}`, evacuationScriptlet)

	// A dry run plans each move alone, and writes nothing.
	plan, err := cl.Evacuate(f.ctx, claims.EvacuateParams{Provider: a, DryRun: true, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := evacSummary(plan); got != "01 planned c|02 planned c|03 planned c|04 failed no_valid_host" || plan.Remaining != 4 ||
		plan.Provider.Evacuated || !plan.DryRun {
		t.Fatalf("plan %s, %+v", got, plan)
	}
	if f.used(a) != 23 || f.used(c) != 0 {
		t.Fatalf("dry run wrote: a %d c %d", f.used(a), f.used(c))
	}
	if ev, _ := f.store.Cloud.ProviderEvacuationGet(f.ctx, a); ev.Evacuated {
		t.Fatal("dry run marked the provider")
	}

	// The evacuation, one move at a time: x and y go to c (the second
	// name), then c has no room for big, b alone is left and the
	// scriptlet's candidate_names[1] fails: refused. Nothing holds huge.
	ev, err := cl.Evacuate(f.ctx, claims.EvacuateParams{Provider: a, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := evacSummary(ev); got != "01 moved c|02 moved c|03 failed refused|04 failed no_valid_host" ||
		ev.Remaining != 2 || !ev.Provider.Evacuated || ev.Next != "" {
		t.Fatalf("evacuation %s, %+v", got, ev)
	}
	if d := ev.Consumers[2].Detail; !strings.Contains(d, "index 1 out of range") {
		t.Errorf("refusal detail %q", d)
	}
	if d := ev.Consumers[3].Detail; !strings.Contains(d, "3 providers; 2 lacked VCPU 12; 1 evacuated") {
		t.Errorf("no valid host detail %q", d)
	}
	// Moves are Nova's: the source is held until confirmed.
	if f.used(c) != 4 || f.used(a) != 23 {
		t.Fatalf("usage a %d c %d", f.used(a), f.used(c))
	}

	// New claims avoid a, even when they name it (the scriptlet, handed
	// no candidate, refuses after the steps that say why).
	p := params(1)
	p.Target = "a"
	np := notPlaced(t, func() error { _, err := cl.ClaimUnrecorded(f.ctx, p); return err }(), claims.Refused)
	if !strings.Contains(np.Error(), "1 evacuated") {
		t.Errorf("targeted claim: %v", np)
	}

	// A second call resumes: what failed is tried again; the moved
	// consumers' migration consumers are the evacuation's own, not
	// reported.
	ev, err = cl.Evacuate(f.ctx, claims.EvacuateParams{Provider: a, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := evacSummary(ev); got != "03 failed refused|04 failed no_valid_host" || ev.Remaining != 2 {
		t.Errorf("resumed: %s %+v", got, ev)
	}
	for _, id := range []string{x, y} {
		if _, err := cl.Confirm(f.ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	if f.used(a) != 19 {
		t.Errorf("after confirming: a %d", f.used(a))
	}

	// Restored, a takes claims again; restoring twice is a conflict.
	if _, err := cl.Restore(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	if r, err := plain.ClaimUnrecorded(f.ctx, p); err != nil || r.Root != a {
		t.Errorf("claim on a restored provider: %+v %v", r, err)
	}
	if _, err := cl.Restore(f.ctx, a); !fault.HasCode(err, fault.ErrConflict, fault.CodeNotEvacuated) {
		t.Errorf("restore twice: %v", err)
	}
}

// evacSummary is "NN status destination-name" per consumer (the uuid's
// last two digits), "|"-joined.
func evacSummary(ev *claims.Evacuation) string {
	var parts []string
	for _, c := range ev.Consumers {
		s := c.ConsumerUUID[len(c.ConsumerUUID)-2:] + " " + c.Status
		if c.DestinationName != "" {
			s += " " + c.DestinationName
		}
		if c.Reason != "" {
			s += " " + c.Reason
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "|")
}

// TestEvacuateParallelConfirmed: many moves at once, confirmed at once:
// the host ends empty and nothing is overcommitted; Limit pages.
func TestEvacuateParallelConfirmed(t *testing.T) {
	f := newFixture(t)
	a, b, c := f.provider("a", 16), f.provider("b", 8), f.provider("c", 8)
	cl := f.claimer(`{"weighers": [{"name": "spread"}]}`, "")
	for i := 1; i <= 16; i++ {
		f.place(cl, consumerN(i), "a", 1)
	}
	// The first page: 5 moves, the rest counted.
	ev, err := cl.Evacuate(f.ctx, claims.EvacuateParams{Provider: a, Parallel: 4, Confirm: true, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Consumers) != 5 || ev.Remaining != 11 || ev.Pending != 11 || ev.Next != consumerN(5) {
		t.Fatalf("first page: %s remaining %d next %s", evacSummary(ev), ev.Remaining, ev.Next)
	}
	for ev.Next != "" {
		if ev, err = cl.Evacuate(f.ctx, claims.EvacuateParams{Provider: a, Parallel: 8, Confirm: true, Limit: 5, After: ev.Next}); err != nil {
			t.Fatal(err)
		}
		for _, m := range ev.Consumers {
			if m.Status != claims.EvacuationMoved || !m.Confirmed {
				t.Errorf("%+v", m)
			}
		}
	}
	if f.used(a) != 0 || f.used(b) != 8 || f.used(c) != 8 {
		t.Errorf("usage a %d b %d c %d", f.used(a), f.used(b), f.used(c))
	}
	// Bad parameters and providers: nothing written.
	for _, p := range []claims.EvacuateParams{{Provider: a, Parallel: 33}, {Provider: a, Limit: -1}, {Provider: a, After: "x"}} {
		if _, err := cl.Evacuate(f.ctx, p); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "Invalid") {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if _, err := cl.Evacuate(f.ctx, claims.EvacuateParams{Provider: "00000000-0000-4000-8000-00000000abcd"}); err == nil ||
		!strings.Contains(err.Error(), "No resource provider") {
		t.Errorf("unknown provider: %v", err)
	}
}

// TestClaimInstance: the claim's instance reaches the scriptlet as LXD's
// request, and belongs to the request's fingerprint: a retry with
// another instance is not the same claim.
func TestClaimInstance(t *testing.T) {
	f := newFixture(t)
	f.provider("a", 8)
	f.provider("b", 8)
	cl := f.claimer(`{}`, `
def instance_placement(request, candidate_members):
    if request.config.get("user.zone") != "b":
        fail("wants zone b, got %s" % request.config.get("user.zone"))
    set_target(request.config["user.zone"])
`)
	p := params(1)
	p.Instance = map[string]any{"name": "c1", "config": map[string]any{"user.zone": "b"}}
	r, err := cl.Claim(f.ctx, p)
	if err != nil || r.RootName != "b" {
		t.Fatalf("%+v %v", r, err)
	}
	if again, err := cl.Claim(f.ctx, p); err != nil || again.Root != r.Root {
		t.Fatalf("retry: %+v %v", again, err)
	}
	p.Instance = map[string]any{"name": "c1", "config": map[string]any{"user.zone": "b", "limits.cpu": "2"}}
	var mm *claims.MismatchError
	if _, err := cl.Claim(f.ctx, p); !errors.As(err, &mm) || !slices.Contains(mm.Fields, "instance") {
		t.Fatalf("other instance: %v", err)
	}
	p = params(1)
	_, err = cl.Claim(f.ctx, p)
	notPlaced(t, err, claims.Refused)
}
