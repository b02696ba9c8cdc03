package engine

import (
	"slices"
	"testing"
)

// TestAvoidEvacuated: a claim's search (AvoidEvacuated) leaves out the
// tree of an evacuated root, and a sharing provider whose root is
// evacuated, wherever it would be used; without the flag the answer is
// Placement's.
func TestAvoidEvacuated(t *testing.T) {
	evacuate := func(names ...string) *Snapshot {
		s := sharedStorage()
		changed := map[int64]*ProviderRecord{}
		for _, n := range names {
			i, _ := s.idx.byName.find(n, func(i int32) string { return s.provs.at(i).Name })
			rec := *s.provs.at(i)
			rec.Evacuated = true
			changed[rec.ID] = &rec
		}
		return s.WithProviders(changed, nil, s.names)
	}
	params := CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("VCPU:1,MEMORY_MB:1024,DISK_GB:100")}}}
	all := render(mustCandidates(t, sharedStorage(), params))
	for _, tt := range []struct {
		evacuated []string
		want      []string
	}{
		{[]string{"cn1"}, []string{
			"cn2:DISK_GB=100+MEMORY_MB=1024+VCPU=1",
			"cn2:MEMORY_MB=1024+VCPU=1 ss2:DISK_GB=100",
			"cn2:MEMORY_MB=1024+VCPU=1 ss:DISK_GB=100"}},
		{[]string{"ss", "cn2"}, []string{"cn1:MEMORY_MB=1024+VCPU=1 ss2:DISK_GB=100"}},
		{[]string{"cn1", "cn2"}, nil},
	} {
		s := evacuate(tt.evacuated...)
		avoid := params
		avoid.AvoidEvacuated = true
		if got := render(mustCandidates(t, s, avoid)); !slices.Equal(got, tt.want) {
			t.Errorf("%v evacuated: %q, want %q", tt.evacuated, got, tt.want)
		}
		if got := render(mustCandidates(t, s, params)); !slices.Equal(got, all) {
			t.Errorf("%v evacuated, not avoided: %q, want %q", tt.evacuated, got, all)
		}
		sf, err := s.Shortfall(t.Context(), &avoid)
		if err != nil || sf.Reasons[ShortEvacuated] != len(tt.evacuated) {
			t.Errorf("%v evacuated: shortfall %+v %v", tt.evacuated, sf, err)
		}
	}
}
