package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/patronitest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

// The failover tests run three berthd processes on a Patroni cluster
// (etcd, a primary and its synchronous standby, on loopback), connected
// with the multi-host URL and target_session_attrs=read-write, with
// clients claiming through POST /claims while the primary's postmaster
// is killed (kill -9) or Patroni switches over. The clients retry a
// claim or a delete whose outcome they did not learn (a 503, a cut
// connection) with the same request, as a scheduler should; the test
// then checks every claim against the database as the fault tests do,
// and that every retry converged.
const (
	failoverClients = 24
	retryPause      = 300 * time.Millisecond // between retries of one request
	retryMax        = 60                     // retries of one request: 18 s and more
)

// startPatroni starts a Patroni cluster and a migrated database on it
// and returns the cluster and the database's multi-host URL.
func startPatroni(t *testing.T, opts patronitest.Options) (*patronitest.Cluster, string) {
	c := patronitest.New(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateDatabase(ctx, "berth"); err != nil {
		t.Fatal(err)
	}
	url := c.URL("berth")
	if err := ledger.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	return c, url
}

// retryingClaimer claims and frees instances through the berthd
// processes in turn, retrying each request whose outcome it did not
// learn, until stop is closed.
func (r *faultRig) retryingClaimer(ci int, stop <-chan struct{}) []*claimRecord {
	project := fmt.Sprintf("failover-%d", ci)
	var records, live []*claimRecord
	next := ci
	target := func() int { next = (next + 1) % faultProcs; return next }
	for n := 0; n < faultPerClient; n++ {
		select {
		case <-stop:
			return records
		default:
		}
		refusedLast := len(records) > 0 && records[len(records)-1].state == claimAbsent
		if len(live) >= faultHold || (refusedLast && len(live) > 0) {
			old := live[0]
			live = live[1:]
			r.freeRetrying(old, target)
			if old.state != claimAbsent {
				live = append(live, old)
			}
		}
		rec := &claimRecord{consumer: fmt.Sprintf("e%07x-0000-4000-8000-%012d", ci, n), project: project,
			state: claimAbsent, via: "claims"}
		records = append(records, rec)
		r.claimRetrying(rec, target)
		if rec.state == claimPresent {
			live = append(live, rec)
		} else {
			select {
			case <-stop:
				return records
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return records
}

// claimRetrying sends POST /claims for rec, the same request again after
// each unknown outcome, through the next berthd each time.
func (r *faultRig) claimRetrying(rec *claimRecord, target func() int) {
	body := claimBody(rec.consumer, rec.project, faultInstance)
	for attempt := 0; attempt < retryMax; attempt++ {
		rec.where = target()
		a := r.do(rec.where, "POST", "/claims", body)
		switch a.outcome {
		case outOK:
			var doc allocationsDoc
			if err := json.Unmarshal(a.body, &doc); err != nil || len(doc.Allocations) == 0 {
				r.failf("POST /claims answer: %v: %s", err, a.body)
				rec.state, rec.result = claimUnknown, "unknown"
				return
			}
			rec.state, rec.allocs, rec.result = claimPresent, doc.byProvider(), "ok"
			if attempt > 0 {
				rec.result = "ok-after-retry"
			}
			r.claimed(rec.where)
			return
		case outRefused:
			// After an unknown outcome this must mean nothing was
			// written: verify checks that the consumer holds nothing.
			rec.state, rec.result = claimAbsent, "refused"
			if attempt > 0 {
				rec.result = "refused-after-retry"
			}
			return
		}
		rec.state, rec.result = claimUnknown, "unknown"
		time.Sleep(retryPause)
	}
}

// freeRetrying deletes rec's allocations, again after each unknown
// outcome; a 404 after an unknown outcome means the earlier one did it.
func (r *faultRig) freeRetrying(rec *claimRecord, target func() int) {
	for attempt := 0; attempt < retryMax; attempt++ {
		a := r.do(target(), "DELETE", "/allocations/"+rec.consumer, nil)
		switch {
		case a.outcome == outOK:
			rec.state, rec.freed = claimAbsent, "ok"
			return
		case a.outcome == outRefused && a.status == http.StatusNotFound && attempt > 0:
			rec.state, rec.freed = claimAbsent, "ok"
			return
		case a.outcome == outRefused:
			r.failf("DELETE of held consumer %s refused: %d %s", rec.consumer, a.status, a.body)
			rec.freed = "refused"
			return
		}
		rec.freed = "unknown"
		time.Sleep(retryPause)
	}
}

// runRetrying is run with retrying clients.
func (r *faultRig) runRetrying(fault func()) ([]*claimRecord, time.Duration) {
	return r.runClients(failoverClients, r.retryingClaimer, fault)
}

// verifyConverged is verify plus: no request is left with an unknown
// outcome once the clients retried it.
func (r *faultRig) verifyConverged(records []*claimRecord, recovery time.Duration, what string) {
	r.verify(records, recovery, what)
	retried := map[string]int{}
	for _, rec := range records {
		if rec.state == claimUnknown {
			r.t.Errorf("consumer %s: outcome still unknown after %d retries (claim %s, free %s)", rec.consumer, retryMax, rec.result, rec.freed)
		}
		retried[rec.result]++
	}
	r.t.Logf("%s: claims by final answer: %v", what, retried)
}

// TestFailoverPrimaryKilled: kill -9 of the primary's postmaster under
// load. Patroni promotes the synchronous standby; every berthd
// reconnects to it by itself; every answer meanwhile is a success, a
// clean refusal or a clean 503 with Retry-After; no request hangs; each
// retried claim converges to exactly one allocation or none; the
// database holds exactly what the clients were told, and no provider is
// over capacity.
func TestFailoverPrimaryKilled(t *testing.T) {
	c, url := startPatroni(t, patronitest.Options{})
	r := newFaultRig(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var promoted time.Duration
	records, recovery := r.runRetrying(func() {
		r.mu.Lock()
		r.dbDown = true // 503s are expected from now on
		r.mu.Unlock()
		r.markRecovery()
		start := time.Now()
		if _, _, err := c.FailOver(ctx); err != nil {
			t.Fatal(err)
		}
		promoted = time.Since(start)
	})
	t.Logf("primary killed -> standby promoted and writable: %v", promoted.Round(time.Millisecond))
	r.verifyConverged(records, recovery, "primary kill -9")
	r.checkSwitchLogged()
}

// TestFailoverSwitchover: patronictl switchover under load, with the
// same assertions as TestFailoverPrimaryKilled.
func TestFailoverSwitchover(t *testing.T) {
	c, url := startPatroni(t, patronitest.Options{})
	r := newFaultRig(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var took time.Duration
	records, recovery := r.runRetrying(func() {
		r.mu.Lock()
		r.dbDown = true
		r.mu.Unlock()
		r.markRecovery()
		start := time.Now()
		if _, err := c.Switchover(ctx); err != nil {
			t.Fatal(err)
		}
		took = time.Since(start)
	})
	t.Logf("switchover (patronictl to new primary writable): %v", took.Round(time.Millisecond))
	r.verifyConverged(records, recovery, "switchover")
	r.checkSwitchLogged()
}

// checkSwitchLogged checks that each berthd logged the switch of the
// primary once, not once per connection or request.
func (r *faultRig) checkSwitchLogged() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errorLines atomic.Int64
	for i, b := range r.procs {
		log := b.stderr.String()
		n := strings.Count(log, "the database primary changed")
		if n != 1 {
			r.t.Errorf("berthd %d logged the switch of the primary %d times, want 1", i, n)
		}
		errorLines.Add(int64(strings.Count(log, `"level":"ERROR"`) + strings.Count(log, "level=ERROR")))
	}
	r.t.Logf("ERROR lines logged by the berthd processes: %d", errorLines.Load())
}

// TestLostCommitAnswer: a loopback proxy between three berthd processes
// and PostgreSQL drops the server's answer to committed claim writes (the
// connection breaks after COMMIT). berthd settles each such write before
// answering, or answers 503 and the client's retry converges: in the end
// every claim is held exactly once, with nothing leaked or duplicated.
func TestLostCommitAnswer(t *testing.T) {
	proxy, url, err := startDropProxy(ledgertest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	r := newFaultRig(t, url)
	const drops = 30
	records, recovery := r.runRetrying(func() {
		r.mu.Lock()
		r.dbDown = true // a 503 is allowed (and must be clean)
		r.mu.Unlock()
		r.markRecovery()
		proxy.armed.Store(drops)
		deadline := time.Now().Add(faultRecovery)
		for proxy.dropped.Load() < drops && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		proxy.armed.Store(0)
	})
	if proxy.dropped.Load() == 0 {
		t.Fatal("the proxy dropped no answer")
	}
	t.Logf("answers to committed writes dropped: %d", proxy.dropped.Load())
	r.verifyConverged(records, recovery, "lost commit answers")
}

// TestReadOnlyPrimary: a primary that turns read-only
// (default_transaction_read_only, as when a failover leaves berthd on a
// demoted node) makes writes answer 503 with Retry-After, never 500,
// and writes nothing; reads go on; writes succeed once it is writable.
func TestReadOnlyPrimary(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	b, err := tryStartBerthd(t, buildBerthd(t), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	const rp = "f1000000-0000-4000-8000-000000000001"
	b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": "ro", "uuid": rp}, nil)
	b.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "", map[string]any{
		"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": 8}}}, nil)
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	// The settings are changed from another database, which stays
	// writable.
	u.Path = "/postgres"
	admin := u.String()
	setReadOnly := func(on bool) {
		stmt := `ALTER DATABASE "` + db + `" SET default_transaction_read_only = on`
		if !on {
			stmt = `ALTER DATABASE "` + db + `" RESET default_transaction_read_only`
		}
		ledgertest.Exec(t, admin, stmt)
		// Sessions take the setting when they start: end berthd's.
		ledgertest.Exec(t, admin, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db)
	}
	setReadOnly(true)
	const consumer = "f1000000-0000-4000-8000-0000000000c1"
	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/claims", claimBody(consumer, "p", resources{"VCPU": 1})},
		{"PUT", "/allocations/" + consumer, allocationsBody(map[string]resources{rp: {"VCPU": 1}}, "p", "u", nil, "INSTANCE")},
		{"POST", "/resource_providers", map[string]any{"name": "ro2"}},
	} {
		// The first request after the sessions ended may meet a pooled
		// connection that is gone (a clean 503 too); every answer must
		// be a 503 with Retry-After.
		for range 3 {
			code, h, raw := rawCall(t, "POST", b.url, w.method, w.path, w.body)
			if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
				t.Fatalf("%s %s on a read-only primary: %d (Retry-After %q) %s", w.method, w.path, code, h.Get("Retry-After"), raw)
			}
			if msg := check503(w.method, h, raw); msg != "" {
				t.Fatal(msg)
			}
		}
	}
	if got := b.allocations(t, consumer); len(got.Allocations) != 0 {
		t.Fatalf("a refused write left %v", got)
	}
	setReadOnly(false)
	deadline := time.Now().Add(time.Minute)
	for {
		code, _, raw := rawCall(t, "POST", b.url, "POST", "/claims", claimBody(consumer, "p", resources{"VCPU": 1}))
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("claim once writable again: %d %s", code, raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(b.stderr.String(), `status=500`) {
		t.Fatalf("berthd answered 500:\n%s", b.stderr)
	}
}

// rawCall sends one request to the berthd at base and returns its
// answer, whatever the status.
func rawCall(t *testing.T, _ string, base, method, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, base+path, strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	client := &http.Client{Timeout: requestTimeout}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// TestStandbyOnlyURL: a database URL naming only standbys fails at start
// with one clear line.
func TestStandbyOnlyURL(t *testing.T) {
	c, _ := startPatroni(t, patronitest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := c.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	standby := c.NodeURL(1-p, "berth") + "&target_session_attrs=read-write"
	cmd := exec.CommandContext(ctx, buildBerthd(t), "serve", "--listen", "127.0.0.1:0", "--database-url", standby, "--log-level", "warn")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("berthd started on a standby-only URL:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "standby") {
		t.Fatalf("berthd on a standby-only URL said (want one line naming the standby):\n%s", out)
	}
	t.Logf("berthd: %s", lines[0])
}

// TestCommitNotReplicated: with synchronous_mode_strict and the standby
// stopped, every COMMIT waits for a standby that does not come. When that
// wait is cancelled (an operator's pg_cancel_backend here, or a
// CancelRequest from any client; statement_timeout does not cover the
// wait), PostgreSQL commits locally and answers success with a WARNING.
// berthd must not answer 200 for such a write: it answers 503 with
// Retry-After. Once the standby is back, the client's retry of the same
// claim gets the write, exactly once.
func TestCommitNotReplicated(t *testing.T) {
	c, url := startPatroni(t, patronitest.Options{Strict: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	b, err := startBerthdAt(t, buildBerthd(t), url, addr)
	if err != nil {
		t.Fatal(err)
	}
	const rp = "f2000000-0000-4000-8000-000000000001"
	b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": "sync", "uuid": rp}, nil)
	b.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "", map[string]any{
		"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": 8}}}, nil)
	p, err := c.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.StopNode(1 - p)
	t.Logf("standby %s stopped", c.Name(1-p))

	const consumer = "f2000000-0000-4000-8000-0000000000c1"
	body := claimBody(consumer, "p", resources{"VCPU": 2})
	type reply struct {
		code int
		h    http.Header
		raw  []byte
	}
	done := make(chan reply, 1)
	go func() {
		code, h, raw := rawCall(t, "POST", b.url, "POST", "/claims", body)
		done <- reply{code, h, raw}
	}()
	var rep reply
	for waiting := true; waiting; {
		select {
		case rep = <-done:
			waiting = false
		case <-time.After(200 * time.Millisecond):
			// Cancel every wait for the standby: the claim's COMMIT, and
			// then the read that tries to confirm it.
			if _, err := c.Psql(ctx, p, "berth", `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, h, raw := rep.code, rep.h, rep.raw
	if code != http.StatusServiceUnavailable {
		t.Fatalf("claim with no synchronous standby: %d %s (want 503: the commit is not on a standby)", code, raw)
	}
	if msg := check503("POST", h, raw); msg != "" {
		t.Fatal(msg)
	}
	if !strings.Contains(string(raw), "synchronous standby did not confirm") {
		t.Errorf("the 503 does not say the standby did not confirm the write: %s", raw)
	}
	// The write is committed on the primary alone: visible there.
	if out, err := c.Psql(ctx, p, "berth", `SELECT count(*) FROM claim_requests WHERE consumer_uuid = '`+consumer+`'`); err != nil || out != "1" {
		t.Logf("claim_requests rows on the primary: %q %v", out, err)
	}

	if err := c.StartNode(1 - p); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSync(ctx); err != nil {
		t.Fatal(err)
	}
	var answer allocationsDoc
	deadline := time.Now().Add(time.Minute)
	for {
		code, _, raw = rawCall(t, "POST", b.url, "POST", "/claims", body)
		if code == http.StatusOK {
			if err := json.Unmarshal(raw, &answer); err != nil {
				t.Fatal(err)
			}
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("retry once the standby is back: %d %s", code, raw)
		}
		time.Sleep(retryPause)
	}
	if got := answer.byProvider(); len(got) != 1 || got[rp]["VCPU"] != 2 {
		t.Fatalf("retry answered %v", got)
	}
	if u := b.usages(t, rp); u["VCPU"] != 2 {
		t.Fatalf("usage %v after the retry, want VCPU 2 (one allocation)", u)
	}
}
