package load

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi/client"
)

func testClient(url string) *Client {
	return NewClient(ClientConfig{URL: url, Token: "admin", Timeout: 10 * time.Second})
}

func TestSeed(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	res, err := Seed(context.Background(), c, SeedParams{Nodes: 25, Workers: 4}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Providers != 25 || res.Requests != 1+25*3+3 {
		t.Errorf("seed result %+v", res)
	}
	if len(f.providers) != 25 || f.badHeaders != 0 {
		t.Fatalf("%d providers, %d requests with wrong headers", len(f.providers), f.badHeaders)
	}
	if got := f.withTrait(BenchTrait); strings.Join(got, ",") != "bench-cn-00000,bench-cn-00010,bench-cn-00020" {
		t.Errorf("providers with the trait: %v", got)
	}
	for i := 0; i < 25; i++ {
		p := f.providers[NodeUUID(i)]
		if p == nil || p.Name != NodeName(i) {
			t.Fatalf("node %d missing", i)
		}
		if len(p.aggs) != 1 || p.aggs[0] != AggregateUUID(i%10) {
			t.Errorf("node %d aggregates %v", i, p.aggs)
		}
		if p.inv["VCPU"].AllocationRatio != 4 || p.inv["MEMORY_MB"].Reserved != 4096 || p.inv["DISK_GB"].Total != 4000 {
			t.Errorf("node %d inventory %+v", i, p.inv)
		}
	}
	// A rerun goes through the "already exists" path and changes nothing.
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 26, Workers: 3}, io.Discard); err != nil {
		t.Fatalf("reseed: %v", err)
	}
	if len(f.providers) != 26 {
		t.Errorf("after reseed %d providers, want 26", len(f.providers))
	}
}

func TestSeedNestedAndWide(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := SeedNested(context.Background(), c, NestedParams{Trees: 3}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if len(f.providers) != 21 {
		t.Fatalf("%d providers, want 3 trees of 7", len(f.providers))
	}
	_, ids := NestedTree(2)
	if p := f.providers[ids.FPGA[1]]; p == nil || p.ParentUUID != ids.NUMA[1] || p.inv["FPGA"].Total != 1 {
		t.Errorf("fpga of tree 2 numa 1: %+v", p)
	}
	if p := f.providers[ids.NUMA[0]]; p == nil || p.ParentUUID != ids.Root || !strings.Contains(strings.Join(p.traits, ","), "HW_NUMA_ROOT") {
		t.Errorf("numa 0 of tree 2: %+v", p)
	}
	root, _, err := SeedWide(context.Background(), c, WideParams{Children: 5, Classes: 2})
	if err != nil {
		t.Fatal(err)
	}
	children := 0
	for _, p := range f.providers {
		if p.ParentUUID == root {
			children++
			if len(p.inv) != 1 {
				t.Errorf("wide child inventory %v", p.inv)
			}
		}
	}
	if children != 5 || !f.classes["CUSTOM_WIDE_0"] || !f.classes["CUSTOM_WIDE_1"] {
		t.Errorf("%d wide children, classes %v", children, f.classes)
	}
}

func TestRunClaimsRetriesAndVerifies(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 3}, io.Discard); err != nil {
		t.Fatal(err)
	}
	f.conflictPuts = 3
	res, err := RunClaims(context.Background(), c, ClaimsParams{Clients: 4, Claims: 10, Pick: "random", Verify: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Claims != 10 || res.Conflicts != 3 || res.Errors != 0 || res.GaveUp != 0 {
		t.Errorf("claims result %+v", res)
	}
	if res.Latency.N != 10 || res.PutTime.N != 13 || res.GetTime.N != 13 {
		t.Errorf("latency samples: claims %d, puts %d, gets %d", res.Latency.N, res.PutTime.N, res.GetTime.N)
	}
	v := res.Verify
	if v == nil || !v.OK || !v.UsageMatches || v.Providers != 3 || v.Used["VCPU"] != 40 {
		t.Errorf("verify %+v", v)
	}
}

func TestRunClaimsStopsWhenFull(t *testing.T) {
	_, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 2}, io.Discard); err != nil {
		t.Fatal(err)
	}
	// 15 claims of 16 GiB fit in a node's 252 GiB: 30 in all, then none.
	res, err := RunClaims(context.Background(), c, ClaimsParams{Clients: 3, Duration: 20 * time.Second, Verify: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Claims != 30 || res.NoFit == 0 || !res.Verify.OK {
		t.Errorf("claims %d, no-fit %d, verify %+v", res.Claims, res.NoFit, res.Verify)
	}
}

func TestRunClaimsGivesUp(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 1}, io.Discard); err != nil {
		t.Fatal(err)
	}
	f.conflictPuts = 1000
	res, err := RunClaims(context.Background(), c, ClaimsParams{Clients: 1, Claims: 2, Retries: 2}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Claims != 0 || res.GaveUp != 2 || res.Conflicts != 6 {
		t.Errorf("claims result %+v", res)
	}
}

// TestRunClaimsPost drives POST /claims: retries on a 409 conflict,
// counts failures by status, stops when nothing fits, and checks usage
// growth against the claims made on a cloud that had usage before.
func TestRunClaimsPost(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 2}, io.Discard); err != nil {
		t.Fatal(err)
	}
	// Usage from before the run: one two-step claim.
	if _, err := RunClaims(context.Background(), c, ClaimsParams{Clients: 1, Claims: 1}, io.Discard); err != nil {
		t.Fatal(err)
	}
	f.conflictPuts, f.failClaims, f.noHostClaims = 2, 1, 3
	res, err := RunClaims(context.Background(), c, ClaimsParams{Mode: ModeClaims, Clients: 3, Duration: 20 * time.Second, Verify: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// 30 of the flavor fit in two nodes; one was taken before, one claim
	// failed with a 500, two conflicts and three spurious "no valid host"
	// answers were retried; then a claim that met a full cloud was
	// answered so 11 times before the run stopped.
	if res.Claims != 29 || res.NoFit == 0 || res.Conflicts != 2 || res.Errors != 1 || res.FailedByStatus["POST 500"] != 1 {
		t.Errorf("claims result %+v", res)
	}
	if res.NoValidHost < 3+11*res.NoFit {
		t.Errorf("%d no_valid_host answers for %d full claims", res.NoValidHost, res.NoFit)
	}
	if res.ServerAttempts != 29 || res.Pick != "server" || res.GetTime.N != 0 {
		t.Errorf("server attempts %d, pick %q, %d GETs", res.ServerAttempts, res.Pick, res.GetTime.N)
	}
	if v := res.Verify; v == nil || !v.OK || !v.UsageMatches || v.Used["VCPU"] != 4*30 {
		t.Errorf("verify %+v", v)
	}
	var out bytes.Buffer
	PrintClaims(&out, res)
	for _, want := range []string{"claims (claims): 3 clients", "failures: POST 500: 1", "overcommit check: OK"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestVerifyFindsOvercommit(t *testing.T) {
	f, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 2}, io.Discard); err != nil {
		t.Fatal(err)
	}
	f.consumers["x"] = map[string]map[string]int{NodeUUID(1): {"VCPU": 257}}
	v := Verify(context.Background(), c, 2, nil)
	if v.OK || len(v.Overcommits) != 1 || v.Overcommits[0].Provider != NodeUUID(1) || v.Overcommits[0].Capacity != 256 {
		t.Errorf("verify %+v", v)
	}
	var buf bytes.Buffer
	PrintVerify(&buf, v)
	if !strings.Contains(buf.String(), "OVERCOMMITTED") {
		t.Errorf("verdict %q", buf.String())
	}
}

func TestRunQueries(t *testing.T) {
	_, srv := newFake(t)
	c := testClient(srv.URL)
	if _, err := Seed(context.Background(), c, SeedParams{Nodes: 12}, io.Discard); err != nil {
		t.Fatal(err)
	}
	qs := []Query{CandidateQueries()[0], {"limited", CandidatesQuery{Groups: []Group{{Resources: []Amount{{"VCPU", 1}}}}, Limit: 5}.Path()}, CandidateQueries()[4]}
	rs := RunQueries(context.Background(), c, qs, QueryParams{Iterations: 3}, nil)
	want := []struct {
		count int
		of    string
	}{{12, "candidates"}, {5, "candidates"}, {12, "providers"}}
	for i, r := range rs {
		if r.Failed() || r.Stats.N != 3 || r.Count != want[i].count || r.CountOf != want[i].of || r.Bytes == 0 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
}

func TestClientTimeoutAndStatus(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"errors":[]}`))
	}))
	defer slow.Close()
	c := NewClient(ClientConfig{URL: slow.URL + "/", Timeout: 100 * time.Millisecond})
	_, err := c.Do(context.Background(), http.MethodGet, "/slow", nil)
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("slow answer: %v, want ErrTimeout", err)
	}
	r, err := c.Do(context.Background(), http.MethodGet, "/fast", nil)
	if !client.IsStatus(err, http.StatusConflict) || r == nil || r.Status != 409 {
		t.Errorf("409 answer: %v", err)
	}
	if _, err := c.Do(context.Background(), http.MethodGet, "/fast", nil, http.StatusConflict); err != nil {
		t.Errorf("409 wanted: %v", err)
	}
	// A query that times out is reported as such, once, not retried.
	rs := RunQueries(context.Background(), c, []Query{{"slow", "/slow"}}, QueryParams{Iterations: 5, NoWarmup: true, StopAfterTimeout: true}, nil)
	if !rs[0].Failed() || rs[0].Timeouts != 1 {
		t.Errorf("slow query result %+v", rs[0])
	}
	var buf bytes.Buffer
	PrintResults(&buf, rs, 100*time.Millisecond)
	if !strings.Contains(buf.String(), "timeout (>100ms)") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestMainCandidatesAndCompare(t *testing.T) {
	_, srv := newFake(t)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	run := func(args ...string) int {
		out.Reset()
		errOut.Reset()
		return Main(context.Background(), args, &out, &errOut)
	}
	if code := run("seed", "--url", srv.URL, "--nodes", "20", "-q", "--json", filepath.Join(dir, "a", "x.json")); code != 1 {
		t.Errorf("writing into a missing directory: exit %d", code)
	}
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.MkdirAll(filepath.Join(dir, "b"), 0o755)
	if code := run("seed", "--url", srv.URL, "--nodes", "20", "-q", "--json", filepath.Join(dir, "a", "seed.json")); code != 0 {
		t.Fatalf("seed: exit %d: %s", code, errOut.String())
	}
	for _, col := range []string{"a", "b"} {
		code := run("candidates", "--url", srv.URL, "--iterations", "2", "--only", "a-flavor,e-providers", "-q",
			"--label", col, "--json", filepath.Join(dir, col, "n20-candidates.json"))
		if code != 0 {
			t.Fatalf("candidates: exit %d: %s", code, errOut.String())
		}
	}
	if !strings.Contains(out.String(), "a-flavor") || !strings.Contains(out.String(), "20 candidates") {
		t.Errorf("candidates table:\n%s", out.String())
	}
	if code := run("compare", "x="+filepath.Join(dir, "a"), "y="+filepath.Join(dir, "b")); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errOut.String())
	}
	table := out.String()
	for _, want := range []string{"measurement", "x", "y", "n20-candidates: a-flavor median", "seed: seed", "20 in"} {
		if !strings.Contains(table, want) {
			t.Errorf("compare table lacks %q:\n%s", want, table)
		}
	}
	if code := run("nosuch"); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
	if code := run("candidates", "--url", srv.URL, "--only", "zzz", "-q"); code != 1 {
		t.Errorf("unknown query: exit %d", code)
	}
}

// TestMeterPlainLines: off a terminal the meter writes whole lines, no
// carriage returns or escape codes.
func TestMeterPlainLines(t *testing.T) {
	var buf bytes.Buffer
	m := NewMeter(&buf, "seed", "nodes", 10, 0)
	if m.Every() != 5*time.Second {
		t.Errorf("interval off a terminal: %s", m.Every())
	}
	m.Show(5, "1 conflicts")
	m.Done()
	got := buf.String()
	if !strings.HasPrefix(got, "seed: 5/10 nodes, ") || !strings.HasSuffix(got, ", 1 conflicts\n") || strings.ContainsAny(got, "\r\033") {
		t.Errorf("meter line %q", got)
	}
}
