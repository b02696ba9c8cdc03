package scheduler

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRank ranks 10,000 single-provider candidates (the default
// candidate cap) with a filter and two weighers, with and without a
// scriptlet choose.
func BenchmarkRank(b *testing.B) {
	cands := make([]*Candidate, 10000)
	for i := range cands {
		cands[i] = cand(i, fmt.Sprintf("rp%05d", i), 64, int64(i%64), 2)
	}
	cfg, err := ParsePolicyConfig([]byte(`{"filters": [{"name": "max_usage_ratio", "params": {"max": 0.9}}],
		"weighers": [{"name": "pack"}, {"name": "prefer_traits", "params": {"traits": ["CUSTOM_X"]}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	script, err := NewScriptlet("b.star", []byte("def choose(request, candidates):\n    return len(candidates) - 1\n"), ScriptletConfig{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		script *Scriptlet
	}{{"plugins", nil}, {"plugins+choose", script}} {
		p, err := NewPolicy(cfg, nil, bc.script)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Rank(context.Background(), &Request{}, cands); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
