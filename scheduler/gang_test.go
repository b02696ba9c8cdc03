package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// gangPlacements are two placements of a gang of members of 2 VCPU on
// 8-VCPU hosts, given in reverse of the engine's order: p1 (Index 1) on
// h3 (2 used, takes 4), p0 (Index 0) on h1 (empty, takes 2) and h2 (4
// used, takes 2).
func gangPlacements() []*GangPlacement {
	h1, h2, h3 := cand(0, "h1", 8, 0, 2), cand(1, "h2", 8, 4, 2), cand(2, "h3", 8, 2, 4)
	return []*GangPlacement{
		{Domain: "rack1", Index: 1, Hosts: []*Candidate{h3},
			Members: []GangMemberPlace{{ConsumerUUID: "m0", Host: 0}, {ConsumerUUID: "m1", Host: 0}}},
		{Domain: "rack0", Index: 0, EmptyStarted: 1, Hosts: []*Candidate{h1, h2},
			Members: []GangMemberPlace{{ConsumerUUID: "m0", Host: 0}, {ConsumerUUID: "m1", Host: 1}}},
	}
}

func rankGang(t *testing.T, cfg string) string {
	t.Helper()
	pc, err := ParsePolicyConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(pc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.RankGang(context.Background(), &Request{ProjectID: "p"}, gangPlacements())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range g.Ranked {
		out = append(out, fmt.Sprintf("%s=%.3g%v", s.Placement.Domain, s.Score, s.Weights))
	}
	return strings.Join(out, " ")
}

// TestRankGang: a placement's score is the mean over its hosts of the
// weighers' contributions, each normalised across every host of every
// placement: free after the gang, h1 0.75, h2 0.25, h3 0.25. Pack
// normalises them to 0, 1, 1 (rack0 0.5, rack1 1), spread to 1, 0, 0
// (rack0 0.5, rack1 0); a tie, or no weigher, keeps the engine's order
// (Index), and the built-in policy weighs nothing.
func TestRankGang(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`{"weighers": [{"name": "pack"}]}`, "rack1=1map[pack:1] rack0=0.5map[pack:0.5]"},
		{`{"weighers": [{"name": "spread", "factor": 2}]}`, "rack0=1map[spread:1] rack1=0map[spread:0]"},
		{`{"weighers": [{"name": "pack"}, {"name": "spread"}]}`, "rack0=1map[pack:0.5 spread:0.5] rack1=1map[pack:1 spread:0]"},
		{`{}`, "rack0=0map[] rack1=0map[]"},
		{`{"filters": [{"name": "capacity"}], "weighers": [{"name": "spread"}]}`, "rack0=0map[] rack1=0map[]"},
	} {
		if got := rankGang(t, tc.cfg); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.cfg, got, tc.want)
		}
	}
	builtin, err := NewPolicy(DefaultPolicyConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pack, err := NewPolicy(PolicyConfig{Weighers: []PluginConfig{{Name: PackName}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if builtin.RanksGangs() || !pack.RanksGangs() {
		t.Errorf("RanksGangs: built-in %v, pack %v", builtin.RanksGangs(), pack.RanksGangs())
	}
	g := &GangRanking{Ranked: []ScoredPlacement{{Placement: &GangPlacement{Domain: "a"}}, {Placement: &GangPlacement{Domain: "b"}},
		{Placement: &GangPlacement{Domain: "c"}}}}
	if !g.ChooseDomain("c") || g.Ranked[0].Placement.Domain != "c" || g.Ranked[1].Placement.Domain != "a" ||
		g.Ranked[2].Placement.Domain != "b" || g.Domain != "c" || !g.Chosen || g.ChooseDomain("x") {
		t.Errorf("ChooseDomain: %+v", g)
	}
}
