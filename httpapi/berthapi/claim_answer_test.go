package berthapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/ledger/engine"
)

// TestAllocationsAnswerAsMap: a claim's allocations, appended, are the
// bytes their map (allocationsJSON) marshals to, with HTML escaping on
// and off, for random allocations: several providers and classes, in any
// order, a provider or a class given twice, none.
func TestAllocationsAnswerAsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 2))
	uuids := []string{"b1c0ffee-0000-4000-8000-000000000001", "a1c0ffee-0000-4000-8000-000000000002",
		"c1c0ffee-0000-4000-8000-000000000003", "<&>", "é"}
	classes := []string{"VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_Z", "SRIOV_NET_VF", "A<B"}
	cases := [][]engine.Allocation{nil, {}}
	for range 500 {
		allocs := make([]engine.Allocation, rng.IntN(4))
		for i := range allocs {
			allocs[i].ProviderUUID = uuids[rng.IntN(len(uuids))]
			allocs[i].Resources = make([]engine.ResourceAmount, rng.IntN(4))
			for j := range allocs[i].Resources {
				allocs[i].Resources[j] = engine.ResourceAmount{Class: classes[rng.IntN(len(classes))], Amount: rng.Int64N(1 << 40)}
			}
		}
		cases = append(cases, allocs)
	}
	for i, allocs := range cases {
		for _, html := range []bool{false, true} {
			got, want := encode(t, allocationsAnswer(allocs), html), encode(t, allocationsJSON(allocs), html)
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d (html %v): %s\nwant %s", i, html, got, want)
			}
		}
	}
}

func encode(t *testing.T, v any, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkClaimAnswer is a claim's answer built and encoded: one
// provider of three classes, two alternates, the steps of the default
// policy.
func BenchmarkClaimAnswer(b *testing.B) {
	alloc := func(i int) []engine.Allocation {
		return []engine.Allocation{{ProviderUUID: fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i), Resources: []engine.ResourceAmount{
			{Class: "VCPU", Amount: 4}, {Class: "MEMORY_MB", Amount: 16384}, {Class: "DISK_GB", Amount: 100}}}}
	}
	r := &claims.Result{ConsumerUUID: "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", ConsumerGeneration: 1, Allocations: alloc(1),
		Mappings: map[string][]string{"": {"c0ffee00-0000-4000-8000-000000000001"}}, Root: "c0ffee00-0000-4000-8000-000000000001",
		RootName: "cn1", Score: 0.5, Attempts: 1,
		Alternates: []claims.Option{{Root: "r2", RootName: "cn2", Score: 0.4, Allocations: alloc(2)},
			{Root: "r3", RootName: "cn3", Score: 0.3, Allocations: alloc(3)}},
		Steps: []claims.Step{{Unit: "candidates", Kind: "filter", Remaining: 100}, {Unit: "capacity", Kind: "filter", Remaining: 100},
			{Unit: "spread", Kind: "weigher", Remaining: 100}}}
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(claimResponse(r)); err != nil {
			b.Fatal(err)
		}
	}
}
