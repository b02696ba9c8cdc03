package scriptlet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/berthd/berth/scheduler"
)

// gangOf is two placements of a gang of two members: rack0 on node1 and
// node2 (one member each), rack1 on node3 (both).
func gangOf() []*scheduler.GangPlacement {
	c := threeCands()
	return []*scheduler.GangPlacement{
		{Domain: "rack0", Index: 0, EmptyStarted: 1, Hosts: c[:2],
			Members: []scheduler.GangMemberPlace{{ConsumerUUID: "m0", Name: "w0", Host: 0}, {ConsumerUUID: "m1", Name: "w1", Host: 1}}},
		{Domain: "rack1", Index: 1, Hosts: c[2:],
			Members: []scheduler.GangMemberPlace{{ConsumerUUID: "m0", Name: "w0", Host: 0}, {ConsumerUUID: "m1", Name: "w1", Host: 0}}},
	}
}

// rankGangWith ranks gangOf under a policy cfg whose default scriptlet
// is src.
func rankGangWith(t *testing.T, cfg, src string, limits Limits) (*scheduler.GangRanking, error) {
	t.Helper()
	pc, err := scheduler.ParsePolicyConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	res := &scripts{named: map[string]*Program{}}
	if src != "" {
		res.def = compile(t, src)
	}
	p, err := scheduler.NewPolicy(pc, nil, NewRuntime(res, limits))
	if err != nil {
		t.Fatal(err)
	}
	return p.RankGang(context.Background(), &scheduler.Request{ProjectID: "p1", Resources: map[string]int64{"VCPU": 2}, Data: fixData()}, gangOf())
}

// TestGangPlacement: gang_placement sees the domains best first, each
// with its hosts (candidate members) and members; set_target chooses a
// domain, a value or fail refuses the gang, an unknown domain is
// LXD's warning; a scriptlet without gang_placement leaves gangs alone.
func TestGangPlacement(t *testing.T) {
	pack := `{"weighers": [{"name": "pack"}]}`
	g, err := rankGangWith(t, pack, `
def gang_placement(request, domains):
    for d in domains:
        log_info(d.aggregate, d.rank, d.score, d.empty_hosts_started, [h.name for h in d.hosts],
                 ["%s@%s" % (m.name, m.host.name) for m in d.members], d.hosts[0].allocations, d.weights)
    set_target(domains[1].aggregate)
`, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, l := range g.Log {
		log = append(log, l.Message)
	}
	// node3 (8 of 10 used) is fuller than node1 and node2 (0 and 5 used).
	want := `rack1 0 1.0 0 ["node3"] ["w0@node3", "w1@node3"] {"node3": {"VCPU": 1}} {"pack": 1.0}|` +
		`rack0 1 0.3125 1 ["node1", "node2"] ["w0@node1", "w1@node2"] {"uuid-1": {"VCPU": 1}} {"pack": 0.3125}`
	if got := strings.Join(log, "|"); got != want || g.Scriptlet != DefaultName || !g.Chosen || g.Domain != "rack0" ||
		g.Ranked[0].Placement.Domain != "rack0" {
		t.Fatalf("got %s (%+v), want %s", got, g, want)
	}

	for src, reason := range map[string]string{
		"def gang_placement(request, domains):\n    return 'no room for ' + request.project\n": "no room for p1",
		"def gang_placement(request, domains):\n    fail('refused %d' % len(domains))\n":       "refused 2",
	} {
		_, err := rankGangWith(t, pack, src, Limits{})
		var refused *scheduler.RefusedError
		if !errors.As(err, &refused) || refused.Reason != reason {
			t.Errorf("%q: %v, want a refusal %q", src, err, reason)
		}
	}

	g, err = rankGangWith(t, pack, "def gang_placement(request, domains):\n    set_target('rack9')\n", Limits{})
	if err != nil || g.Chosen || g.Ranked[0].Placement.Domain != "rack1" || len(g.Log) != 1 || g.Log[0].Level != "warn" ||
		!strings.Contains(g.Log[0].Message, `"rack9" is not a domain that holds the gang`) {
		t.Errorf("an unknown domain: %+v %v", g, err)
	}
	_, err = rankGangWith(t, pack, "def gang_placement(request, domains):\n    set_target('rack9')\n", Limits{Dialect: DialectIncus})
	if err == nil || !strings.Contains(err.Error(), "Invalid member name: rack9") {
		t.Errorf("an unknown domain under incus: %v", err)
	}

	// A scriptlet of single claims only: the weighers rank the gang.
	g, err = rankGangWith(t, pack, "def instance_placement(request, members):\n    return 'never'\n", Limits{})
	if err != nil || g.Scriptlet != "" || g.Ranked[0].Placement.Domain != "rack1" {
		t.Errorf("no gang_placement: %+v %v", g, err)
	}
	// gang_placement alone is a scriptlet, checked when stored.
	if err := Check("g", []byte("def gang_placement(request, domains):\n    set_target(domains[0].aggregate)\n"), Limits{}); err != nil {
		t.Errorf("Check: %v", err)
	}
	var lim *LimitError
	if err := Check("g", []byte("def gang_placement(request, domains):\n    for i in range(100000000):\n        pass\n"), Limits{}); !errors.As(err, &lim) {
		t.Errorf("Check of a gang_placement over its steps: %v", err)
	}
}
