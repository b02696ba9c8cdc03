package engine

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// TestDeferredRequestsAsBuilt asks the same candidates with and without
// DeferRequests and requires the deferred answer to say what every
// candidate takes (AllocationCount, AllocationResources) as the built
// requests do before anything is built, to build exactly the requests
// asked for, as the eager answer holds them, and to leave the others
// unbuilt. The cases hold a provider several slots take from (their
// amounts summed), sharing providers, trees, granular groups and a
// group that takes nothing.
func TestDeferredRequestsAsBuilt(t *testing.T) {
	g := reqGroup
	tests := []struct {
		name   string
		snap   *Snapshot
		groups []RequestGroup
	}{
		{"sharing", sharedStorage(), []RequestGroup{g("", "VCPU:1,MEMORY_MB:1024,DISK_GB:100")}},
		{"nested", sharedStorage(), []RequestGroup{g("", "VCPU:1,SRIOV_NET_VF:4")}},
		{"granular on one provider", granular(), []RequestGroup{g("", "VCPU:1"), g("1", "VCPU:2,MEMORY_MB:512"), g("2", "MEMORY_MB:256,VCPU:1")}},
		{"granular sharing", granular(), []RequestGroup{g("1", "VCPU:1,DISK_GB:10"), g("2", "DISK_GB:20")}},
		{"numa", numaNetwork(), []RequestGroup{g("", "DISK_GB:10"), g("1", "VCPU:1,MEMORY_MB:512"), g("2", "VCPU:1")}},
		{"flat", cloud(300), []RequestGroup{g("", "VCPU:2,MEMORY_MB:4096,DISK_GB:20")}},
		{"resourceless group", granular(), []RequestGroup{g("1", "VCPU:1"), {Suffix: "2", RequiredTraits: [][]string{{"CUSTOM_DISK_SSD", "HW_CPU_X86_AVX"}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, got := eagerAndDeferred(t, tc.snap, tc.groups)
			n := len(want.Requests)
			if n < 2 || got.Len() != n || got.Requests != nil {
				t.Fatalf("%d candidates deferred (Requests %d), %d built; want the same, at least 2, Requests nil", got.Len(), len(got.Requests), n)
			}
			if !reflect.DeepEqual(got.Versions, want.Versions) {
				t.Fatalf("versions differ")
			}
			same := func(when string) {
				for i := range n {
					wa := want.Requests[i].Allocations
					if c := got.AllocationCount(i); c != len(wa) {
						t.Fatalf("%s: candidate %d: %d allocations, want %d", when, i, c, len(wa))
					}
					for j := range wa {
						if r := got.AllocationResources(i, j, nil); !reflect.DeepEqual(r, wa[j].Resources) {
							t.Fatalf("%s: candidate %d, allocation %d: %v, want %v", when, i, j, r, wa[j].Resources)
						}
						if got.AllocationRecord(i, j) != want.AllocationRecord(i, j) {
							t.Fatalf("%s: candidate %d, allocation %d: another record", when, i, j)
						}
					}
				}
			}
			same("none built")
			for i := range n {
				if !reflect.DeepEqual(got.Request(i), AllocationRequest{}) {
					t.Fatalf("candidate %d built before BuildRequests: %+v", i, got.Request(i))
				}
			}
			asked := []int{n - 1, 0, n - 1}
			got.BuildRequests(asked)
			for i := range n {
				built := i == 0 || i == n-1
				if built && !reflect.DeepEqual(got.Request(i), want.Requests[i]) {
					t.Fatalf("candidate %d built as %s, want %s", i, describe(got.Request(i)), describe(want.Requests[i]))
				}
				if !built && !reflect.DeepEqual(got.Request(i), AllocationRequest{}) {
					t.Fatalf("candidate %d built, not asked for", i)
				}
			}
			same("some built")
			got.BuildAllRequests()
			if !reflect.DeepEqual(got.Requests, want.Requests) {
				t.Fatalf("all built differ from the eager answer's")
			}
			same("all built")
		})
	}
}

func describe(ar AllocationRequest) string { return fmt.Sprintf("%+v", ar) }

// TestSharedResourcesAsAllocations: when a deferred answer says every
// candidate takes the same (SharedResources), every candidate's request,
// built or not, has one allocation taking exactly that; a flat cloud's
// sample says so, and an answer whose candidates take different amounts
// does not.
func TestSharedResourcesAsAllocations(t *testing.T) {
	g := reqGroup
	tests := []struct {
		name   string
		snap   *Snapshot
		groups []RequestGroup
		shared bool // whether SharedResources must be set
	}{
		{"flat", cloud(300), []RequestGroup{g("", "VCPU:2,MEMORY_MB:4096,DISK_GB:20")}, true},
		{"flat, two groups", cloud(300), []RequestGroup{g("", "VCPU:2,MEMORY_MB:4096"), g("1", "DISK_GB:20,VCPU:1")}, false},
		{"sharing", sharedStorage(), []RequestGroup{g("", "VCPU:1,MEMORY_MB:1024,DISK_GB:100")}, false},
		{"granular on one provider", granular(), []RequestGroup{g("", "VCPU:1"), g("1", "VCPU:2,MEMORY_MB:512"), g("2", "MEMORY_MB:256,VCPU:1")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, got := eagerAndDeferred(t, tc.snap, tc.groups)
			if shared := want.SharedResources(); shared != nil {
				t.Fatalf("an answer not deferred says every candidate takes %v", shared)
			}
			shared := got.SharedResources()
			if tc.shared && shared == nil {
				t.Fatalf("no shared resources")
			}
			if shared == nil {
				return
			}
			got.BuildRequests([]int{0})
			for i := range want.Requests {
				wa := want.Requests[i].Allocations
				if len(wa) != 1 || got.AllocationCount(i) != 1 || !reflect.DeepEqual(wa[0].Resources, shared) ||
					!reflect.DeepEqual(got.AllocationResources(i, 0, nil), shared) {
					t.Fatalf("candidate %d takes %+v (%d allocations deferred); shared %v", i, wa, got.AllocationCount(i), shared)
				}
			}
		})
	}
}

// eagerAndDeferred asks snap for the candidates of groups twice, as a
// claim's sample asks (VersionsOnly): with every request built, and with
// them deferred (DeferRequests).
func eagerAndDeferred(t *testing.T, snap *Snapshot, groups []RequestGroup) (eager, deferred *Candidates) {
	t.Helper()
	ctx := context.Background()
	p := CandidatesParams{NestedAware: true, Max: 50, VersionsOnly: true, Groups: groups}
	eager, err := snap.Candidates(ctx, &p)
	if err != nil {
		t.Fatal(err)
	}
	p.DeferRequests = true
	if deferred, err = snap.Candidates(ctx, &p); err != nil {
		t.Fatal(err)
	}
	return eager, deferred
}
