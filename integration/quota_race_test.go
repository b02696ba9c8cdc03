package integration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/berthd/berth/ledger/ledgertest"
)

// TestQuotaRace sends 300 POST /claims from 48 goroutines, spread over
// three berthd processes on one database, for two projects with limits
// set once the processes run (so two of them learn of limits from the
// database, not from their own API): "race" may hold 120 VCPU and every
// claim of it asks for 4, "race2" may hold 20 consumers and its claims
// ask for 1 to 3 VCPU. The cloud holds every claim: each refusal is the
// quota's. Each project must end exactly at its limit (no claim beyond
// it, and as many as it holds), every refusal must be 403
// berth.over_quota, and each refusal's detail, which gives the usage the
// writer saw under the counter's lock, must show the request did not fit
// then: every refusal was needed.
func TestQuotaRace(t *testing.T) {
	const (
		providers = 5
		claimsN   = 300
		workers   = 48
		processes = 3
		vcpuLimit = 120
		size      = 4
		consumers = 20
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
	for i := range providers {
		rp := fmt.Sprintf("a3000000-0000-4000-8000-%012d", i+1)
		b := ps[i%processes]
		b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": fmt.Sprintf("quota%d", i), "uuid": rp}, nil)
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "", map[string]any{
			"resource_provider_generation": 0,
			"inventories":                  map[string]any{"VCPU": map[string]any{"total": 1000}, "MEMORY_MB": map[string]any{"total": 1 << 20}},
		}, nil)
	}
	ps[0].must(t, 200, "PUT", "/limits/race", "", map[string]any{"limits": map[string]any{"VCPU": vcpuLimit}}, nil)
	ps[0].must(t, 200, "PUT", "/limits/race2", "", map[string]any{"limits": map[string]any{"consumers": consumers}}, nil)

	type outcome struct {
		project string
		vcpu    int
		status  int
		code    string
		detail  string
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
				o.project, o.vcpu = "race", size
				if i%2 == 1 {
					o.project, o.vcpu = "race2", 1+i%3
				}
				body := map[string]any{
					"consumer_uuid": fmt.Sprintf("b3000000-0000-4000-8000-%012d", i+1), "project_id": o.project,
					"user_id": "u", "consumer_type": "INSTANCE", "resources": map[string]int{"VCPU": o.vcpu, "MEMORY_MB": 256},
				}
				status, raw := ps[(i+w)%processes].call(t, "POST", "/claims", "", body)
				o.status = status
				if status == 200 {
					continue
				}
				var e struct {
					Errors []struct{ Code, Detail string } `json:"errors"`
				}
				if err := json.Unmarshal(raw, &e); err != nil || len(e.Errors) != 1 {
					t.Errorf("claim %d: %d %s", i, status, raw)
					continue
				}
				o.code, o.detail = e.Errors[0].Code, e.Errors[0].Detail
			}
		}()
	}
	for i := range claimsN {
		next <- i
	}
	close(next)
	wg.Wait()

	// Every refusal: "<resource> <n> requested, <used> of <limit> used",
	// with used + n > limit.
	refusal := regexp.MustCompile(`(VCPU|consumers) (\d+) requested, (\d+) of (\d+) used`)
	placed := map[string]int{}
	for i, o := range outcomes {
		if o.status == 200 {
			placed[o.project]++
			continue
		}
		if o.status != 403 || o.code != "berth.over_quota" {
			t.Errorf("claim %d (%s): %d %s %q", i, o.project, o.status, o.code, o.detail)
			continue
		}
		m := refusal.FindStringSubmatch(o.detail)
		if m == nil {
			t.Errorf("claim %d: refusal without the numbers: %q", i, o.detail)
			continue
		}
		n, _ := strconv.Atoi(m[2])
		used, _ := strconv.Atoi(m[3])
		limit, _ := strconv.Atoi(m[4])
		if used+n <= limit {
			t.Errorf("claim %d (%s) refused though it fit: %q", i, o.project, o.detail)
		}
	}
	var race, race2 struct {
		Resources map[string]struct {
			Used int `json:"used"`
		} `json:"resources"`
	}
	ps[1].must(t, 200, "GET", "/limits/race", "", nil, &race)
	ps[2].must(t, 200, "GET", "/limits/race2", "", nil, &race2)
	if got := race.Resources["VCPU"].Used; got != vcpuLimit || placed["race"] != vcpuLimit/size {
		t.Errorf("race: %d claims placed, holding VCPU %d; want %d claims, VCPU %d", placed["race"], got, vcpuLimit/size, vcpuLimit)
	}
	if got := race2.Resources["consumers"].Used; got != consumers || placed["race2"] != consumers {
		t.Errorf("race2: %d claims placed, holding %d consumers; want %d", placed["race2"], got, consumers)
	}
	t.Logf("%d claims through %d berthd: race %d placed, race2 %d placed, %d refused over quota",
		claimsN, processes, placed["race"], placed["race2"], claimsN-placed["race"]-placed["race2"])
}
