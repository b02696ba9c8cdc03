package integration

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/ledger/ledgertest"
)

// TestReadsAcrossReplicasNeverStale is the measurement of issue 33 as a
// test: two berthd processes on one database; 600 times an inventory
// write through the first, then at once, through the second, the
// provider (GET /resource_providers/{uuid}), the provider list (GET
// /resource_providers?uuid=) and the allocation candidates (GET
// /allocation_candidates). A read is stale when it does not show the
// write's generation (or, for the candidates, its capacity). Not one may
// be: every read on a Placement route reflects every write answered
// before it began, on any replica (docs/architecture.md, "Reads across
// replicas"). It logs the counts.
//
// BERTH_STALE_URLS, two base URLs separated by a comma, runs it against
// berthd processes started elsewhere instead (scripts/stale-reads.sh
// does, to measure a build against another).
func TestReadsAcrossReplicasNeverStale(t *testing.T) {
	var a, b *berthd
	if urls := os.Getenv("BERTH_STALE_URLS"); urls != "" {
		u := strings.Split(urls, ",")
		if len(u) != 2 {
			t.Fatalf("BERTH_STALE_URLS=%q: want two URLs", urls)
		}
		a, b = remoteBerthd(u[0]), remoteBerthd(u[1])
	} else {
		bin, dbURL := buildBerthd(t), ledgertest.NewDB(t)
		var err error
		if a, err = tryStartBerthd(t, bin, dbURL); err != nil {
			t.Fatal(err)
		}
		if b, err = tryStartBerthd(t, bin, dbURL); err != nil {
			t.Fatal(err)
		}
	}
	rp := uuid.NewString()
	a.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": "stale-" + rp, "uuid": rp}, nil)
	// The reader has its snapshot before the writes start.
	b.must(t, 200, "GET", "/resource_providers?uuid="+rp, "", nil, nil)
	const writes = 600
	stale := map[string]int{}
	gen := int64(0)
	for i := range writes {
		total := int64(10 + i%100)
		var inv struct {
			Generation int64 `json:"resource_provider_generation"`
		}
		a.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "", map[string]any{
			"resource_provider_generation": gen, "inventories": map[string]any{"VCPU": map[string]any{"total": total}}}, &inv)
		gen = inv.Generation
		var one struct {
			Generation int64 `json:"generation"`
		}
		b.must(t, 200, "GET", "/resource_providers/"+rp, "", nil, &one)
		if one.Generation != gen {
			stale["GET /resource_providers/{uuid}"]++
		}
		var list struct {
			Providers []struct {
				Generation int64 `json:"generation"`
			} `json:"resource_providers"`
		}
		b.must(t, 200, "GET", "/resource_providers?uuid="+rp, "", nil, &list)
		if len(list.Providers) != 1 || list.Providers[0].Generation != gen {
			stale["GET /resource_providers?uuid="]++
		}
		var cands struct {
			Summaries map[string]struct {
				Resources map[string]struct {
					Capacity int64 `json:"capacity"`
				} `json:"resources"`
			} `json:"provider_summaries"`
		}
		b.must(t, 200, "GET", "/allocation_candidates?resources=VCPU:1&in_tree="+rp, "", nil, &cands)
		if cands.Summaries[rp].Resources["VCPU"].Capacity != total {
			stale["GET /allocation_candidates"]++
		}
	}
	for _, what := range []string{"GET /resource_providers/{uuid}", "GET /resource_providers?uuid=", "GET /allocation_candidates"} {
		t.Logf("%s: %d stale of %d", what, stale[what], writes)
		if stale[what] > 0 {
			t.Errorf("%s: %d reads of %d did not reflect the write answered before them", what, stale[what], writes)
		}
	}
}

// remoteBerthd is a berthd started elsewhere, at base URL u.
func remoteBerthd(u string) *berthd {
	u = strings.TrimSuffix(u, "/")
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	return &berthd{url: u, client: &http.Client{Timeout: requestTimeout}}
}
