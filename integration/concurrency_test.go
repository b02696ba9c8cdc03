package integration

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
)

// TestConcurrentClaims has 32 schedulers claim, over HTTP against the
// berthd binary, room for one instance each on a few small providers, the
// way Nova's conductor does: ask for candidates, PUT the allocations of one
// for a new consumer, and on 409 ask again. The providers fit 8 instances.
// In the end exactly 8 claims were accepted, every provider's usage is
// the sum of the claims it accepted and within its capacity, and no
// refused claim left a consumer or an allocation behind.
func TestConcurrentClaims(t *testing.T) {
	const (
		providers  = 4
		claimers   = 32
		vcpu       = 3 // per instance; 8 VCPU per provider fit 2
		memory     = 1024
		fits       = providers * 2
		maxRetries = 100 // a claim is retried at most once per rival's success; this bound only catches livelock
	)
	b := startBerthd(t)
	rps := make([]string, providers)
	for i := range rps {
		rps[i] = fmt.Sprintf("d0000000-0000-4000-8000-%012d", i+1)
		b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": fmt.Sprintf("node%d", i), "uuid": rps[i]}, nil)
		b.must(t, 200, "PUT", "/resource_providers/"+rps[i]+"/inventories", "", map[string]any{
			"resource_provider_generation": 0,
			"inventories": map[string]any{
				"VCPU":      map[string]any{"total": 8},
				"MEMORY_MB": map[string]any{"total": 8192},
			},
		}, nil)
	}

	type outcome struct {
		consumer, project string
		provider          string // "" if refused
		conflicts         int
	}
	outcomes := make([]outcome, claimers)
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outcomes[i]
			o.consumer = fmt.Sprintf("e0000000-0000-4000-8000-%012d", i+1)
			o.project = fmt.Sprintf("tenant-%d", i)
			for attempt := 0; attempt < maxRetries; attempt++ {
				// Not b.must: t.Fatal is for the test's goroutine only.
				var cands candidatesDoc
				status, body := b.call(t, "GET", fmt.Sprintf("/allocation_candidates?resources=VCPU:%d,MEMORY_MB:%d", vcpu, memory), "", nil)
				if err := json.Unmarshal(body, &cands); status != 200 || err != nil {
					t.Errorf("claim %d: candidates: %d %s", i, status, body)
					return
				}
				if len(cands.AllocationRequests) == 0 {
					return // the cloud is full
				}
				// Spread the schedulers over the candidates, so that
				// they race on every provider, not only the first.
				pick := cands.request((i + attempt) % len(cands.AllocationRequests))
				status, body = b.call(t, "PUT", "/allocations/"+o.consumer, "",
					allocationsBody(pick, o.project, "user", nil, "INSTANCE"))
				switch status {
				case 204:
					for rp := range pick {
						o.provider = rp
					}
					return
				case 409:
					o.conflicts++
				default:
					t.Errorf("claim %d: %d %s", i, status, body)
					return
				}
			}
			t.Errorf("claim %d: still refused after %d attempts while candidates remain", i, maxRetries)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	accepted := map[string]int64{} // provider -> instances
	total, conflicts := 0, 0
	for _, o := range outcomes {
		conflicts += o.conflicts
		var byType struct {
			Usages map[string]map[string]int64 `json:"usages"`
		}
		b.must(t, 200, "GET", "/usages?project_id="+o.project, "", nil, &byType)
		allocs := b.allocations(t, o.consumer)
		if o.provider == "" {
			// Refused: nothing of it may remain.
			if len(allocs.Allocations) != 0 || len(byType.Usages) != 0 {
				t.Errorf("refused consumer %s left allocations %v, usages %v", o.consumer, allocs.Allocations, byType.Usages)
			}
			continue
		}
		total++
		accepted[o.provider]++
		want := map[string]resources{o.provider: {"VCPU": vcpu, "MEMORY_MB": memory}}
		if got := allocs.byProvider(); !maps.EqualFunc(got, want, maps.Equal) {
			t.Errorf("consumer %s holds %v, want %v", o.consumer, got, want)
		}
		if w := map[string]int64{"consumer_count": 1, "VCPU": vcpu, "MEMORY_MB": memory}; !maps.Equal(byType.Usages["INSTANCE"], w) {
			t.Errorf("usages of %s: %v, want INSTANCE %v", o.project, byType.Usages, w)
		}
	}
	t.Logf("%d claims accepted, %d refused, %d conflicts retried", total, claimers-total, conflicts)
	if total != fits {
		t.Errorf("%d claims accepted, want %d (the providers' room)", total, fits)
	}
	for _, rp := range rps {
		used := b.usages(t, rp)
		want := resources{"VCPU": accepted[rp] * vcpu, "MEMORY_MB": accepted[rp] * memory}
		if !maps.Equal(used, want) {
			t.Errorf("provider %s uses %v; the claims it accepted sum to %v", rp, used, want)
		}
		if used["VCPU"] > 8 || used["MEMORY_MB"] > 8192 {
			t.Errorf("provider %s is overcommitted: %v", rp, used)
		}
	}
	// Full: no candidate is left for another instance.
	var cands candidatesDoc
	b.must(t, 200, "GET", fmt.Sprintf("/allocation_candidates?resources=VCPU:%d,MEMORY_MB:%d", vcpu, memory), "", nil, &cands)
	if len(cands.AllocationRequests) != 0 {
		t.Errorf("%d candidates left after the cloud filled up", len(cands.AllocationRequests))
	}
}
