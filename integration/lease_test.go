package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
)

// leaseGrace bounds, beyond the reaper's interval, how long a lease that
// ran out may keep its allocations: a pass's own time and the scheduling
// of a loaded machine, a bound only a broken reaper reaches (nothing here
// asserts on how fast anything is).
const leaseGrace = 15 * time.Second

// TestLeasesExpireAcrossProcesses: claims with one- and two-second
// leases through three berthd processes on one database, whose reapers
// run every 200 ms; meanwhile other clients confirm some claims (PATCH),
// write others through the Placement API (PUT /allocations, as a compute
// agent), renew others, and one berthd is killed with SIGKILL while
// leases expire. Afterwards: nothing confirmed was released, nothing
// provisional is left, no lease outlived its expiry by more than the
// reaper's interval plus leaseGrace (watched throughout), usage is
// exactly what the survivors hold and within capacity, and every release
// was logged, once, naming the consumer, and counted on /metrics.
func TestLeasesExpireAcrossProcesses(t *testing.T) {
	const (
		providers = 4
		vcpu      = 32
		claimsN   = 160
		workers   = 16
		interval  = 200 * time.Millisecond
	)
	bin := buildBerthd(t)
	dbURL := ledgertest.NewDB(t)
	var ps []*berthd
	for range 3 {
		b, err := tryStartBerthd(t, bin, dbURL, "--claim-lease-interval", interval.String(), "--log-level", "info")
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, b)
	}
	store, err := ledger.Open(context.Background(), ledger.Config{DatabaseURL: dbURL, MaxConns: 2, SnapshotRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rps := make([]string, providers)
	for i := range rps {
		rps[i] = fmt.Sprintf("a1000000-0000-4000-8000-%012d", i+1)
		ps[0].must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": fmt.Sprintf("lease%d", i), "uuid": rps[i]}, nil)
		ps[0].must(t, 200, "PUT", "/resource_providers/"+rps[i]+"/inventories", "", map[string]any{
			"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": vcpu}}}, nil)
	}

	// The watcher: no lease may stay expired for longer than the bound.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watching sync.WaitGroup
	var overdue atomic.Int64
	watching.Add(1)
	go func() {
		defer watching.Done()
		for watchCtx.Err() == nil {
			expired, err := store.Claims.ClaimLeasesExpired(watchCtx, 10000)
			if err == nil {
				for _, st := range expired {
					if late := time.Since(*st.LeaseExpiresAt); late > interval+leaseGrace {
						overdue.Add(1)
						t.Errorf("consumer %s: lease ran out %v ago and is still %s", st.ConsumerUUID, late, st.State)
					}
				}
			}
			select {
			case <-watchCtx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()

	var dead atomic.Int32 // 1 once ps[0] is killed
	live := func(i int) *berthd {
		if dead.Load() == 1 {
			return ps[1+i%2]
		}
		return ps[i%3]
	}
	type outcome struct {
		consumer string
		placed   bool
		kept     bool // must keep its allocations: confirmed, or written through the Placement API
		how      string
	}
	out := make([]outcome, claimsN)
	round := func(from, to int) {
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					leaseClient(t, live, i, &out[i].consumer, &out[i].placed, &out[i].kept, &out[i].how)
				}
			}()
		}
		for i := from; i < to; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	round(0, claimsN/3)
	// Kill one berthd while the first round's leases expire: its reaper
	// may hold the lock, or be half way through a release. (Between
	// rounds, so that no client is talking to it.)
	if err := ps[0].proc.Kill(); err != nil {
		t.Fatal(err)
	}
	<-ps[0].exited
	dead.Store(1)
	round(claimsN/3, claimsN)

	// Every lease is at most 2 s long (renewals included): wait until no
	// claim is provisional any more.
	deadline := time.Now().Add(2*time.Second + interval + leaseGrace)
	for {
		left := 0
		for _, o := range out {
			if st, err := store.Claims.ClaimStateGet(context.Background(), o.consumer); err != nil {
				t.Fatal(err)
			} else if st != nil && st.State == claimrecords.ClaimProvisional {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d claims still provisional after every lease plus the reaper's interval and %v", left, leaseGrace)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopWatch()
	watching.Wait()

	held := map[string]int64{}
	released := map[string]bool{}
	counts := map[string]int{}
	for i, o := range out {
		if !o.placed {
			continue
		}
		counts[o.how]++
		got, err := store.Allocations.AllocationsByConsumer(context.Background(), o.consumer)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case o.kept && len(got.Allocations) == 0:
			t.Errorf("claim %d (%s) was confirmed and was released", i, o.how)
		case !o.kept && got.Consumer != nil:
			t.Errorf("claim %d (%s) was never confirmed and still holds %+v", i, o.how, got.Allocations)
		case !o.kept:
			released[o.consumer] = true
		}
		for _, a := range got.Allocations {
			held[a.ProviderUUID] += a.Used
		}
	}
	for _, rp := range rps {
		u, err := store.Providers.ProviderUsagesGet(context.Background(), rp)
		if err != nil {
			t.Fatal(err)
		}
		if u.Usages["VCPU"] != held[rp] || u.Usages["VCPU"] > vcpu {
			t.Errorf("provider %s: usage %d, held %d, capacity %d", rp, u.Usages["VCPU"], held[rp], vcpu)
		}
	}
	t.Logf("claims placed and how they ended: %v; %d released", counts, len(released))
	if len(released) == 0 || counts["confirmed"] == 0 || counts["written"] == 0 {
		t.Fatalf("the race was not run: %v", counts)
	}
	checkReleaseLogs(t, ps, released)
	var expiredTotal float64
	for _, b := range ps[1:] {
		expiredTotal += metricSum(t, b, "berth_claim_leases_expired_total")
	}
	if expiredTotal == 0 {
		t.Error("berth_claim_leases_expired_total is 0 on both surviving berthd")
	}
}

// leaseClient places claim i with a lease through a live berthd and then
// treats it by i: confirmed (PATCH), written through the Placement API,
// renewed, or left to run out. It records the consumer, whether the claim
// was placed, and whether it must be kept.
func leaseClient(t *testing.T, live func(int) *berthd, i int, consumer *string, placed, kept *bool, how *string) {
	*consumer = fmt.Sprintf("c3000000-0000-4000-8000-%012d", i+1)
	lease := 1 + i%2
	body := map[string]any{"consumer_uuid": *consumer, "project_id": "p", "user_id": "u", "consumer_type": "INSTANCE",
		"resources": map[string]int{"VCPU": 1 + i%2}, "lease_seconds": lease}
	var ans struct {
		ConsumerGeneration int `json:"consumer_generation"`
		Allocations        map[string]struct {
			Resources map[string]int `json:"resources"`
		} `json:"allocations"`
	}
	status, raw := live(i).call(t, "POST", "/claims", "", body)
	switch {
	case status == 409:
		return // nothing fits now
	case status != 200:
		t.Errorf("claim %d: %d %s", i, status, raw)
		return
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Errorf("claim %d: %v", i, err)
		return
	}
	*placed = true
	switch i % 4 {
	case 0:
		*how = "confirmed"
		status, raw := live(i+1).call(t, "PATCH", "/claims/"+*consumer, "", map[string]any{"lease_seconds": nil})
		*kept = status == 200
		if status != 200 && status != 409 && status != 404 {
			t.Errorf("confirm %d: %d %s", i, status, raw)
		}
	case 1:
		*how = "written"
		status, raw := live(i+1).call(t, "PUT", "/allocations/"+*consumer, "", map[string]any{
			"allocations": ans.Allocations, "project_id": "p", "user_id": "u", "consumer_type": "INSTANCE",
			"consumer_generation": ans.ConsumerGeneration})
		*kept = status == 204
		if status != 204 && status != 409 {
			t.Errorf("PUT %d: %d %s", i, status, raw)
		}
	case 2:
		*how = "renewed"
		if status, raw := live(i+1).call(t, "PATCH", "/claims/"+*consumer, "", map[string]any{"lease_seconds": 1}); status != 200 &&
			status != 409 && status != 404 {
			t.Errorf("renew %d: %d %s", i, status, raw)
		}
	default:
		*how = "left"
	}
}

// checkReleaseLogs checks that every released consumer was logged once,
// by one berthd, with a line naming it. The berthd killed may have
// committed a release it had not logged yet: one may be missing.
func checkReleaseLogs(t *testing.T, ps []*berthd, released map[string]bool) {
	t.Helper()
	logged := map[string]int{}
	for _, b := range ps {
		sc := bufio.NewScanner(strings.NewReader(b.stderr.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "lease expired; allocations released") {
				continue
			}
			_, rest, ok := strings.Cut(line, "consumer=")
			if !ok {
				t.Errorf("a release line names no consumer: %s", line)
				continue
			}
			consumer, _, _ := strings.Cut(rest, " ")
			logged[consumer]++
		}
	}
	missing := 0
	for c := range released {
		switch logged[c] {
		case 0:
			missing++
		case 1:
		default:
			t.Errorf("consumer %s: release logged %d times", c, logged[c])
		}
	}
	for c := range logged {
		if !released[c] {
			t.Errorf("consumer %s: a release was logged, but it was not released", c)
		}
	}
	if missing > 1 {
		t.Errorf("%d of %d releases were not logged", missing, len(released))
	}
}

// metricSum is the sum of a counter's series on b's /metrics.
func metricSum(t *testing.T, b *berthd, name string) float64 {
	t.Helper()
	status, raw := b.call(t, "GET", "/metrics", "", nil)
	if status != 200 {
		t.Fatalf("GET /metrics: %d", status)
	}
	var sum float64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		sum += v
	}
	return sum
}
