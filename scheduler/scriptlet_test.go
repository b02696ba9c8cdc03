package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func rankWith(t *testing.T, src string, cfg ScriptletConfig) (*Ranking, error) {
	t.Helper()
	s, err := NewScriptlet("test.star", []byte(src), cfg, nil)
	if err != nil {
		return nil, err
	}
	p, err := NewPolicy(PolicyConfig{Weighers: []PluginConfig{{Name: PackName}}}, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	cands := []*Candidate{
		cand(0, "a", 10, 0, 1),
		cand(1, "b", 10, 5, 1, "CUSTOM_SSD"),
		cand(2, "c", 10, 8, 1),
	}
	return p.Rank(context.Background(), &Request{ConsumerUUID: "c1", Resources: map[string]int64{"VCPU": 1}}, cands)
}

func order(r *Ranking) string {
	var out []string
	for _, s := range r.Ranked {
		out = append(out, s.Cand.Root())
	}
	return strings.Join(out, ",")
}

func TestScriptlet(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		cfg     ScriptletConfig
		want    string // ranked roots
		refused string
		errLike string // load or rank error
	}{
		{name: "choose none keeps ranking", src: "def choose(request, candidates):\n    return None\n", want: "c,b,a"},
		{name: "choose index", src: `
def choose(request, candidates):
    for i, c in enumerate(candidates):
        for p in c.providers.values():
            if "CUSTOM_SSD" in p.traits:
                return i
    return None
`, want: "b,c,a"},
		{name: "choose list", src: "def choose(request, candidates):\n    return [2, 0]\n", want: "a,c"},
		{name: "choose sees request and scores", src: `
def choose(request, candidates):
    if request.resources["VCPU"] != 1 or request.consumer_uuid != "c1":
        fail("bad request")
    if candidates[0].score < candidates[1].score:
        fail("not ranked")
    return None
`, want: "c,b,a"},
		{name: "refuse", src: "def choose(request, candidates):\n    refuse(\"maintenance window\")\n", refused: "maintenance window"},
		{name: "filter", src: `
def filter(request, candidate):
    if candidate.root == "c":
        return "too hot"
    return candidate.providers[candidate.root].resources["VCPU"].used < 8
`, want: "b,a"},
		{name: "weigh overrides pack with a bigger factor", src: `
def weigh(request, candidate):
    return -candidate.providers[candidate.root].resources["VCPU"].used
`, cfg: ScriptletConfig{WeighFactor: 3}, want: "a,b,c"},
		{name: "step budget", src: `
def choose(request, candidates):
    n = 0
    for i in range(100000000):
        n += i
    return None
`, cfg: ScriptletConfig{MaxSteps: 10000}, errLike: "too many steps"},
		{name: "deadline", src: `
def choose(request, candidates):
    n = 0
    for i in range(1000000000):
        n += i
    return None
`, cfg: ScriptletConfig{MaxSteps: 1 << 62, Timeout: Duration(50 * time.Millisecond)}, errLike: "deadline exceeded"},
		{name: "syntax error", src: "def choose(request, candidates)\n    return None\n", errLike: "test.star:2:1"},
		{name: "no entry point", src: "x = 1\n", errLike: "defines none of"},
		{name: "bad return", src: "def choose(request, candidates):\n    return 7\n", errLike: "want an index"},
		{name: "runtime error", src: "def choose(request, candidates):\n    return candidates[0].nope\n", errLike: "has no .nope attribute"},
		{name: "frozen values", src: "def choose(request, candidates):\n    candidates.append(1)\n", errLike: "frozen"},
	}
	for _, tt := range tests {
		r, err := rankWith(t, tt.src, tt.cfg)
		switch {
		case tt.errLike != "":
			if err == nil || !strings.Contains(err.Error(), tt.errLike) {
				t.Errorf("%s: err %v, want %q", tt.name, err, tt.errLike)
			}
			var refused *RefusedError
			if errors.As(err, &refused) {
				t.Errorf("%s: an error became a refusal", tt.name)
			}
		case tt.refused != "":
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Reason != tt.refused {
				t.Errorf("%s: err %v, want refusal %q", tt.name, err, tt.refused)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		default:
			if got := order(r); got != tt.want {
				t.Errorf("%s: ranked %s, want %s", tt.name, got, tt.want)
			}
		}
	}
}

func TestScriptletFilterCounts(t *testing.T) {
	r, err := rankWith(t, "def filter(request, candidate):\n    return candidate.root == \"a\" or \"not a\"\n", ScriptletConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rejections) != 1 || r.Rejections[0].Filter != ScriptletName || r.Rejections[0].Reasons["not a"] != 2 {
		t.Errorf("rejections %+v", r.Rejections)
	}
}
