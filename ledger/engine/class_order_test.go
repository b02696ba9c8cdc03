package engine

import (
	"slices"
	"testing"
)

// The classes of a candidate come in the order Placement lists them: as
// the request named them while every class must come from one provider
// (no tree and no sharing provider in the cloud), by class id once
// Placement takes its multi-provider path.
func TestCandidateClassOrder(t *testing.T) {
	classes := func(s *Snapshot) []string {
		c := mustCandidates(t, s, CandidatesParams{NestedAware: true, Groups: []RequestGroup{{Resources: res("DISK_GB:1,VCPU:1,MEMORY_MB:1")}}})
		if len(c.Requests) != 1 || len(c.Requests[0].Allocations) != 1 {
			t.Fatalf("candidates %v", render(c))
		}
		var out []string
		for _, r := range c.Requests[0].Allocations[0].Resources {
			out = append(out, r.Class)
		}
		return out
	}
	flat := newSnapBuilder().rp("cn", "").inv("cn", "VCPU", 8).inv("cn", "MEMORY_MB", 1024).inv("cn", "DISK_GB", 10)
	if got, want := classes(flat.build()), []string{"DISK_GB", "VCPU", "MEMORY_MB"}; !slices.Equal(got, want) {
		t.Errorf("flat cloud: %v, want the request's order %v", got, want)
	}
	nested := newSnapBuilder().rp("cn", "").inv("cn", "VCPU", 8).inv("cn", "MEMORY_MB", 1024).inv("cn", "DISK_GB", 10).rp("child", "cn")
	if got, want := classes(nested.build()), []string{"VCPU", "MEMORY_MB", "DISK_GB"}; !slices.Equal(got, want) {
		t.Errorf("cloud with a tree: %v, want class id order %v", got, want)
	}
	sharing := newSnapBuilder().rp("cn", "").inv("cn", "VCPU", 8).inv("cn", "MEMORY_MB", 1024).inv("cn", "DISK_GB", 10).
		rp("nfs", "").traits("nfs", "MISC_SHARES_VIA_AGGREGATE")
	if got, want := classes(sharing.build()), []string{"VCPU", "MEMORY_MB", "DISK_GB"}; !slices.Equal(got, want) {
		t.Errorf("cloud with a sharing provider: %v, want class id order %v", got, want)
	}
}

// The uuid= and in_tree= filters compare uuids as written, as Placement
// does: another spelling of a provider's uuid matches nothing.
func TestProviderFiltersTakeUUIDsAsWritten(t *testing.T) {
	const id = "5a000000-0000-4000-8000-000000000001"
	s := newSnapBuilder().rp(id, "").build()
	for _, f := range []ProviderFilter{{UUID: id}, {InTree: id}} {
		if got, err := s.ProvidersMatching(&f); err != nil || len(got) != 1 {
			t.Errorf("%+v: %d providers, %v", f, len(got), err)
		}
	}
	for _, other := range []string{"5A000000-0000-4000-8000-000000000001", "5a000000000040008000000000000001"} {
		for _, f := range []ProviderFilter{{UUID: other}, {InTree: other}} {
			if got, err := s.ProvidersMatching(&f); err != nil || len(got) != 0 {
				t.Errorf("%+v: %d providers, %v; want none", f, len(got), err)
			}
		}
	}
}
