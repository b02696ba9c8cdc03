package integration

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/berthd/berth/ledger/ledgertest"
)

// TestClaimsRace sends 300 POST /claims from 48 goroutines, spread over
// three berthd processes on one database, for a handful of providers
// that can take about a third of them. Every claim must be answered 200
// or 409 berth.no_valid_host. Afterwards every provider's usage equals
// the sum of the successful claims on it and is within its capacity,
// every successful claim holds exactly what its answer said, and every
// refused claim (and every dry run) left nothing behind.
func TestClaimsRace(t *testing.T) {
	const (
		providers = 5
		vcpu      = 24
		memory    = 48 * 1024
		claimsN   = 300
		workers   = 48
		processes = 3
	)
	bin := buildBerthd(t)
	dbURL := ledgertest.NewDB(t)
	var ps []*berthd
	for range processes {
		b, err := tryStartBerthd(t, bin, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, b)
	}
	rps := make([]string, providers)
	for i := range rps {
		rps[i] = fmt.Sprintf("a1000000-0000-4000-8000-%012d", i+1)
		b := ps[i%processes]
		b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": fmt.Sprintf("race%d", i), "uuid": rps[i]}, nil)
		b.must(t, 200, "PUT", "/resource_providers/"+rps[i]+"/inventories", "", map[string]any{
			"resource_provider_generation": 0,
			"inventories": map[string]any{
				"VCPU":      map[string]any{"total": vcpu},
				"MEMORY_MB": map[string]any{"total": memory},
			},
		}, nil)
	}

	type claimAnswer struct {
		ConsumerGeneration int                                           `json:"consumer_generation"`
		Allocations        map[string]struct{ Resources map[string]int } `json:"allocations"`
		RootProviderUUID   string                                        `json:"root_provider_uuid"`
		Attempts           int                                           `json:"attempts"`
		DryRun             bool                                          `json:"dry_run"`
	}
	type outcome struct {
		consumer string
		dryRun   bool
		status   int
		answer   claimAnswer
		code     string
	}
	outcomes := make([]outcome, claimsN)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := &outcomes[i]
				o.consumer = fmt.Sprintf("b2000000-0000-4000-8000-%012d", i+1)
				o.dryRun = i%10 == 9
				body := map[string]any{
					"consumer_uuid": o.consumer, "project_id": fmt.Sprintf("tenant-%d", i%7), "user_id": "u",
					"name": fmt.Sprintf("vm-%d", i), "consumer_type": "INSTANCE",
					"resources": map[string]int{"VCPU": 1 + i%3, "MEMORY_MB": 1024 * (1 + i%4)},
					"dry_run":   o.dryRun,
				}
				b := ps[(i+w)%processes]
				status, raw := b.call(t, "POST", "/claims", "", body)
				o.status = status
				switch status {
				case 200:
					if err := json.Unmarshal(raw, &o.answer); err != nil {
						t.Errorf("claim %d: %v: %s", i, err, raw)
					}
				case 409:
					var e struct {
						Errors []struct{ Code string } `json:"errors"`
					}
					if err := json.Unmarshal(raw, &e); err != nil || len(e.Errors) != 1 {
						t.Errorf("claim %d: 409 body %s", i, raw)
						continue
					}
					o.code = e.Errors[0].Code
					// berth.claim_conflict: every write tried lost to
					// concurrent claims (possible on this crowded cloud).
					if o.code != "berth.no_valid_host" && o.code != "berth.claim_conflict" {
						t.Errorf("claim %d: 409 %s", i, raw)
					}
				default:
					t.Errorf("claim %d: %d %s", i, status, raw)
				}
			}
		}()
	}
	for i := range claimsN {
		next <- i
	}
	close(next)
	wg.Wait()

	// What the successful claims say they took, per provider and class.
	want := map[string]map[string]int{}
	placed, refused, dry, retried := 0, 0, 0, 0
	for i, o := range outcomes {
		var got struct {
			Allocations map[string]struct{ Resources map[string]int } `json:"allocations"`
		}
		ps[i%processes].must(t, 200, "GET", "/allocations/"+o.consumer, "", nil, &got)
		switch {
		case o.status == 200 && o.dryRun:
			dry++
			if !o.answer.DryRun || o.answer.Attempts != 0 || len(got.Allocations) != 0 {
				t.Errorf("dry run %d: answer %+v, ledger holds %v", i, o.answer, got.Allocations)
			}
		case o.status == 200:
			placed++
			if o.answer.Attempts > 1 {
				retried++
			}
			if len(got.Allocations) != len(o.answer.Allocations) {
				t.Errorf("claim %d: answered %v, ledger holds %v", i, o.answer.Allocations, got.Allocations)
			}
			for rp, a := range o.answer.Allocations {
				if want[rp] == nil {
					want[rp] = map[string]int{}
				}
				for class, n := range a.Resources {
					want[rp][class] += n
					if got.Allocations[rp].Resources[class] != n {
						t.Errorf("claim %d: answered %s %s %d, ledger holds %v", i, rp, class, n, got.Allocations)
					}
				}
			}
		default:
			refused++
			if len(got.Allocations) != 0 {
				t.Errorf("refused claim %d left %v", i, got.Allocations)
			}
		}
	}
	for _, rp := range rps {
		var u struct {
			Usages map[string]int `json:"usages"`
		}
		ps[0].must(t, 200, "GET", "/resource_providers/"+rp+"/usages", "", nil, &u)
		if u.Usages["VCPU"] > vcpu || u.Usages["MEMORY_MB"] > memory {
			t.Errorf("provider %s over capacity: %v", rp, u.Usages)
		}
		for _, class := range []string{"VCPU", "MEMORY_MB"} {
			if u.Usages[class] != want[rp][class] {
				t.Errorf("provider %s %s: usage %d, successful claims sum to %d", rp, class, u.Usages[class], want[rp][class])
			}
		}
	}
	if placed == 0 || refused == 0 {
		t.Errorf("%d placed, %d refused: the test wants both", placed, refused)
	}
	t.Logf("%d claims through %d berthd: %d placed (%d after a lost race), %d refused (no valid host), %d dry runs",
		claimsN, processes, placed, retried, refused, dry)
}
