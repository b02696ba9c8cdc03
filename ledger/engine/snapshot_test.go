package engine

import (
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/berthd/berth/internal/fault"
)

// providerNames lists the names of provs in order.
func providerNames(provs []Provider) []string {
	out := make([]string, len(provs))
	for i, p := range provs {
		out[i] = p.Name
	}
	return out
}

func TestProvidersMatching(t *testing.T) {
	s := sharedStorage()
	tests := []struct {
		name string
		f    ProviderFilter
		want []string
	}{
		{"all", ProviderFilter{}, []string{"cn1", "cn2", "ss", "ss2", "numa1_1", "pf1_1", "numa1_2", "pf1_2", "numa2_1", "pf2_1", "numa2_2", "pf2_2"}},
		{"in_tree", ProviderFilter{InTree: "numa1_2"}, []string{"cn1", "numa1_1", "pf1_1", "numa1_2", "pf1_2"}},
		{"unknown in_tree", ProviderFilter{InTree: "nope"}, []string{}},
		{"name", ProviderFilter{Name: "ss2"}, []string{"ss2"}},
		{"uuid", ProviderFilter{UUID: "cn2"}, []string{"cn2"}},
		{"resources", ProviderFilter{Group: RequestGroup{Resources: res("DISK_GB:1000")}}, []string{"cn2", "ss", "ss2"}},
		{"too much", ProviderFilter{Group: RequestGroup{Resources: res("DISK_GB:2000")}}, []string{}},
		{"required", ProviderFilter{Group: RequestGroup{RequiredTraits: [][]string{{"HW_CPU_X86_SSE"}}}}, []string{"cn1"}},
		{"any of", ProviderFilter{Group: RequestGroup{RequiredTraits: [][]string{{"HW_CPU_X86_SSE", "MISC_SHARES_VIA_AGGREGATE"}}}}, []string{"cn1", "ss", "ss2"}},
		{"forbidden", ProviderFilter{Group: RequestGroup{Resources: res("DISK_GB:10"), ForbiddenTraits: []string{"MISC_SHARES_VIA_AGGREGATE"}}}, []string{"cn2"}},
		{"member_of", ProviderFilter{Group: RequestGroup{MemberOf: [][]string{{"agg"}}}}, []string{"cn1", "cn2", "ss", "ss2"}},
		{"unknown aggregate", ProviderFilter{Group: RequestGroup{MemberOf: [][]string{{"nope"}}}}, []string{}},
		{"name and resources", ProviderFilter{Name: "cn1", Group: RequestGroup{Resources: res("DISK_GB:1")}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ProvidersMatching(&tt.f)
			if err != nil {
				t.Fatal(err)
			}
			// Creation order is the order the builder made them in.
			if names := providerNames(got); !slices.Equal(names, tt.want) {
				t.Errorf("got %v, want %v", names, tt.want)
			}
			// The unread list yields the same on every walk, and a walk
			// may stop early.
			l, err := s.ProviderList(&tt.f)
			if err != nil {
				t.Fatal(err)
			}
			for walk := range 2 {
				if names := providerNames(slices.Collect(l.All())); !slices.Equal(names, tt.want) {
					t.Errorf("walk %d: got %v, want %v", walk, names, tt.want)
				}
			}
			for p := range l.All() {
				if p.Name != tt.want[0] {
					t.Errorf("first of a stopped walk: %s, want %s", p.Name, tt.want[0])
				}
				break
			}
		})
	}
	// The tree links of a listed provider.
	got, _ := s.ProvidersMatching(&ProviderFilter{Name: "pf2_1"})
	if got[0].ParentUUID != "numa2_1" || got[0].RootUUID != "cn2" {
		t.Errorf("pf2_1: parent %q root %q", got[0].ParentUUID, got[0].RootUUID)
	}
	var ue *UnknownNameError
	if _, err := s.ProvidersMatching(&ProviderFilter{Group: RequestGroup{RequiredTraits: [][]string{{"CUSTOM_NOPE"}}}}); !errors.As(err, &ue) || !ue.Trait || !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("unknown trait: %v", err)
	}
	if _, err := s.ProvidersMatching(&ProviderFilter{Group: RequestGroup{Resources: res("CUSTOM_NOPE:1")}}); !errors.As(err, &ue) || ue.Trait {
		t.Errorf("unknown class: %v", err)
	}
}

// WithProviders replaces and adds providers without changing s; the
// indexes are shared while no provider changes shape.
func TestWithProviders(t *testing.T) {
	b := newSnapBuilder()
	b.rp("cn1", "").inv("cn1", "VCPU", 8)
	b.rp("cn2", "").inv("cn2", "VCPU", 8)
	s := b.build()
	four := func(s *Snapshot) []string {
		t.Helper()
		got, err := s.ProvidersMatching(&ProviderFilter{Group: RequestGroup{Resources: res("VCPU:4")}})
		if err != nil {
			t.Fatal(err)
		}
		return providerNames(got)
	}
	old, _ := s.ProviderByID(1)
	used := *old
	used.Inventories = slices.Clone(old.Inventories)
	used.Inventory(0).Used = 6
	used.Generation++
	next := s.WithProviders(map[int64]*ProviderRecord{1: &used}, nil, s.Names())
	if next.idx != s.idx {
		t.Error("usage change rebuilt the indexes")
	}
	if got := four(next); !slices.Equal(got, []string{"cn2"}) {
		t.Errorf("after the usage change: %v", got)
	}
	if got := four(s); !slices.Equal(got, []string{"cn1", "cn2"}) {
		t.Errorf("the old snapshot changed: %v", got)
	}
	added := &ProviderRecord{ID: 3, UUID: "cn3", Name: "cn3", RootID: 3,
		Inventories: []InventoryRecord{{Class: 0, Total: 8, MinUnit: 1, MaxUnit: 8, StepSize: 1, Ratio: 1}}}
	gone := next.WithProviders(map[int64]*ProviderRecord{3: added}, map[int64]bool{2: true}, s.Names())
	if got := four(gone); !slices.Equal(got, []string{"cn3"}) {
		t.Errorf("after adding cn3 and deleting cn2: %v", got)
	}
	if gone.Len() != 2 {
		t.Errorf("%d providers, want 2", gone.Len())
	}
}

// UnsureNames lists the names a snapshot may have wrong, and WithNames
// puts right ones in.
func TestUnsureNames(t *testing.T) {
	b := newSnapBuilder()
	b.rp("cn1", "").inv("cn1", "VCPU", 8).traits("cn1", "HW_CPU_X86_SSE")
	s := b.build()
	c, tr := s.UnsureNames([]string{"VCPU", "MEMORY_MB", "CUSTOM_NEW"}, []string{"HW_CPU_X86_SSE", "CUSTOM_T"})
	// MEMORY_MB is known but unused: it may have been deleted.
	if !slices.Equal(c, []string{"MEMORY_MB", "CUSTOM_NEW"}) || !slices.Equal(tr, []string{"CUSTOM_T"}) {
		t.Errorf("unsure: %v %v", c, tr)
	}
	p := CandidatesParams{Groups: []RequestGroup{{Resources: res("CUSTOM_NEW:1")}}}
	var ue *UnknownNameError
	if _, err := s.Candidates(t.Context(), &p); !errors.As(err, &ue) {
		t.Fatalf("before: %v", err)
	}
	n := s.Names().Clone()
	n.AddClass(20000, "CUSTOM_NEW")
	if _, ok := s.Names().ClassID("CUSTOM_NEW"); ok {
		t.Error("Clone shares its maps")
	}
	c2, err := s.WithNames(n).Candidates(t.Context(), &p)
	if err != nil || len(c2.Requests) != 0 {
		t.Errorf("after: %v, %v", c2, err)
	}
}

// TestParamsNames: the names a request mentions, root traits first,
// then each group's classes and traits in order, nil when there are none.
func TestParamsNames(t *testing.T) {
	p := CandidatesParams{
		RootRequired: []string{"R1"}, RootForbidden: []string{"R2"},
		Groups: []RequestGroup{
			{Resources: res("VCPU:1,MEMORY_MB:2"), RequiredTraits: [][]string{{"A", "B"}, {"C"}}, ForbiddenTraits: []string{"D"}},
			{Suffix: "1", Resources: res("DISK_GB:3")},
			{Suffix: "2", RequiredTraits: [][]string{{"E"}}},
		},
	}
	c, tr := ParamsNames(&p)
	if !slices.Equal(c, []string{"VCPU", "MEMORY_MB", "DISK_GB"}) || !slices.Equal(tr, []string{"R1", "R2", "A", "B", "C", "D", "E"}) {
		t.Errorf("names %q, %q", c, tr)
	}
	for i := range p.Groups {
		gc, gt := GroupNames(&p.Groups[i])
		if len(gc)+len(gt) == 0 || (len(gc) == 0) != (gc == nil) || (len(gt) == 0) != (gt == nil) {
			t.Errorf("group %d: names %q, %q", i, gc, gt)
		}
	}
	if c, tr := ParamsNames(&CandidatesParams{Groups: []RequestGroup{{}}}); c != nil || tr != nil {
		t.Errorf("no names: %q, %q, want nil", c, tr)
	}
}

// TestMemberOfSpelling: aggregates are matched as spelled, as Placement
// compares them (strings): an upper-case spelling is another aggregate.
func TestMemberOfSpelling(t *testing.T) {
	const lower, upper = "5f100000-0000-4000-8000-0000000000a1", "5F100000-0000-4000-8000-0000000000A1"
	s := newSnapBuilder().rp("rp1", "").aggs("rp1", lower).rp("rp2", "").aggs("rp2", upper).build()
	for _, tt := range []struct {
		memberOf  [][]string
		forbidden []string
		want      []string
	}{
		{[][]string{{lower}}, nil, []string{"rp1"}},
		{[][]string{{upper}}, nil, []string{"rp2"}},
		{[][]string{{lower, upper}}, nil, []string{"rp1", "rp2"}},
		{[][]string{{"5f1000000000400080000000000000a1"}}, nil, []string{}},
		{nil, []string{upper}, []string{"rp1"}},
	} {
		got, err := s.ProvidersMatching(&ProviderFilter{Group: RequestGroup{MemberOf: tt.memberOf, ForbiddenAggregates: tt.forbidden}})
		if err != nil {
			t.Fatal(err)
		}
		if names := providerNames(got); !slices.Equal(names, tt.want) {
			t.Errorf("member_of %v, forbidden %v: got %v, want %v", tt.memberOf, tt.forbidden, names, tt.want)
		}
	}
}

// TestNewRecord checks that NewRecord copies a record and its
// inventories, whatever their number, without sharing them with the
// original.
func TestNewRecord(t *testing.T) {
	const uuid = "5f0c2a1e-0000-4000-8000-0000000000a1"
	for n := 0; n <= 6; n++ {
		for _, tc := range []struct {
			uuid             string
			traits, aggs     []int32
			boxedIDs, uuid36 bool
		}{
			{"u", []int32{1}, []int32{2}, true, false},
			{uuid, nil, []int32{2, 5, 9}, true, true},
			{uuid, []int32{1, 3}, []int32{2, 5, 9}, false, true}, // five ids: more than the box holds
		} {
			orig := &ProviderRecord{ID: 7, UUID: tc.uuid, Name: "cn", Generation: 3, Traits: tc.traits, Aggregates: tc.aggs}
			for c := range n {
				orig.Inventories = append(orig.Inventories, InventoryRecord{Class: int32(c), Total: int64(10 + c), Ratio: 1})
			}
			got := NewRecord(orig)
			if got == orig || got.ID != 7 || got.UUID != tc.uuid || got.Name != "cn" || got.Generation != 3 ||
				!slices.Equal(got.Traits, orig.Traits) || !slices.Equal(got.Aggregates, orig.Aggregates) ||
				(got.Traits == nil) != (orig.Traits == nil) {
				t.Fatalf("%d inventories: record not copied: %+v", n, got)
			}
			if len(got.Inventories) != n {
				t.Fatalf("%d inventories: copy has %d", n, len(got.Inventories))
			}
			for c := range n {
				if got.Inventories[c] != orig.Inventories[c] {
					t.Fatalf("%d inventories: inventory %d is %+v, want %+v", n, c, got.Inventories[c], orig.Inventories[c])
				}
				got.Inventories[c].Used = 99
				if orig.Inventories[c].Used != 0 {
					t.Fatalf("%d inventories: the copy shares the original's inventories", n)
				}
			}
			// Up to four inventories share the record's allocation, and
			// so do up to four trait and aggregate ids and a uuid.
			boxed := n > 0 && n <= 4
			if shared := &got.Aggregates[0] == &orig.Aggregates[0]; shared == (boxed && tc.boxedIDs) {
				t.Errorf("%d inventories, %d ids: aggregates shared with the original: %v", n, len(tc.traits)+len(tc.aggs), shared)
			}
			if inBox := unsafe.StringData(got.UUID) != unsafe.StringData(orig.UUID); inBox != (boxed && tc.uuid36) {
				t.Errorf("%d inventories, uuid %q: uuid in the record's allocation: %v", n, tc.uuid, inBox)
			}
			want := 1.0
			if n > 4 {
				want = 2
			}
			if allocs := testing.AllocsPerRun(10, func() { NewRecord(orig) }); n > 0 && allocs != want {
				t.Errorf("%d inventories: %v allocations, want %v", n, allocs, want)
			}
		}
	}
}
