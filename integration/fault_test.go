package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/pgcluster"
	"github.com/berthd/berth/ledger/ledgertest"
)

// The fault tests run three berthd processes on one database with 32
// clients claiming through them while one berthd is killed (SIGKILL) and
// restarted, or while PostgreSQL itself is stopped and started again. They
// then check every claim against the database. Their bounds only catch a
// hang; nothing asserts on time.
const (
	faultProcs     = 3
	faultClients   = 32
	faultProviders = 8
	faultHold      = 3                // live claims per client before it frees its oldest
	faultPerClient = 400              // claim attempts per client, at most
	faultTimeout   = 20 * time.Second // per client request: longer is a hang
	faultRecovery  = time.Minute      // bound on the system serving again
	faultWarmup    = 2 * time.Second  // claims before the fault
	faultDown      = 3 * time.Second  // how long the killed part stays down
	faultAfter     = 3 * time.Second  // claims after every process served again
)

// Each provider fits 8 instances, so 64 in all: fewer than the clients
// want to hold (32 x 3), so claims are refused for capacity all along.
var (
	faultInstance = resources{"VCPU": 1, "MEMORY_MB": 512}
	faultCapacity = resources{"VCPU": 8, "MEMORY_MB": 4096}
)

// claimBody is the body of POST /claims for one instance for a new
// consumer.
func claimBody(consumer, project string, res resources) map[string]any {
	return map[string]any{
		"consumer_uuid":       consumer,
		"project_id":          project,
		"user_id":             "fault",
		"consumer_generation": nil,
		"consumer_type":       "INSTANCE",
		"resources":           res,
	}
}

// Outcomes of one client request.
const (
	outOK      = "ok"          // 2xx
	outRefused = "refused"     // 4xx: a clean no
	out503     = "503"         // database unavailable, in Placement's format
	outConn    = "conn_error"  // no HTTP answer: connection refused or cut
	outHang    = "timeout"     // no answer within faultTimeout
	outBad     = "bad_answer"  // 5xx other than a clean 503, or a malformed 503
	outDecode  = "bad_success" // 2xx whose body could not be read
)

// faultRig is three berthd processes on one database, their providers,
// and the record of what the clients saw.
type faultRig struct {
	t          *testing.T
	bin, dbURL string
	addrs      []string
	client     *http.Client

	mu    sync.Mutex
	procs []*berthd
	// killed is the index of a berthd that is down or was killed: its
	// connection errors are expected. -1: none.
	killed int
	// dbDown is set while PostgreSQL is being restarted: 503s are expected.
	dbDown bool

	rps []string

	// counts by phase ("before", "fault", "after") and outcome.
	counts sync.Map // string -> *atomic.Int64
	phase  atomic.Value
	// firstOK is, per berthd, when it first answered a claim with success
	// after markRecovery.
	recoveryStart time.Time
	firstOK       []time.Time
	failures      []string
}

func newFaultRig(t *testing.T, dbURL string) *faultRig {
	t.Helper()
	r := &faultRig{
		t:      t,
		bin:    buildBerthd(t),
		dbURL:  dbURL,
		killed: -1,
		client: &http.Client{Timeout: faultTimeout},
	}
	r.phase.Store("before")
	for range faultProcs {
		var b *berthd
		var err error
		for attempt := 1; attempt <= 3; attempt++ {
			if b, err = tryStartBerthd(t, r.bin, dbURL); err == nil || !strings.Contains(err.Error(), "address already in use") {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		r.procs = append(r.procs, b)
		r.addrs = append(r.addrs, strings.TrimPrefix(b.url, "http://"))
	}
	t.Cleanup(r.client.CloseIdleConnections)
	b := r.procs[0]
	for i := range faultProviders {
		rp := fmt.Sprintf("f0000000-0000-4000-8000-%012d", i+1)
		r.rps = append(r.rps, rp)
		b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": fmt.Sprintf("fault%d", i), "uuid": rp}, nil)
		inv := map[string]any{}
		for class, total := range faultCapacity {
			inv[class] = map[string]any{"total": total}
		}
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "", map[string]any{
			"resource_provider_generation": 0, "inventories": inv}, nil)
	}
	return r
}

// count adds one to the outcome's counter in the current phase.
func (r *faultRig) count(outcome string) {
	key := r.phase.Load().(string) + "/" + outcome
	v, _ := r.counts.LoadOrStore(key, &atomic.Int64{})
	v.(*atomic.Int64).Add(1)
}

func (r *faultRig) failf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) < 20 {
		r.failures = append(r.failures, msg)
	} else if len(r.failures) == 20 {
		r.failures = append(r.failures, "... (more failures not shown)")
	}
}

// countsLine renders the request counts as phase/outcome=n, sorted.
func (r *faultRig) countsLine() string {
	var lines []string
	r.counts.Range(func(k, v any) bool {
		lines = append(lines, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(lines)
	return strings.Join(lines, " ")
}

// answer is one client request's result.
type answer struct {
	outcome string
	status  int
	body    []byte
	err     error
}

// do sends one client request to berthd i and classifies the answer. An
// answer that breaks the rules (a hang, a 500, a malformed 503, a
// connection error from a process that was not killed, a 503 while the
// database is up) is recorded as a failure.
func (r *faultRig) do(i int, method, path string, body any) answer {
	raw, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	if body == nil {
		raw = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.addrs[i]+path, bytes.NewReader(raw))
	if err != nil {
		panic(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r.mu.Lock()
	killedNow, dbDownNow := r.killed == i, r.dbDown
	r.mu.Unlock()
	a := answer{}
	resp, err := r.client.Do(req)
	if err == nil {
		a.status = resp.StatusCode
		a.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	r.mu.Lock()
	killedNow = killedNow || r.killed == i
	dbDownNow = dbDownNow || r.dbDown
	r.mu.Unlock()
	var ne net.Error
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())):
		a.outcome, a.err = outHang, err
		r.failf("berthd %d: %s %s: no answer within %v: %v", i, method, path, faultTimeout, err)
	case err != nil:
		a.outcome, a.err = outConn, err
		if !killedNow {
			r.failf("berthd %d (not killed): %s %s: %v", i, method, path, err)
		}
	case a.status == http.StatusServiceUnavailable:
		a.outcome = out503
		if msg := check503(method, resp.Header, a.body); msg != "" {
			a.outcome = outBad
			r.failf("berthd %d: %s %s: %s", i, method, path, msg)
		} else if !dbDownNow {
			r.failf("berthd %d: %s %s: 503 while the database is up: %s", i, method, path, a.body)
		}
	case a.status >= 500:
		a.outcome = outBad
		r.failf("berthd %d: %s %s: %d %s", i, method, path, a.status, a.body)
	case a.status >= 400:
		a.outcome = outRefused
	default:
		a.outcome = outOK
	}
	r.count(a.outcome)
	return a
}

// check503 says what is wrong with a 503, or "" if it is a clean one:
// Placement's error format with code berth.database_unavailable and a
// Retry-After header.
func check503(method string, h http.Header, body []byte) string {
	if err := checkErrorBody(method, response{status: http.StatusServiceUnavailable, header: h, body: body}); err != nil {
		return err.Error()
	}
	var doc struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Errors[0].Code != fault.CodeDatabaseUnavailable {
		return fmt.Sprintf("503 with code other than %s: %s", fault.CodeDatabaseUnavailable, body)
	}
	if h.Get("Retry-After") == "" {
		return "503 without Retry-After"
	}
	return ""
}

// Claim record states.
const (
	claimPresent = iota // the client saw it succeed
	claimAbsent         // refused, or freed with a confirmed DELETE
	claimUnknown        // the client did not learn whether it was written or freed
)

// claimRecord is what one client believes about one consumer.
type claimRecord struct {
	consumer, project string
	via               string // "two-step" or "claims"
	state             int
	// allocs is what the consumer holds if present: what the client got,
	// or sent. nil for a POST /claims whose answer was lost: then any one
	// provider holding exactly faultInstance counts as "fully present".
	allocs map[string]resources
	where  int // the berthd it went through
	// result is what the client learnt of its claim: "ok", "refused" (a
	// 4xx, or no candidates), "failed" (no write was sent: the candidates
	// request failed) or "unknown" (the write got a 503 or no answer).
	result string
	// freed is what it learnt of freeing it: "", "ok" or "unknown".
	freed string
}

// claimer claims and frees instances through the berthd processes in turn
// until stop is closed or it made faultPerClient attempts, and returns
// what it believes about every consumer it touched.
func (r *faultRig) claimer(ci int, stop <-chan struct{}) []*claimRecord {
	project := fmt.Sprintf("fault-%d", ci)
	var records, live []*claimRecord
	next := ci // berthd of the next request
	target := func() int { next = (next + 1) % faultProcs; return next }
	for n := 0; n < faultPerClient; n++ {
		select {
		case <-stop:
			return records
		default:
		}
		// Free the oldest instance when holding enough, or when the cloud
		// refused the last claim: then the clients keep churning instead of
		// all waiting for room while holding some.
		refusedLast := len(records) > 0 && records[len(records)-1].state == claimAbsent
		if len(live) >= faultHold || (refusedLast && len(live) > 0) {
			old := live[0]
			live = live[1:]
			switch a := r.do(target(), "DELETE", "/allocations/"+old.consumer, nil); {
			case a.outcome == outOK:
				old.state, old.freed = claimAbsent, "ok"
			case a.outcome == outRefused && a.status == http.StatusNotFound && old.freed == "unknown":
				// An earlier DELETE whose answer was lost did commit.
				old.state, old.freed = claimAbsent, "ok"
			case a.outcome == outRefused:
				r.failf("DELETE of held consumer %s refused: %d %s", old.consumer, a.status, a.body)
			default:
				// Freed or not: either way whole. Try again later, through
				// another berthd, as a real client would: giving up would
				// leak the instance, and with a berthd down for a while the
				// leaks fill the cloud.
				old.state, old.freed = claimUnknown, "unknown"
				live = append(live, old)
			}
		}
		rec := &claimRecord{consumer: fmt.Sprintf("f%07x-0000-4000-8000-%012d", ci, n), project: project, state: claimAbsent}
		records = append(records, rec)
		if n%2 == 0 {
			rec.via = "two-step"
			r.claimTwoStep(rec, target, ci+n)
		} else {
			rec.via = "claims"
			r.claimDirect(rec, target())
		}
		if rec.state == claimPresent {
			live = append(live, rec)
		}
		if rec.state != claimPresent {
			select { // a refused or failed client waits a little, as a real one would
			case <-stop:
				return records
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return records
}

// claimTwoStep claims the way Nova does: GET /allocation_candidates from
// one berthd, PUT /allocations of candidate pick through another.
func (r *faultRig) claimTwoStep(rec *claimRecord, target func() int, pick int) {
	a := r.do(target(), "GET", fmt.Sprintf("/allocation_candidates?resources=VCPU:%d,MEMORY_MB:%d",
		faultInstance["VCPU"], faultInstance["MEMORY_MB"]), nil)
	if a.outcome != outOK {
		rec.result = "failed" // nothing was written
		return
	}
	var cands candidatesDoc
	if err := json.Unmarshal(a.body, &cands); err != nil {
		r.count(outDecode)
		r.failf("candidates: %v: %s", err, a.body)
		return
	}
	if len(cands.AllocationRequests) == 0 {
		r.count("no_candidates")
		rec.result = "refused" // the cloud is full: refused before writing
		return
	}
	allocs := cands.request(pick % len(cands.AllocationRequests))
	rec.where = target()
	a = r.do(rec.where, "PUT", "/allocations/"+rec.consumer, allocationsBody(allocs, rec.project, "fault", nil, "INSTANCE"))
	switch a.outcome {
	case outOK:
		rec.state, rec.allocs, rec.result = claimPresent, allocs, "ok"
		r.claimed(rec.where)
	case outRefused:
		rec.state, rec.result = claimAbsent, "refused"
	default:
		// A 503 or a cut connection: the write may have committed.
		rec.state, rec.allocs, rec.result = claimUnknown, allocs, "unknown"
	}
}

// claimDirect claims with POST /claims through berthd i.
func (r *faultRig) claimDirect(rec *claimRecord, i int) {
	body := claimBody(rec.consumer, rec.project, faultInstance)
	rec.where = i
	a := r.do(i, "POST", "/claims", body)
	switch a.outcome {
	case outOK:
		var doc allocationsDoc
		if err := json.Unmarshal(a.body, &doc); err != nil || len(doc.Allocations) == 0 {
			r.count(outDecode)
			r.failf("POST /claims answer: %v: %s", err, a.body)
			rec.state, rec.result = claimUnknown, "unknown"
			return
		}
		rec.state, rec.allocs, rec.result = claimPresent, doc.byProvider(), "ok"
		r.claimed(i)
	case outRefused:
		rec.state, rec.result = claimAbsent, "refused"
	default:
		rec.state, rec.result = claimUnknown, "unknown"
	}
}

// claimed notes that berthd i wrote a claim.
func (r *faultRig) claimed(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.recoveryStart.IsZero() && r.firstOK[i].IsZero() {
		r.firstOK[i] = time.Now()
	}
}

// markRecovery starts the clock for time to recover: from now until each
// berthd's first successful claim (POST /claims, or PUT /allocations).
func (r *faultRig) markRecovery() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recoveryStart = time.Now()
	r.firstOK = make([]time.Time, faultProcs)
}

// recovered reports whether every berthd has claimed since markRecovery.
func (r *faultRig) recovered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.firstOK {
		if at.IsZero() {
			return false
		}
	}
	return true
}

// run starts the clients, calls fault once they have warmed up, waits
// (bounded) until every berthd has claimed again, lets the clients go on a
// little, stops them and returns their records.
func (r *faultRig) run(fault func()) ([]*claimRecord, time.Duration) {
	return r.runClients(faultClients, r.claimer, fault)
}

// runClients is run with n clients, each claiming with claimer until
// stop closes. The clock for recovery starts where fault calls
// markRecovery, else when fault returns.
func (r *faultRig) runClients(n int, claimer func(ci int, stop <-chan struct{}) []*claimRecord, fault func()) ([]*claimRecord, time.Duration) {
	t := r.t
	stop := make(chan struct{})
	results := make([][]*claimRecord, n)
	var wg sync.WaitGroup
	for ci := range n {
		wg.Add(1)
		go func() { defer wg.Done(); results[ci] = claimer(ci, stop) }()
	}
	stopped := false
	stopClients := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopClients()

	time.Sleep(faultWarmup)
	r.phase.Store("fault")
	fault()
	r.mu.Lock()
	marked := !r.recoveryStart.IsZero()
	r.mu.Unlock()
	if !marked {
		r.markRecovery()
	}
	deadline := time.Now().Add(faultRecovery)
	for !r.recovered() {
		if time.Now().After(deadline) {
			stopClients()
			t.Fatalf("not every berthd claimed again within %v of the fault's end (first successes %v); requests: %s; failures: %q",
				faultRecovery, r.firstOK, r.countsLine(), r.failures)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.mu.Lock()
	var recovery time.Duration
	for _, at := range r.firstOK {
		recovery = max(recovery, at.Sub(r.recoveryStart))
	}
	r.mu.Unlock()
	r.phase.Store("after")
	time.Sleep(faultAfter)
	stopClients()
	var all []*claimRecord
	for _, rs := range results {
		all = append(all, rs...)
	}
	return all, recovery
}

// verify checks every record against the database through berthd 0 and
// reports the numbers: each claim the client saw succeed is held exactly
// as the client was told, refused and freed ones hold nothing, one whose
// outcome was lost is whole or absent, every provider's usage is the sum
// of what its consumers hold and within its capacity.
func (r *faultRig) verify(records []*claimRecord, recovery time.Duration, what string) {
	t := r.t
	for _, f := range r.failures {
		t.Error(f)
	}
	b := r.procs[0]
	used := map[string]resources{}
	stats := map[string]int{}
	for _, rec := range records {
		stats["attempted"]++
		stats[rec.via+"/"+rec.result]++
		if rec.freed != "" {
			stats["freed/"+rec.freed]++
		}
		got := b.allocations(t, rec.consumer).byProvider()
		for rp, res := range got {
			if used[rp] == nil {
				used[rp] = resources{}
			}
			for class, n := range res {
				used[rp][class] += n
			}
		}
		switch rec.state {
		case claimPresent:
			if !maps.EqualFunc(got, rec.allocs, maps.Equal) {
				t.Errorf("%s claim %s (via berthd %d) succeeded with %v; the database holds %v", rec.via, rec.consumer, rec.where, rec.allocs, got)
			}
		case claimAbsent:
			if len(got) != 0 {
				t.Errorf("%s consumer %s was refused or freed (%s), yet holds %v", rec.via, rec.consumer, rec.result, got)
			}
		case claimUnknown:
			if len(got) == 0 {
				stats["unknown/absent"]++
				break
			}
			stats["unknown/present"]++
			whole := maps.EqualFunc(got, rec.allocs, maps.Equal)
			if rec.allocs == nil { // POST /claims lost its answer: one provider, the whole instance
				for _, res := range got {
					whole = len(got) == 1 && maps.Equal(res, faultInstance)
				}
			}
			if !whole {
				t.Errorf("%s consumer %s, outcome unknown, holds a part: %v (asked %v)", rec.via, rec.consumer, got, rec.allocs)
			}
		}
	}
	for _, rp := range r.rps {
		u := b.usages(t, rp)
		want := used[rp]
		if want == nil {
			want = resources{}
		}
		for class := range faultCapacity {
			if u[class] != want[class] {
				t.Errorf("provider %s: %s usage %d, but its consumers hold %d", rp, class, u[class], want[class])
			}
			if u[class] > faultCapacity[class] {
				t.Errorf("provider %s is over capacity: %s %d > %d", rp, class, u[class], faultCapacity[class])
			}
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(stats)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, stats[k]))
	}
	t.Logf("%s: claims (by path/what the client learnt): %s", what, strings.Join(parts, " "))
	t.Logf("%s: requests by phase/outcome: %s", what, r.countsLine())
	t.Logf("%s: time to recover (restart begun -> every berthd claimed again): %v", what, recovery.Round(time.Millisecond))
}

// TestFaultBerthdKilled: one of three berthd processes is killed with
// SIGKILL under concurrent claims and restarted on the same address. The
// other two keep serving without an error; the killed one's clients see
// connection errors only; afterwards the database holds exactly what the
// clients were told.
func TestFaultBerthdKilled(t *testing.T) {
	r := newFaultRig(t, ledgertest.NewDB(t))
	const victim = 1
	records, recovery := r.run(func() {
		r.mu.Lock()
		r.killed = victim
		b := r.procs[victim]
		r.mu.Unlock()
		if err := b.proc.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-b.exited
		time.Sleep(faultDown)
		r.markRecovery()
		nb, err := startBerthdAt(t, r.bin, r.dbURL, r.addrs[victim])
		if err != nil {
			t.Fatalf("restart berthd %d: %v", victim, err)
		}
		r.mu.Lock()
		r.procs[victim] = nb
		r.mu.Unlock()
	})
	r.verify(records, recovery, "berthd SIGKILL")
}

// TestFaultPostgresRestart: PostgreSQL is stopped (immediate shutdown:
// every connection is cut, the server recovers from its WAL on start) and
// started again on the same socket under concurrent claims through three
// berthd processes. Meanwhile every answer is a success, a clean refusal,
// or a clean 503; no request hangs; every berthd serves again by itself
// once the database is back, and afterwards the database holds exactly
// what the clients were told.
func TestFaultPostgresRestart(t *testing.T) {
	if _, err := pgcluster.FindBinaries(); err != nil {
		t.Skipf("restarting PostgreSQL needs its server binaries here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	socketDir := dir
	if !pgcluster.SocketDirFits(socketDir, pgcluster.DefaultPort) {
		var err error
		if socketDir, err = os.MkdirTemp("/tmp", "berthfault-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(socketDir) })
	}
	opts := pgcluster.Options{
		DataDir:   filepath.Join(dir, "pg"),
		SocketDir: socketDir,
		NoSync:    true,
		// NoSync turns synchronous_commit off, which acknowledges a commit
		// before its WAL is written: an immediate shutdown then loses the
		// last acknowledged writes (this test saw a DELETE answered 204
		// undone). fsync stays off: the kernel keeps the WAL across a
		// server crash, only a machine crash would lose it.
		Settings:      map[string]string{"synchronous_commit": "on"},
		Logger:        slog.New(slog.DiscardHandler),
		LoosenParents: true, // the test's temporary directory
	}
	var clusterMu sync.Mutex
	cluster, err := pgcluster.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the berthd processes are stopped.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		clusterMu.Lock()
		defer clusterMu.Unlock()
		if cluster != nil {
			_ = cluster.Stop(ctx)
		}
	})
	if err := cluster.CreateDatabase(ctx, "berth"); err != nil {
		t.Fatal(err)
	}
	r := newFaultRig(t, cluster.URL("berth"))
	var down time.Duration
	records, recovery := r.run(func() {
		r.mu.Lock()
		r.dbDown = true
		r.mu.Unlock()
		clusterMu.Lock()
		defer clusterMu.Unlock()
		stopped := time.Now()
		// A cancelled context makes Stop skip the fast shutdown's wait and
		// send SIGQUIT: an immediate shutdown.
		stopCtx, stopCancel := context.WithCancel(ctx)
		stopCancel()
		if err := cluster.Stop(stopCtx); err != nil {
			t.Logf("immediate shutdown: %v", err)
		}
		cluster = nil
		time.Sleep(faultDown)
		r.markRecovery()
		c, err := pgcluster.Start(ctx, opts)
		if err != nil {
			t.Fatalf("start PostgreSQL again: %v", err)
		}
		cluster = c
		down = time.Since(stopped)
		// dbDown stays set: a request sent before now may still get its
		// 503. The counts by phase show how many came after.
	})
	t.Logf("PostgreSQL down (immediate stop to ready again): %v", down.Round(time.Millisecond))
	r.verify(records, recovery, "PostgreSQL restart")
}
