package claims_test

import (
	"testing"

	"github.com/berthd/berth/claims/cloud"
)

// TestScriptletSeesPreemptibleUsage: a scriptlet reads each candidate's
// preemptible usage (per class, with the lowest priority there) from the
// ledger (and each cluster member's), and a scriptlet that prefers capacity that is free rather than
// spot-held places a claim on the host a spread policy would not pick.
func TestScriptletSeesPreemptibleUsage(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	plain := f.claimer(`{}`, "")
	for _, spot := range []struct {
		prio int64
		vcpu int64
	}{{-2, 1}, {5, 1}} {
		p := params(spot.vcpu)
		p.Target, p.Priority, p.Preemptible = "a", spot.prio, true
		if _, err := plain.Claim(f.ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	f.place(plain, consumerN(1), "b", 3) // on demand: not preemptible

	const script = `
def instance_placement(request, candidate_members):
    seen = {m.name: m.preemptible for m in candidate_members}
    a, b = seen["a"], seen["b"]
    if len(b) != 0 or a["VCPU"].used != 2 or a["VCPU"]["lowest_priority"] != -2 or list(a.keys()) != ["VCPU"]:
        fail("preemptible usage: %s" % seen)
    members = {m.name: m.preemptible for m in get_cluster_members()}
    if members["a"]["VCPU"].used != 2 or members["a"]["VCPU"].lowest_priority != -2 or len(members["b"]) != 0:
        fail("cluster members' preemptible usage: %s" % members)
    best = None
    for m in candidate_members:
        free = m.inventories["VCPU"].free
        held = m.preemptible["VCPU"].used if "VCPU" in m.preemptible else 0
        if best == None or free - held > best[0]:
            best = (free - held, m.name)
    set_target(best[1])
`
	spread := f.claimerWith(`{"weighers": [{"name": "spread"}]}`, "", cloud.New(f.store))
	r, err := spread.ClaimUnrecorded(f.ctx, params(1))
	if err != nil || r.Root != a {
		t.Fatalf("spread alone: %+v %v, want a (6 free of 8 against b's 5)", r, err)
	}
	c := f.claimerWith(`{"weighers": [{"name": "spread"}]}`, script, cloud.New(f.store))
	r, err = c.ClaimUnrecorded(f.ctx, params(1))
	if err != nil || r.Root != b {
		t.Fatalf("preferring free capacity: %+v %v, want b", r, err)
	}
}
