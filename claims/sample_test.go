package claims_test

import (
	"fmt"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

func (f *fixture) claimerCfg(policy string, cfg claims.Config) *claims.Claimer {
	f.t.Helper()
	pc, err := scheduler.ParsePolicyConfig([]byte(policy))
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := scheduler.NewPolicy(pc, nil, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := claims.New(claims.Deps{Store: f.store, Policy: p}, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// A claim ranking a sample of one root finds the only allowed root
// whatever the sample holds: when the filters leave nothing of the
// sample, the full set decides.
func TestClaimSampleFallsBackToFullSet(t *testing.T) {
	f := newFixture(t)
	var all []string
	for i := range 8 {
		all = append(all, f.provider(fmt.Sprintf("n%d", i), 8))
	}
	keep := all[5]
	c := f.claimerCfg(`{}`, claims.Config{ClaimCandidates: 1})
	for i := range 8 {
		p := params(1)
		for _, u := range all {
			if u != keep {
				p.Exclude = append(p.Exclude, u)
			}
		}
		r, err := c.ClaimUnrecorded(f.ctx, p)
		if err != nil || r.Root != keep {
			t.Fatalf("claim %d: %+v %v", i, r, err)
		}
	}
	if f.used(keep) != 8 {
		t.Fatalf("kept root holds %d VCPU, want 8", f.used(keep))
	}

	// Nothing allowed: the answer counts the full set, not the sample.
	p := params(1)
	p.Exclude = all
	_, err := c.ClaimUnrecorded(f.ctx, p)
	np := notPlaced(t, err, claims.AllFiltered)
	if _, ok := np.Steps[0].Reasons[claims.ReasonOutsideSample]; ok || np.Steps[0].Remaining != 7 {
		t.Fatalf("first step %+v: want the full set's 7 candidates (the kept root is full)", np.Steps[0])
	}
	removed := 0
	for _, st := range np.Steps[1:] {
		removed += st.Removed
	}
	if removed != 7 {
		t.Fatalf("steps %+v remove %d candidates, want 7", np.Steps, removed)
	}
}

// A sampled claim that succeeds says in its first step how many roots
// were outside the sample.
func TestClaimSampleSteps(t *testing.T) {
	f := newFixture(t)
	for i := range 6 {
		f.provider(fmt.Sprintf("n%d", i), 8)
	}
	r, err := f.claimerCfg(`{}`, claims.Config{ClaimCandidates: 2}).ClaimUnrecorded(f.ctx, params(1))
	if err != nil {
		t.Fatal(err)
	}
	st := r.Steps[0]
	if st.Remaining != 2 || st.Removed != 4 || st.Reasons[claims.ReasonOutsideSample] != 4 {
		t.Fatalf("first step %+v: want 2 sampled, 4 outside the sample", st)
	}
}

// With a subset size of 1, claims whose candidates tie spread over them
// at random; with 0 they take the first in the ledger's order.
func TestClaimSubsetSpreadsTies(t *testing.T) {
	f := newFixture(t)
	var roots []string
	for i := range 4 {
		roots = append(roots, f.provider(fmt.Sprintf("n%d", i), 64))
	}
	// No weigher: every candidate scores the same.
	const policy = `{"weighers": []}`
	used := func() int {
		n := 0
		for _, r := range roots {
			if f.used(r) > 0 {
				n++
			}
		}
		return n
	}
	det := f.claimerCfg(policy, claims.Config{ClaimCandidates: -1})
	for range 8 {
		if _, err := det.ClaimUnrecorded(f.ctx, params(1)); err != nil {
			t.Fatal(err)
		}
	}
	if n := used(); n != 1 {
		t.Fatalf("subset size 0: claims on %d roots, want 1", n)
	}
	spread := f.claimerCfg(policy, claims.Config{ClaimCandidates: -1, SubsetSize: 1})
	for range 24 {
		if _, err := spread.ClaimUnrecorded(f.ctx, params(1)); err != nil {
			t.Fatal(err)
		}
	}
	// All 24 on the same root has probability 4^-23.
	if n := used(); n < 2 {
		t.Fatalf("subset size 1: claims on %d roots, want them spread", n)
	}
}

// With subset size 1 claims spread over ties, but not over the
// scriptlet's choice: its set_target's candidate is the one written,
// though every candidate scores the same, for an evacuation's moves as
// for new claims.
func TestClaimSubsetKeepsScriptletTarget(t *testing.T) {
	f := newFixture(t)
	var roots []string
	for i := range 4 {
		roots = append(roots, f.provider(fmt.Sprintf("n%d", i), 64))
	}
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"weighers": []}`)) // every candidate scores the same
	if err != nil {
		t.Fatal(err)
	}
	prog, err := scriptlet.Compile("target.star", []byte(`
def instance_placement(request, candidate_members):
    names = [m.server_name for m in candidate_members]
    set_target("n2" if "n2" in names else "n3")
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := scheduler.NewPolicy(pc, nil, scriptlet.NewRuntime(scriptlet.Static{Default: prog}, scriptlet.Limits{}))
	if err != nil {
		t.Fatal(err)
	}
	for round, size := range []int{1, 3} {
		c, err := claims.New(claims.Deps{Store: f.store, Policy: p}, claims.Config{ClaimCandidates: -1, SubsetSize: size})
		if err != nil {
			t.Fatal(err)
		}
		// 20 claims at random over ties would all land on n2 with
		// probability 4^-20.
		for i := range 20 {
			r, err := c.ClaimUnrecorded(f.ctx, params(1))
			if err != nil {
				t.Fatal(err)
			}
			if r.RootName != "n2" || r.Attempts != 1 {
				t.Fatalf("subset size %d, claim %d: on %s after %d attempts, want n2 (the scriptlet's target)", size, i, r.RootName, r.Attempts)
			}
		}
		if f.used(roots[2]) != 20 {
			t.Fatalf("subset size %d: n2 holds %d", size, f.used(roots[2]))
		}
		// Evacuated, n2's consumers move where the scriptlet says: n3.
		ev, err := c.Evacuate(f.ctx, claims.EvacuateParams{Provider: roots[2], Confirm: true})
		if err != nil {
			t.Fatal(err)
		}
		if ev.Remaining != 0 || len(ev.Consumers) != 20 {
			t.Fatalf("subset size %d: evacuation %+v", size, ev)
		}
		for _, m := range ev.Consumers {
			if m.Status != claims.EvacuationMoved || m.DestinationName != "n3" {
				t.Fatalf("subset size %d: %+v, want moved to n3 (the scriptlet's target)", size, m)
			}
		}
		if f.used(roots[2]) != 0 || f.used(roots[3]) != 20*int64(round+1) {
			t.Fatalf("subset size %d: n2 %d, n3 %d", size, f.used(roots[2]), f.used(roots[3]))
		}
		if _, err := f.store.Cloud.ProviderRestore(f.ctx, roots[2]); err != nil {
			t.Fatal(err)
		}
	}
}
