package scheduling_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/scheduling"
)

// TestShadows: start, flush (counters added, refusal messages bounded,
// disagreements trimmed to the last ones), stop, and the cascade when what
// a shadow runs is deleted.
func TestShadows(t *testing.T) {
	f := newFixture(t)
	s, ctx := f.Store, f.Ctx

	_, err := s.Catalogue.ShadowStart(ctx, scheduling.ShadowScriptlet, "pick")
	if le := ledgertest.Rejection(t, err, fault.ErrNotFound); le.Code != fault.CodeShadowNotFound {
		t.Errorf("code %q", le.Code)
	}
	if _, err := s.Catalogue.ScriptletPut(ctx, "pick", "def instance_placement(r, m):\n    pass\n"); err != nil {
		t.Fatal(err)
	}
	sh, err := s.Catalogue.ShadowStart(ctx, scheduling.ShadowScriptlet, "pick")
	if err != nil || sh.ID == 0 || sh.StartedAt.IsZero() {
		t.Fatalf("start: %+v %v", sh, err)
	}
	_, err = s.Catalogue.ShadowStart(ctx, scheduling.ShadowScriptlet, "pick")
	if le := ledgertest.Rejection(t, err, fault.ErrConflict); le.Code != fault.CodeShadowRunning {
		t.Errorf("code %q", le.Code)
	}
	_, err = s.Catalogue.ShadowStart(ctx, "nonsense", "pick")
	ledgertest.Rejection(t, err, fault.ErrInvalid)

	// Two flushes add up; a delta of a shadow that is gone is dropped.
	now := time.Now().UTC()
	var dis []scheduling.ShadowDisagreement
	for i := range scheduling.ShadowMaxDisagreements + 5 {
		dis = append(dis, scheduling.ShadowDisagreement{At: now.Add(time.Duration(i) * time.Millisecond), ConsumerUUID: fmt.Sprint(i),
			Name: fmt.Sprintf("vm%d", i), ProjectID: "p", ClaimRoot: "a", ClaimRootName: "cn1", ShadowRoot: "b", ShadowRootName: "cn2"})
	}
	refusals := map[string]int64{}
	for i := range scheduling.ShadowMaxRefusals + 3 {
		refusals[fmt.Sprintf("no %03d", i)] = 1
	}
	d := scheduling.ShadowDelta{ShadowID: sh.ID, Counts: scheduling.ShadowCounts{ClaimsSeen: 10, Agreed: 4, Disagreed: 3, WouldRefuse: 1,
		FailedSteps: 1, FailedError: 1, Dropped: 2, Nanoseconds: 1000, WouldPreempt: 2, WouldPreemptVictims: 5}, Refusals: map[string]int64{"no": 1}, Disagreements: dis[:3]}
	if err := s.Catalogue.ShadowFlush(ctx, []scheduling.ShadowDelta{d, {ShadowID: sh.ID + 100, Counts: scheduling.ShadowCounts{ClaimsSeen: 1}}}); err != nil {
		t.Fatal(err)
	}
	d.Refusals, d.Disagreements = refusals, dis[3:]
	if err := s.Catalogue.ShadowFlush(ctx, []scheduling.ShadowDelta{d}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Catalogue.ShadowGet(ctx, scheduling.ShadowScriptlet, "pick")
	if err != nil {
		t.Fatal(err)
	}
	want := scheduling.ShadowCounts{ClaimsSeen: 20, Agreed: 8, Disagreed: 6, WouldRefuse: 2, FailedSteps: 2, FailedError: 2, Dropped: 4, Nanoseconds: 2000,
		WouldPreempt: 4, WouldPreemptVictims: 10}
	if got.Counts != want || got.ID != sh.ID || got.Kind != scheduling.ShadowScriptlet || got.Name != "pick" {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	// "no" and 49 of the others by name; the last ones counted together.
	if len(got.Refusals) != scheduling.ShadowMaxRefusals+1 || got.Refusals["no"] != 1 || got.Refusals[scheduling.ShadowOtherRefusals] != 4 {
		t.Errorf("%d refusals: %v", len(got.Refusals), got.Refusals)
	}
	if n := len(got.Disagreements); n != scheduling.ShadowMaxDisagreements {
		t.Fatalf("%d disagreements kept", n)
	}
	if first, last := got.Disagreements[0], got.Disagreements[len(got.Disagreements)-1]; first.Name != "vm5" || last.Name != "vm24" ||
		last.ShadowRootName != "cn2" || last.ClaimRootName != "cn1" || last.ProjectID != "p" || last.At.Sub(dis[24].At).Abs() > time.Microsecond {
		t.Errorf("disagreements from %+v to %+v", first, last)
	}

	active, err := s.Catalogue.Shadows(ctx)
	if err != nil || len(active) != 1 || active[0].ID != sh.ID || active[0].Kind != scheduling.ShadowScriptlet || active[0].Name != "pick" {
		t.Fatalf("shadows %+v %v", active, err)
	}
	if err := s.Catalogue.ShadowStop(ctx, scheduling.ShadowScriptlet, "pick"); err != nil {
		t.Fatal(err)
	}
	err = s.Catalogue.ShadowStop(ctx, scheduling.ShadowScriptlet, "pick")
	if le := ledgertest.Rejection(t, err, fault.ErrNotFound); le.Code != fault.CodeShadowNotFound {
		t.Errorf("code %q", le.Code)
	}
	_, err = s.Catalogue.ShadowGet(ctx, scheduling.ShadowScriptlet, "pick")
	ledgertest.Rejection(t, err, fault.ErrNotFound)

	// A restarted shadow counts from zero; deleting its scriptlet stops it.
	if _, err := s.Catalogue.ShadowStart(ctx, scheduling.ShadowScriptlet, "pick"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Catalogue.ShadowGet(ctx, scheduling.ShadowScriptlet, "pick"); err != nil || got.Counts != (scheduling.ShadowCounts{}) ||
		len(got.Refusals) != 0 || len(got.Disagreements) != 0 {
		t.Errorf("restarted: %+v %v", got, err)
	}
	if err := s.Catalogue.ScriptletDelete(ctx, "pick"); err != nil {
		t.Fatal(err)
	}
	if active, err := s.Catalogue.Shadows(ctx); err != nil || len(active) != 0 {
		t.Errorf("shadows after the delete of their scriptlet: %+v %v", active, err)
	}
}
