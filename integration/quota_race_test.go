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

// TestQuotaRace sends, in three rounds, 240 POST /claims from 32 clients
// spread over two berthd processes on one database, for six projects of
// the round's own, two of each kind: "race" may hold 40 VCPU and every
// claim of it asks for 4, "race2" may hold 10 consumers and its claims
// ask for 1 to 3 VCPU, "free" has no limit (its claims ask for VCPU, or
// for memory only). The limits are set once the processes run, through
// one of them, so the other learns of them from the database. Each
// project also holds two instances placed before the round, of memory
// only (so that the projects' VCPU counters do not exist yet when the
// claims start, and are created while they race; the consumer limit
// leaves room for them), which are moved, their moves confirmed or
// reverted, and rescheduled while the claims run: at the limit, keeping
// their size, so every one of those passes. A limit that does not bind
// changes meanwhile. The cloud holds every claim: each refusal is the
// quota's.
//
// In each round, each limited project must end exactly at its limit, by
// its counters (GET /limits) and by its allocations (GET /usages): no
// claim beyond it, and as many as it holds. Every refusal must be 403
// berth.over_quota, and each refusal's detail, which gives the usage the
// writer saw under the counter's lock, must show the request did not fit
// then: every refusal was needed. At the end, both processes stopped,
// PostgreSQL must have counted no deadlock in the database: claims,
// refusals, moves and reschedules at the limit take their locks in one
// order.
func TestQuotaRace(t *testing.T) {
	const (
		providers = 5
		rounds    = 3
		sets      = 2 // of the three kinds of project, per round
		claimsN   = 240
		workers   = 32
		processes = 2
		vcpuLimit = 40
		size      = 4
		consumers = 10
		movers    = 2
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
	claimBody := func(consumer, project string, vcpu int) map[string]any {
		resources := map[string]int{"MEMORY_MB": 256}
		if vcpu > 0 {
			resources["VCPU"] = vcpu
		}
		return map[string]any{"consumer_uuid": consumer, "project_id": project, "user_id": "u", "consumer_type": "INSTANCE",
			"resources": resources}
	}
	// ok sends one request from a goroutine of the test, which must
	// succeed.
	ok := func(b *berthd, method, path string, body any) {
		if status, raw := b.call(t, method, path, "", body); status != 200 {
			t.Errorf("%s %s: %d %s", method, path, status, raw)
		}
	}
	const (
		race = iota
		race2
		free
		kinds
	)
	for round := range rounds {
		// projects[k] are the round's projects, set by set: race, race2,
		// free, race, ...
		var projects []string
		for s := range sets {
			projects = append(projects, fmt.Sprintf("race-%d-%d", round, s), fmt.Sprintf("race2-%d-%d", round, s), fmt.Sprintf("free-%d-%d", round, s))
		}
		raceLimits := func(memory int) map[string]any {
			return map[string]any{"limits": map[string]any{"VCPU": vcpuLimit, "MEMORY_MB": memory}}
		}
		for k, p := range projects {
			switch k % kinds {
			case race:
				ps[0].must(t, 200, "PUT", "/limits/"+p, "", raceLimits(1<<30), nil)
			case race2:
				ps[0].must(t, 200, "PUT", "/limits/"+p, "", map[string]any{"limits": map[string]any{"consumers": consumers + movers}}, nil)
			}
		}
		var moving []string
		for k, p := range projects {
			for m := range movers {
				consumer := fmt.Sprintf("c3000000-0000-4000-8%03d-%012d", round, k*movers+m+1)
				ps[1].must(t, 200, "POST", "/claims", "", claimBody(consumer, p, 0), nil)
				moving = append(moving, consumer)
			}
		}

		type outcome struct {
			project      string
			kind, vcpu   int
			status       int
			code, detail string
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
					k := i % len(projects)
					o.project, o.kind = projects[k], k%kinds
					switch o.kind {
					case race:
						o.vcpu = size
					case race2:
						o.vcpu = 1 + i/len(projects)%3
					case free:
						o.vcpu = 2 * (k / kinds % 2) // memory only in the first set
					}
					consumer := fmt.Sprintf("b3000000-0000-4000-8%03d-%012d", round, i+1)
					status, raw := ps[(i+w)%processes].call(t, "POST", "/claims", "", claimBody(consumer, o.project, o.vcpu))
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
		// The instances placed first move and are rescheduled, one
		// client each, on either process.
		for m, consumer := range moving {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for it := range 2 {
					b := ps[(m+it)%processes]
					mig := fmt.Sprintf("d3000000-0000-4000-8%03d-%06d%06d", round, m+1, it+1)
					ok(b, "POST", "/claims/"+consumer+"/move", map[string]any{"migration_uuid": mig})
					end := "/move/confirm"
					if (m+it)%2 == 1 {
						end = "/move/revert"
					}
					ok(ps[(m+it+1)%processes], "POST", "/claims/"+consumer+end, map[string]any{})
					ok(b, "POST", "/claims/"+consumer+"/reschedule", map[string]any{})
				}
			}()
		}
		// Limits that do not bind, changed meanwhile: the first race
		// project's memory, and the registered memory limit (the free
		// projects', and the race2 projects' memory).
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 6 {
				ok(ps[it%processes], "PUT", "/limits/"+projects[race], raceLimits(1<<30+it))
				registered := map[string]any{}
				if it%2 == 0 {
					registered["MEMORY_MB"] = 1 << 40
				}
				ok(ps[(it+1)%processes], "PUT", "/registered_limits", map[string]any{"limits": registered})
			}
		}()
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
			if o.status != 403 || o.code != "berth.over_quota" || o.kind == free {
				t.Errorf("round %d, claim %d (%s): %d %s %q", round, i, o.project, o.status, o.code, o.detail)
				continue
			}
			m := refusal.FindStringSubmatch(o.detail)
			if m == nil {
				t.Errorf("round %d, claim %d: refusal without the numbers: %q", round, i, o.detail)
				continue
			}
			n, _ := strconv.Atoi(m[2])
			used, _ := strconv.Atoi(m[3])
			limit, _ := strconv.Atoi(m[4])
			if used+n <= limit {
				t.Errorf("round %d, claim %d (%s) refused though it fit: %q", round, i, o.project, o.detail)
			}
		}
		// What a project's counters say (GET /limits), and what its
		// allocations hold, as Placement sums them (GET /usages).
		counted := func(project, resource string) int {
			var l struct {
				Resources map[string]struct {
					Used int `json:"used"`
				} `json:"resources"`
			}
			ps[round%processes].must(t, 200, "GET", "/limits/"+project, "", nil, &l)
			return l.Resources[resource].Used
		}
		held := func(project string) (vcpu, consumers int) {
			var u struct {
				Usages map[string]map[string]int `json:"usages"`
			}
			ps[(round+1)%processes].must(t, 200, "GET", "/usages?project_id="+project, "", nil, &u)
			for _, byClass := range u.Usages {
				vcpu, consumers = vcpu+byClass["VCPU"], consumers+byClass["consumer_count"]
			}
			return vcpu, consumers
		}
		for k, p := range projects {
			switch k % kinds {
			case race:
				vcpu, _ := held(p)
				if got := counted(p, "VCPU"); got != vcpuLimit || vcpu != vcpuLimit || placed[p] != vcpuLimit/size {
					t.Errorf("%s: %d claims placed, counting VCPU %d, holding %d; want %d claims, VCPU %d",
						p, placed[p], got, vcpu, vcpuLimit/size, vcpuLimit)
				}
			case race2:
				_, n := held(p)
				if got := counted(p, "consumers"); got != consumers+movers || n != consumers+movers || placed[p] != consumers {
					t.Errorf("%s: %d claims placed, counting %d consumers, holding %d; want %d claims, %d consumers",
						p, placed[p], got, n, consumers, consumers+movers)
				}
			case free:
				if want := claimsN / len(projects); placed[p] != want {
					t.Errorf("%s: %d claims placed of %d", p, placed[p], want)
				}
			}
		}
		refused := claimsN
		for _, n := range placed {
			refused -= n
		}
		t.Logf("round %d: %d claims through %d berthd: placed %v, %d refused over quota", round, claimsN, processes, placed, refused)
		if t.Failed() {
			return
		}
	}
	for _, b := range ps {
		b.stop()
	}
	if n := ledgertest.Deadlocks(t, dbURL); n != 0 {
		t.Errorf("PostgreSQL counted %d deadlocks in the database", n)
	}
}
