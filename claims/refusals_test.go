package claims

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// TestRefusalRing: refusals come back newest first, the ring keeps the
// last RecentRefusalsSize, other errors and scriptlet tests are not
// recorded, and since cuts the list.
func TestRefusalRing(t *testing.T) {
	var r refusalRing
	np := &NotPlacedError{Reason: NoCandidates, Roots: 3}
	p := Params{Candidates: engine.CandidatesParams{Groups: []engine.RequestGroup{
		{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 4}}, RequiredTraits: [][]string{{"A", "B"}}, ForbiddenTraits: []string{"C"}},
	}}}
	for i := range RecentRefusalsSize + 10 {
		p.ConsumerUUID = fmt.Sprint(i)
		r.record(&p, np)
	}
	r.record(&p, errors.New("not a refusal"))
	r.record(&Params{PolicyOverride: defaultPolicyForTest(t)}, np)
	got := r.recent(time.Time{})
	if len(got) != RecentRefusalsSize || got[0].ConsumerUUID != fmt.Sprint(RecentRefusalsSize+9) || got[len(got)-1].ConsumerUUID != "10" {
		t.Fatalf("recent: %d, first %q, last %q", len(got), got[0].ConsumerUUID, got[len(got)-1].ConsumerUUID)
	}
	if want := "resources=VCPU:4 required=A|B required=!C"; got[0].Request != want {
		t.Errorf("request = %q, want %q", got[0].Request, want)
	}
	if got := r.recent(time.Now().Add(time.Minute)); len(got) != 0 {
		t.Errorf("recent from the future: %d", len(got))
	}
}

// defaultPolicyForTest is DefaultPolicy, or the test's end.
func defaultPolicyForTest(t *testing.T) *scheduler.Policy {
	t.Helper()
	p, err := DefaultPolicy()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
