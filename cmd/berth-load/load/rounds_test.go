package load

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi/client"
)

// phaseLog records a claims run's Pause and Resume calls.
type phaseLog struct {
	mu     sync.Mutex
	events []string
}

func (l *phaseLog) Pause()  { l.add("pause") }
func (l *phaseLog) Resume() { l.add("resume") }
func (l *phaseLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// checkPhases checks that a run paused first and then alternated: one
// timed window (resume, pause) per round.
func checkPhases(t *testing.T, l *phaseLog, rounds int) {
	t.Helper()
	want := []string{"pause"}
	for range rounds {
		want = append(want, "resume", "pause")
	}
	if strings.Join(l.events, ",") != strings.Join(want, ",") {
		t.Errorf("phases %v, want %v", l.events, want)
	}
}

// checkReleased checks that every released consumer is distinct and has
// no allocations left.
func checkReleased(t *testing.T, c *Client, res *ClaimsResult) {
	t.Helper()
	seen := map[string]bool{}
	for _, consumer := range res.released {
		if seen[consumer] {
			t.Errorf("consumer %s released twice", consumer)
		}
		seen[consumer] = true
		var got struct {
			Allocations map[string]any `json:"allocations"`
		}
		if _, err := c.JSON(context.Background(), http.MethodGet, "/allocations/"+consumer, nil, &got); err != nil {
			t.Fatalf("GET /allocations/%s: %v", consumer, err)
		}
		if len(got.Allocations) != 0 {
			t.Errorf("released consumer %s still has allocations %v", consumer, got.Allocations)
		}
	}
	if res.Released != len(res.released) {
		t.Errorf("released %d, listed %d", res.Released, len(res.released))
	}
}

// TestRunClaimsRounds: a cap far below what the duration allows makes
// several rounds; each round's consumers are released, slowly (every
// DELETE takes 10 ms, so a release lasts as long as the round's claiming
// or longer), and the rate counts the timed claiming only. The check sees
// what the last round left; the final release empties the cloud.
func TestRunClaimsRounds(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 10}, io.Discard); err != nil {
		t.Fatal(err)
	}
	const perRound, clients, delay = 20, 4, 10 * time.Millisecond
	f.deleteDelay.Store(int64(delay))
	var phases phaseLog
	res, err := RunClaims(context.Background(), c, ClaimsParams{Mode: ModeClaims, Clients: clients, Claims: perRound,
		Duration: 300 * time.Millisecond, Rounds: true, Release: true, Verify: true, Phases: &phases}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rounds, %d claims in %s timed, %d released in %s, %s wall", res.Rounds, res.Claims, res.Elapsed, res.Released, res.ReleaseTime, res.Wall)
	if res.Rounds < 2 || res.Errors != 0 || res.NoFit != 0 {
		t.Fatalf("%d rounds, %d errors (%s), %d found no candidate", res.Rounds, res.Errors, res.Error, res.NoFit)
	}
	// Every round but the last reached the cap; the last stopped at the
	// duration, at or below it.
	if res.Claims <= perRound*(res.Rounds-1) || res.Claims > perRound*res.Rounds {
		t.Errorf("%d claims in %d rounds of at most %d", res.Claims, res.Rounds, perRound)
	}
	last := res.Claims - perRound*(res.Rounds-1)
	if v := res.Verify; v == nil || !v.OK || !v.UsageMatches || v.Used["VCPU"] != 4*last {
		t.Errorf("check of the last round's %d claims: %+v", last, v)
	}
	if res.Released != res.Claims || f.deletes != res.Claims {
		t.Errorf("released %d (server: %d) of %d claims", res.Released, f.deletes, res.Claims)
	}
	checkReleased(t, c, res)
	if v := Verify(context.Background(), c, 4, nil); !v.OK || v.Used["VCPU"] != 0 {
		t.Errorf("after the run: %+v", v)
	}
	// The rate is over the timed claiming alone: the releases, each at
	// least perRound/clients DELETEs of delay one after another, are in
	// the wall time and not in Elapsed.
	if res.PerSecond != float64(res.Claims)/res.Elapsed.Seconds() {
		t.Errorf("rate %v, want %d claims / %s", res.PerSecond, res.Claims, res.Elapsed)
	}
	if res.Elapsed < 300*time.Millisecond {
		t.Errorf("timed claiming %s, less than the duration", res.Elapsed)
	}
	minRelease := time.Duration(res.Rounds-1) * (perRound / clients) * delay
	if res.ReleaseTime < minRelease || res.Elapsed+res.ReleaseTime > res.Wall {
		t.Errorf("timed %s + releases %s (at least %s) against the wall's %s", res.Elapsed, res.ReleaseTime, minRelease, res.Wall)
	}
	if res.Latency.N != res.Claims {
		t.Errorf("latency over %d claims of %d", res.Latency.N, res.Claims)
	}
	checkPhases(t, &phases, res.Rounds)
}

// TestRunClaimsRoundsTwoStep: rounds work with Nova's two-step claims
// too, without a final release: the cloud keeps the last round.
func TestRunClaimsRoundsTwoStep(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 4}, io.Discard); err != nil {
		t.Fatal(err)
	}
	res, err := RunClaims(context.Background(), c, ClaimsParams{Clients: 3, Claims: 15, Duration: 500 * time.Millisecond,
		Rounds: true, Verify: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rounds < 2 || res.Released != 15*(res.Rounds-1) || res.Claims != res.Released+len(f.consumers) {
		t.Errorf("%d rounds, %d claims, %d released, %d left", res.Rounds, res.Claims, res.Released, len(f.consumers))
	}
	if v := res.Verify; v == nil || !v.OK || !v.UsageMatches {
		t.Errorf("verify %+v", v)
	}
	checkReleased(t, c, res)
}

// TestRunClaimsReleaseFails: a release answered other than 204 ends the
// run with an error and the result so far; the other flags are checked.
func TestRunClaimsReleaseFails(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 4}, io.Discard); err != nil {
		t.Fatal(err)
	}
	f.failDeletes = 1
	res, err := RunClaims(context.Background(), c, ClaimsParams{Mode: ModeClaims, Clients: 2, Claims: 10, Duration: time.Minute,
		Rounds: true}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "releasing consumer") || !client.IsStatus(err, 500) {
		t.Errorf("error %v, want a failed release", err)
	}
	if res == nil || res.Rounds != 1 || res.Claims != 10 || res.Released >= 10 {
		t.Errorf("result %+v", res)
	}
	for _, p := range []ClaimsParams{{Rounds: true, Duration: time.Second}, {Rounds: true, Claims: 10}} {
		if _, err := RunClaims(context.Background(), c, p, io.Discard); err == nil || !strings.Contains(err.Error(), "--rounds needs") {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// TestRoundsAgainstBerthd: rounds of POST /claims against a real berthd
// on a throwaway PostgreSQL: several rounds, every released consumer has
// no allocations afterwards, nothing is overcommitted, and the usage the
// check finds is the last round's; the final release empties the cloud.
func TestRoundsAgainstBerthd(t *testing.T) {
	url := startBerthd(t, time.Minute)
	const nodes, clients, perRound = 20, 4, 30 // a tenth of the 300 claims that fit
	c := NewClient(ClientConfig{URL: url, Token: "admin", Conns: clients, Timeout: time.Minute})
	ctx := context.Background()
	if _, err := Seed(ctx, c, SeedParams{Nodes: nodes, Workers: clients}, io.Discard); err != nil {
		t.Fatal(err)
	}
	var phases phaseLog
	res, err := RunClaims(ctx, c, ClaimsParams{Mode: ModeClaims, Clients: clients, Claims: perRound, Duration: 2 * time.Second,
		Rounds: true, Release: true, Verify: true, VerifyConns: clients, Phases: &phases}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rounds, %d claims in %s timed (%.0f/s), %d released in %s, %s wall",
		res.Rounds, res.Claims, res.Elapsed, res.PerSecond, res.Released, res.ReleaseTime, res.Wall)
	if res.Rounds < 2 || res.Errors != 0 || res.NoFit != 0 || res.GaveUp != 0 {
		t.Fatalf("%d rounds, %d errors (%s), %d found no candidate, %d gave up", res.Rounds, res.Errors, res.Error, res.NoFit, res.GaveUp)
	}
	if v := res.Verify; v == nil || !v.OK || !v.UsageMatches {
		t.Errorf("check after the last round: %+v", v)
	}
	if res.Released != res.Claims {
		t.Errorf("released %d of %d claims", res.Released, res.Claims)
	}
	checkReleased(t, c, res)
	v := Verify(ctx, c, clients, nil)
	if !v.OK {
		t.Errorf("after the run: %+v", v)
	}
	for class, n := range v.Used {
		if n != 0 {
			t.Errorf("after the final release %s usage %d", class, n)
		}
	}
	checkPhases(t, &phases, res.Rounds)
}

// TestMainClaimsRounds: the command line's --rounds and --release, with
// the CPU of --pid and --db-pid counted over the timed claiming only, and
// the report saying so, in text and JSON.
func TestMainClaimsRounds(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 4}, io.Discard); err != nil {
		t.Fatal(err)
	}
	f.deleteDelay.Store(int64(5 * time.Millisecond))
	file := filepath.Join(t.TempDir(), "claims.json")
	self := strconv.Itoa(os.Getpid()) // the fake server is this process
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"claims", "--url", srv.URL, "--mode", "claims", "--clients", "3",
		"--claims", "12", "--duration", "500ms", "--rounds", "--release", "--pid", self, "--db-pid", self, "-q", "--json", file}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	r, err := ReadReport(file)
	if err != nil {
		t.Fatal(err)
	}
	cl := r.Claims
	if cl == nil || cl.Rounds < 2 || cl.Released != cl.Claims || len(f.consumers) != 0 || cl.Verify == nil || !cl.Verify.OK {
		t.Fatalf("report %+v, %d consumers left", cl, len(f.consumers))
	}
	for _, m := range []*MemReport{r.Memory, r.Database} {
		if m == nil || m.CPUCounted < 0.5 || m.CPUExcluded <= 0 {
			t.Errorf("CPU window: %+v", m)
		}
	}
	params, _ := r.Params.(map[string]any)
	if params["rounds"] != true || params["release"] != true {
		t.Errorf("params %v", r.Params)
	}
	for _, want := range []string{" rounds, ", "consumers released (untimed", "server CPU per claim (timed claiming only: ",
		"database CPU per claim (timed claiming only: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	t.Log("\n" + out.String())
	if code := Main(context.Background(), []string{"claims", "--url", srv.URL, "--rounds", "--duration", "1s", "-q"}, &out, &errOut); code != 1 {
		t.Errorf("--rounds without --claims: exit %d", code)
	}
}
