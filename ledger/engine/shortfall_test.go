package engine

import (
	"context"
	"maps"
	"testing"
)

func TestShortfall(t *testing.T) {
	flat := func() *Snapshot {
		b := newSnapBuilder()
		b.rp("cn1", "").inv("cn1", "VCPU", 8).inv("cn1", "MEMORY_MB", 1024)
		b.rp("cn2", "").inv("cn2", "VCPU", 2).inv("cn2", "MEMORY_MB", 8192)
		b.rp("cn3", "").inv("cn3", "VCPU", 8).inv("cn3", "MEMORY_MB", 8192).used("cn3", "MEMORY_MB", 8192)
		b.rp("cn4", "").inv("cn4", "VCPU", 8).inv("cn4", "MEMORY_MB", 8192).traits("cn4", "CUSTOM_GOLD")
		return b.build()
	}
	nested := func() *Snapshot {
		b := newSnapBuilder()
		b.rp("host", "").rp("numa0", "host").inv("numa0", "VCPU", 4)
		b.rp("other", "").inv("other", "VCPU", 2)
		return b.build()
	}
	tests := []struct {
		name    string
		snap    func() *Snapshot
		p       CandidatesParams
		fit     int
		reasons map[string]int
	}{{
		name:    "each root counted by its first missing class",
		snap:    flat,
		p:       CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("VCPU:4,MEMORY_MB:2048")}}},
		fit:     1,
		reasons: map[string]int{"lacked MEMORY_MB 2048": 2, "lacked VCPU 4": 1},
	}, {
		name: "root_required",
		snap: flat,
		p: CandidatesParams{NestedAware: true, RootRequired: []string{"CUSTOM_GOLD"},
			Groups: []RequestGroup{{Resources: res("VCPU:1")}}},
		fit:     1,
		reasons: map[string]int{ShortRootRequired: 3},
	}, {
		name: "required traits of the unnumbered group",
		snap: flat,
		p: CandidatesParams{NestedAware: true,
			Groups: []RequestGroup{{Resources: res("VCPU:1"), RequiredTraits: [][]string{{"CUSTOM_GOLD"}}}}},
		fit:     1,
		reasons: map[string]int{ShortTraitsOrAggs: 3},
	}, {
		name: "isolated groups that fit apart but not together",
		snap: nested,
		p: CandidatesParams{NestedAware: true, Isolate: true, Groups: []RequestGroup{
			{Suffix: "_A", Resources: res("VCPU:2")}, {Suffix: "_B", Resources: res("VCPU:2")}}},
		reasons: map[string]int{ShortNoCombination: 2},
	}, {
		name: "a suffixed group without a provider",
		snap: nested,
		p: CandidatesParams{NestedAware: true, Groups: []RequestGroup{
			{Suffix: "_A", Resources: res("VCPU:3")}}},
		fit:     1,
		reasons: map[string]int{"lacked group _A (VCPU 3)": 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.snap()
			sf, err := s.Shortfall(context.Background(), &tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if sf.Roots != len(s.idx.roots) || sf.Fit != tt.fit || !maps.Equal(sf.Reasons, tt.reasons) {
				t.Fatalf("got roots %d fit %d %v, want fit %d %v", sf.Roots, sf.Fit, sf.Reasons, tt.fit, tt.reasons)
			}
			// Every root is counted once: fitting or with one reason.
			n := sf.Fit
			for _, c := range sf.Reasons {
				n += c
			}
			if n != sf.Roots {
				t.Fatalf("%d roots counted, %d in the snapshot", n, sf.Roots)
			}
			// The roots that fit are exactly those with candidates.
			cands, err := s.Candidates(context.Background(), &tt.p)
			if err != nil {
				t.Fatal(err)
			}
			roots := map[string]bool{}
			for _, ar := range cands.Requests {
				for _, a := range ar.Allocations {
					i, _ := s.providerIndex(a.ProviderUUID)
					roots[s.provs.at(s.idx.root[i]).UUID] = true
				}
			}
			if len(roots) != sf.Fit {
				t.Fatalf("%d roots have candidates, shortfall says %d fit", len(roots), sf.Fit)
			}
		})
	}
}
