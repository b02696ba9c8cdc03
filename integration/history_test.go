package integration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/berthd/berth/internal/testing/patronitest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

// The history tests (issue 33): concurrent clients make claims, deletes,
// inventory, trait and aggregate writes, and read generations, usages,
// provider lists and allocation candidates, each request through any of
// three berthd processes, while the test kills a berthd with -9,
// partitions one from PostgreSQL, or fails PostgreSQL over. Every
// answer is recorded with when it was asked and answered; the history is
// then checked against the promise of docs/architecture.md ("Reads
// across replicas"): with Porcupine, each provider is a register
// (generation, usage, capacity, traits, aggregates) whose history must be
// linearizable, so that every read reflects every write answered before
// it began, whichever process served either; and against the ledger's
// invariants in the database: no provider over capacity, every
// acknowledged claim held exactly once, nothing held that was refused or
// freed. A write whose answer was lost (a killed berthd, a 503) may or
// may not have happened: the model allows both, from its call on.
// Beside it runs a second workload, preemption and gangs, on hosts of
// its own and with checks of its own (history_spot_test.go).
//
// The short runs are part of the suite; scripts/history-soak.sh runs them
// for longer (BERTH_HISTORY_SECONDS, BERTH_HISTORY_ROUNDS), with the
// figures in docs/reliability.md.
const (
	histProcs     = 3
	histProviders = 4
	histClients   = 12
	histTotal     = 8 // each provider's initial VCPU
	histTimeout   = 20 * time.Second
	histRetries   = 60 // retries of a claim or delete whose outcome was lost
)

var (
	histTraits = []string{"CUSTOM_HIST_A", "CUSTOM_HIST_B", "CUSTOM_HIST_C"}
	histAggs   = []string{"a0000000-0000-4000-8000-000000000001", "a0000000-0000-4000-8000-000000000002"}
)

// histState is one provider as the model has it.
type histState struct {
	gen, used, total int64
	traits, aggs     string // sorted, comma-separated
}

// Operation kinds.
const (
	opClaim      = "claim"
	opDelete     = "delete"
	opInventory  = "inventory"
	opTraits     = "traits"
	opAggregates = "aggregates"
	opReadGen    = "read-generation" // GET /resource_providers/{uuid}, or a list's entry
	opReadUsage  = "read-usages"
	opReadMember = "read-member-of" // a provider in or out of a member_of list
	opCandidate  = "candidate"      // a provider in allocation candidates
	opNoCand     = "no-candidate"   // a provider absent from them
)

// histIn is an operation on one provider.
type histIn struct {
	rp   int
	kind string
	via  string // the request, for the report
	proc int    // the berthd that answered (-1: none did)
	// gen is the generation a write names; total an inventory's; set a
	// trait or aggregate set's (sorted, comma-separated); agg the
	// member_of a list asked for.
	gen, total int64
	set, agg   string
}

// Write outcomes.
const (
	outcomeOK       = "ok"
	outcomeConflict = "conflict" // 409: the generation did not match
	outcomeUnknown  = "unknown"  // the answer was lost
)

// histOut is what the operation answered.
type histOut struct {
	outcome          string
	status           int // the HTTP status (0: no answer), for the report
	gen, used, total int64
	set              string
	member           bool
}

// histModel is the per-provider register.
var histModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		parts := make([][]porcupine.Operation, histProviders)
		for _, op := range h {
			rp := op.Input.(histIn).rp
			parts[rp] = append(parts[rp], op)
		}
		return parts
	},
	Init: func() []any {
		return []any{histState{gen: 1, total: histTotal}}
	},
	Step: func(state, input, output any) []any {
		return histStep(state.(histState), input.(histIn), output.(histOut))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(histIn), output.(histOut)
		return fmt.Sprintf("%s %s (berthd %d) gen=%d total=%d set=%q -> %+v", in.kind, in.via, in.proc, in.gen, in.total, in.set, out)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(histState)) },
	Hash: func(state any) uint64 {
		s := state.(histState)
		return uint64(s.gen)<<32 ^ uint64(s.used)<<16 ^ uint64(s.total)<<8 ^ uint64(len(s.traits))<<4 ^ uint64(len(s.aggs))
	},
}

// histStep is the sequential specification: the states s may move to
// when in answers out, none if it cannot.
func histStep(s histState, in histIn, out histOut) []any {
	maybe := func(next histState, allowed bool) []any {
		switch {
		case out.outcome == outcomeUnknown && allowed:
			return []any{s, next}
		case out.outcome == outcomeUnknown, out.outcome == outcomeConflict && s.gen != in.gen:
			return []any{s}
		case out.outcome == outcomeOK && allowed:
			return []any{next}
		}
		return nil
	}
	next := s
	switch in.kind {
	case opClaim:
		next.gen, next.used = s.gen+1, s.used+1
		return maybe(next, s.used+1 <= s.total)
	case opDelete:
		next.used = s.used - 1
		return maybe(next, s.used >= 1)
	case opInventory:
		next.gen, next.total = s.gen+1, in.total
		ok := s.gen == in.gen && (out.outcome != outcomeOK || out.gen == next.gen)
		return maybe(next, ok)
	case opTraits:
		next.traits = in.set
		if in.set != s.traits {
			next.gen = s.gen + 1
		}
		ok := s.gen == in.gen && (out.outcome != outcomeOK || out.gen == next.gen)
		return maybe(next, ok)
	case opAggregates:
		next.gen, next.aggs = s.gen+1, in.set
		ok := s.gen == in.gen && (out.outcome != outcomeOK || out.gen == next.gen)
		return maybe(next, ok)
	case opReadGen:
		return when(s, out.gen == s.gen)
	case opReadUsage:
		return when(s, out.gen == s.gen && out.used == s.used)
	case opReadMember:
		member := slices.Contains(strings.Split(s.aggs, ","), in.agg)
		return when(s, out.member == member && (!member || out.gen == s.gen))
	case opCandidate:
		return when(s, out.used == s.used && out.total == s.total && out.set == s.traits && s.used+1 <= s.total)
	case opNoCand:
		return when(s, s.used+1 > s.total)
	}
	return nil
}

func when(s histState, ok bool) []any {
	if ok {
		return []any{s}
	}
	return nil
}

// histRig is three berthd processes, the clients' record, and the
// faults' switches.
type histRig struct {
	t      *testing.T
	bin    string
	dbURLs []string // per process: the database URL it is started with
	addrs  []string
	client *http.Client
	start  time.Time
	rps    []string

	mu       sync.Mutex
	procs    []*berthd
	started  []*berthd // every process started, for the logs
	events   []histEvent
	ops      []porcupine.Operation
	claims   []*histClaim
	failures []string
	counts   map[string]int

	spot *spotRig // the second workload: preemption and gangs (history_spot_test.go)
}

// histClaim is what a client believes about one consumer.
type histClaim struct {
	consumer string
	rp       int // -1: not known
	call     int64
	state    string
}

// Claim states.
const (
	claimHeld    = "held"
	claimLost    = "claim-lost" // its answer never came: held or not
	claimRefused = "refused"
	claimFreed   = "freed"
	claimFreeing = "free-lost" // its delete's answer never came
)

func newHistRig(t *testing.T, dbURLs []string) *histRig {
	r := &histRig{t: t, bin: buildBerthd(t), dbURLs: dbURLs, client: &http.Client{Timeout: histTimeout},
		counts: map[string]int{}}
	for i := range histProcs {
		var b *berthd
		var err error
		for attempt := 1; attempt <= 3; attempt++ {
			if b, err = tryStartBerthd(t, r.bin, dbURLs[i]); err == nil || !strings.Contains(err.Error(), "address already in use") {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		r.procs = append(r.procs, b)
		r.started = append(r.started, b)
		r.addrs = append(r.addrs, strings.TrimPrefix(b.url, "http://"))
	}
	t.Cleanup(r.client.CloseIdleConnections)
	b := r.procs[0]
	for _, tr := range histTraits {
		b.must(t, 201, "PUT", "/traits/"+tr, "", nil, nil)
	}
	for i := range histProviders {
		rp := fmt.Sprintf("b3300000-0000-4000-8000-%012d", i+1)
		r.rps = append(r.rps, rp)
		b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": fmt.Sprintf("hist%d", i), "uuid": rp}, nil)
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "", map[string]any{
			"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": histTotal}}}, nil)
	}
	r.setupSpot()
	r.start = time.Now()
	return r
}

// now is the history's clock: nanoseconds since the rig started.
func (r *histRig) now() int64 { return int64(time.Since(r.start)) }

func (r *histRig) failf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) < 30 {
		r.failures = append(r.failures, fmt.Sprintf(format, args...))
	}
}

func (r *histRig) count(what string) {
	r.mu.Lock()
	r.counts[what]++
	r.mu.Unlock()
}

// record adds an operation on provider in.rp to the history.
func (r *histRig) record(call, ret int64, in histIn, out histOut) {
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{Input: in, Output: out, Call: call, Return: ret})
	r.mu.Unlock()
}

// reply is one request's answer: status 0 when none came (the
// connection failed or timed out).
type reply struct {
	status int
	body   []byte
}

// lost reports whether the request's outcome is unknown: no answer, or
// a 503 (the database was out of reach; the write may have committed).
func (a reply) lost() bool { return a.status == 0 || a.status == http.StatusServiceUnavailable }

// do sends one request to berthd i. A 5xx other than a clean 503 is a
// failure.
func (r *histRig) do(i int, method, path string, body any) reply {
	var rd *bytes.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), histTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.addrs[i]+path, rd)
	if err != nil {
		panic(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.count("no answer")
		return reply{}
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		r.count("no answer")
		return reply{}
	}
	a := reply{status: resp.StatusCode, body: buf.Bytes()}
	if a.status == http.StatusServiceUnavailable {
		if msg := check503(method, resp.Header, a.body); msg != "" {
			r.failf("berthd %d: %s %s: %s", i, method, path, msg)
		}
		r.count("503")
	} else if a.status >= 500 {
		r.failf("berthd %d: %s %s: %d %s", i, method, path, a.status, a.body)
	}
	return a
}

// histClient makes random requests through random berthd processes
// until stop closes.
func (r *histRig) histClient(ci int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(ci), uint64(time.Now().UnixNano())))
	var held []*histClaim
	for {
		select {
		case <-stop:
			return
		default:
		}
		rp, via := rng.IntN(histProviders), rng.IntN(histProcs)
		switch k := rng.IntN(100); {
		case k < 25:
			if c := r.claim(rng, ci); c.state == claimHeld {
				held = append(held, c)
			}
		case k < 40 && len(held) > 0:
			i := rng.IntN(len(held))
			c := held[i]
			held = slices.Delete(held, i, i+1)
			r.free(rng, c)
		case k < 50:
			r.writeProvider(via, rp, opInventory, rng)
		case k < 57:
			r.writeProvider(via, rp, opTraits, rng)
		case k < 63:
			r.writeProvider(via, rp, opAggregates, rng)
		default:
			r.read(via, rp, rng)
		}
	}
}

// claim claims one VCPU for a new consumer, through a random berthd,
// again through another after each lost answer.
func (r *histRig) claim(rng *rand.Rand, ci int) *histClaim {
	c := &histClaim{consumer: uuid.NewString(), rp: -1, call: r.now(), state: claimLost}
	r.mu.Lock()
	r.claims = append(r.claims, c)
	r.mu.Unlock()
	body := claimBody(c.consumer, fmt.Sprintf("hist-%d", ci), resources{"VCPU": 1})
	for range histRetries {
		via := rng.IntN(histProcs)
		a := r.do(via, "POST", "/claims", body)
		switch {
		case a.status == http.StatusOK:
			var doc allocationsDoc
			if err := json.Unmarshal(a.body, &doc); err != nil || len(doc.Allocations) != 1 {
				r.failf("POST /claims answer: %v: %s", err, a.body)
				return c
			}
			for rp := range doc.Allocations {
				c.rp = slices.Index(r.rps, rp)
			}
			c.state = claimHeld
			r.record(c.call, r.now(), histIn{rp: c.rp, kind: opClaim, via: "POST /claims", proc: via},
				histOut{outcome: outcomeOK, status: a.status})
			return c
		case !a.lost():
			c.state = claimRefused // nothing written: checked in the database
			r.count("claim refused")
			return c
		}
		time.Sleep(300 * time.Millisecond)
	}
	return c // still unknown: settled from the database at the end
}

// free deletes c's allocations, again after each lost answer; a 404
// after a lost answer means the lost one did it.
func (r *histRig) free(rng *rand.Rand, c *histClaim) {
	call := r.now()
	for attempt := range histRetries {
		via := rng.IntN(histProcs)
		a := r.do(via, "DELETE", "/allocations/"+c.consumer, nil)
		switch {
		case a.status == http.StatusNoContent, a.status == http.StatusNotFound && attempt > 0:
			c.state = claimFreed
			r.record(call, r.now(), histIn{rp: c.rp, kind: opDelete, via: "DELETE /allocations", proc: via},
				histOut{outcome: outcomeOK, status: a.status})
			return
		case !a.lost():
			r.failf("DELETE of held consumer %s: %d %s", c.consumer, a.status, a.body)
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	c.state = claimFreeing
	r.record(call, math.MaxInt64, histIn{rp: c.rp, kind: opDelete, via: "DELETE /allocations (lost)", proc: -1},
		histOut{outcome: outcomeUnknown})
}

// writeProvider reads provider rp's generation through berthd via, then
// writes its inventory, traits or aggregates with that generation
// through another berthd.
func (r *histRig) writeProvider(via, rp int, kind string, rng *rand.Rand) {
	gen, ok := r.readGeneration(via, rp)
	if !ok {
		return
	}
	in := histIn{rp: rp, kind: kind, gen: gen}
	path := "/resource_providers/" + r.rps[rp]
	var body map[string]any
	switch kind {
	case opInventory:
		in.total = histTotal + int64(rng.IntN(3)) - 1
		path += "/inventories"
		body = map[string]any{"resource_provider_generation": gen,
			"inventories": map[string]any{"VCPU": map[string]any{"total": in.total}}}
	case opTraits:
		set := subset(rng, histTraits)
		in.set = strings.Join(set, ",")
		path += "/traits"
		body = map[string]any{"resource_provider_generation": gen, "traits": set}
	case opAggregates:
		set := subset(rng, histAggs)
		in.set = strings.Join(set, ",")
		path += "/aggregates"
		body = map[string]any{"resource_provider_generation": gen, "aggregates": set}
	}
	in.via = "PUT " + path[strings.LastIndex(path, "/"):]
	w := (via + 1 + rng.IntN(histProcs-1)) % histProcs
	in.proc = w
	call := r.now()
	a := r.do(w, "PUT", path, body)
	ret := r.now()
	var doc struct {
		Generation int64 `json:"resource_provider_generation"`
	}
	switch {
	case a.lost():
		r.record(call, math.MaxInt64, in, histOut{outcome: outcomeUnknown, status: a.status})
	case a.status == http.StatusConflict:
		r.record(call, ret, in, histOut{outcome: outcomeConflict, status: a.status})
	case a.status == http.StatusOK && json.Unmarshal(a.body, &doc) == nil:
		r.record(call, ret, in, histOut{outcome: outcomeOK, status: a.status, gen: doc.Generation})
	default:
		r.failf("%s through berthd %d: %d %s", in.via, w, a.status, a.body)
	}
}

// subset is a random subset of names, sorted.
func subset(rng *rand.Rand, names []string) []string {
	var out []string
	for _, n := range names {
		if rng.IntN(2) == 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// readGeneration reads provider rp by uuid (GET
// /resource_providers/{uuid}) and records it.
func (r *histRig) readGeneration(via, rp int) (int64, bool) {
	call := r.now()
	a := r.do(via, "GET", "/resource_providers/"+r.rps[rp], nil)
	ret := r.now()
	var doc struct {
		Generation int64 `json:"generation"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
		r.unreadable(via, "GET /resource_providers/{uuid}", a)
		return 0, false
	}
	r.record(call, ret, histIn{rp: rp, kind: opReadGen, via: "GET /resource_providers/{uuid}", proc: via},
		histOut{status: a.status, gen: doc.Generation})
	return doc.Generation, true
}

// unreadable notes a read that did not answer 200: fine when its outcome
// was lost, a failure otherwise.
func (r *histRig) unreadable(via int, what string, a reply) {
	if !a.lost() {
		r.failf("%s through berthd %d: %d %s", what, via, a.status, a.body)
	}
}

// read makes one of the reads, through berthd via.
func (r *histRig) read(via, rp int, rng *rand.Rand) {
	switch rng.IntN(6) {
	case 0:
		r.readGeneration(via, rp)
	case 1:
		r.readUsages(via, rp)
	case 2:
		r.readList(via, "/resource_providers?uuid="+r.rps[rp], "")
	case 3:
		r.readList(via, "/resource_providers", "")
	case 4:
		agg := histAggs[rng.IntN(len(histAggs))]
		r.readList(via, "/resource_providers?member_of="+agg, agg)
	default:
		r.readCandidates(via)
	}
}

func (r *histRig) readUsages(via, rp int) {
	call := r.now()
	a := r.do(via, "GET", "/resource_providers/"+r.rps[rp]+"/usages", nil)
	ret := r.now()
	var doc struct {
		Generation int64     `json:"resource_provider_generation"`
		Usages     resources `json:"usages"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
		r.unreadable(via, "GET usages", a)
		return
	}
	r.record(call, ret, histIn{rp: rp, kind: opReadUsage, via: "GET /resource_providers/{uuid}/usages", proc: via},
		histOut{status: a.status, gen: doc.Generation, used: doc.Usages["VCPU"]})
}

// readList reads a provider list from the snapshot; with member_of agg,
// a provider listed is in agg and one not listed is not.
func (r *histRig) readList(via int, path, agg string) {
	call := r.now()
	a := r.do(via, "GET", path, nil)
	ret := r.now()
	var doc struct {
		Providers []struct {
			UUID       string `json:"uuid"`
			Generation int64  `json:"generation"`
		} `json:"resource_providers"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
		r.unreadable(via, "GET "+path, a)
		return
	}
	listed := map[int]int64{}
	for _, p := range doc.Providers {
		if i := slices.Index(r.rps, p.UUID); i >= 0 {
			listed[i] = p.Generation
		}
	}
	what := "GET " + path
	for i := range r.rps {
		gen, ok := listed[i]
		switch {
		case agg != "":
			r.record(call, ret, histIn{rp: i, kind: opReadMember, via: what, agg: agg, proc: via}, histOut{status: a.status, gen: gen, member: ok})
		case ok:
			r.record(call, ret, histIn{rp: i, kind: opReadGen, via: what, proc: via}, histOut{status: a.status, gen: gen})
		case !strings.Contains(path, "uuid=") || strings.Contains(path, r.rps[i]):
			r.failf("%s through berthd %d: provider %d missing", what, via, i)
		}
	}
}

// readCandidates reads GET /allocation_candidates for one VCPU: each
// provider is a candidate with its usage, capacity and traits, or is
// full.
func (r *histRig) readCandidates(via int) {
	const path = "/allocation_candidates?resources=VCPU:1"
	call := r.now()
	a := r.do(via, "GET", path, nil)
	ret := r.now()
	var doc struct {
		Summaries map[string]struct {
			Resources map[string]struct {
				Capacity int64 `json:"capacity"`
				Used     int64 `json:"used"`
			} `json:"resources"`
			Traits []string `json:"traits"`
		} `json:"provider_summaries"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
		r.unreadable(via, "GET "+path, a)
		return
	}
	for i, rp := range r.rps {
		s, ok := doc.Summaries[rp]
		if !ok {
			r.record(call, ret, histIn{rp: i, kind: opNoCand, via: "GET " + path, proc: via}, histOut{status: a.status})
			continue
		}
		traits := slices.Clone(s.Traits)
		slices.Sort(traits)
		r.record(call, ret, histIn{rp: i, kind: opCandidate, via: "GET " + path, proc: via}, histOut{
			status: a.status, used: s.Resources["VCPU"].Used, total: s.Resources["VCPU"].Capacity, set: strings.Join(traits, ",")})
	}
}

// run runs the clients, calls faults once they have warmed up, lets them
// go on for after, and stops them.
func (r *histRig) run(warmup, after time.Duration, faults func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for ci := range histClients {
		wg.Add(1)
		go func() { defer wg.Done(); r.histClient(ci, stop) }()
	}
	for ci := range spotClients {
		wg.Add(1)
		go func() { defer wg.Done(); r.spotClient(ci, stop) }()
	}
	time.Sleep(warmup)
	faults()
	time.Sleep(after)
	close(stop)
	wg.Wait()
}

// kill kills berthd i with SIGKILL, waits down, and starts it again on
// the same address and database.
func (r *histRig) kill(i int, down time.Duration) {
	r.mu.Lock()
	b := r.procs[i]
	r.mu.Unlock()
	if err := b.proc.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	<-b.exited
	r.event("berthd %d killed", i)
	time.Sleep(down)
	nb, err := startBerthdAt(r.t, r.bin, r.dbURLs[i], r.addrs[i])
	if err != nil {
		r.t.Fatalf("restart berthd %d: %v", i, err)
	}
	r.mu.Lock()
	r.procs[i] = nb
	r.started = append(r.started, nb)
	r.mu.Unlock()
	r.event("berthd %d restarted", i)
}

// check settles the claims whose outcome was lost from the database,
// checks the invariants there, and the history with Porcupine.
func (r *histRig) check(dbURL string) {
	t := r.t
	r.checkDatabase(dbURL)
	for _, f := range r.failures {
		t.Error(f)
	}
	res, info := porcupine.CheckOperationsVerbose(histModel.ToModel(), r.ops, time.Minute)
	byKind := map[string]int{}
	for _, op := range r.ops {
		byKind[op.Input.(histIn).kind]++
	}
	t.Logf("history: %d operations %v; requests: %v; checked: %v", len(r.ops), byKind, r.counts, res)
	switch res {
	case porcupine.Illegal:
		path := fmt.Sprintf("%s/history-%s.html", os.TempDir(), strings.ReplaceAll(t.Name(), "/", "_"))
		if f, err := os.Create(path); err == nil {
			_ = porcupine.Visualize(histModel.ToModel(), info, f)
			f.Close()
		}
		saved, err := r.save()
		if err != nil {
			saved = "not saved: " + err.Error()
		}
		t.Errorf("the history is not linearizable: a read saw a state no order of the writes explains (visualised in %s; recorded in %s, with the berthd logs beside it)", path, saved)
		r.explain()
	case porcupine.Unknown:
		t.Errorf("the linearizability check did not finish in its time")
	}
	if res != porcupine.Illegal && t.Failed() {
		saved, err := r.save()
		if err != nil {
			saved = "not saved: " + err.Error()
		}
		t.Logf("the history is recorded in %s, with the berthd logs beside it", saved)
	}
}

// checkDatabase checks the claims against the database: every one
// acknowledged and not freed is held once, every refused or freed one
// holds nothing, one whose outcome was lost is held once or not at all
// (and, if held, joins the history as an unknown write); no provider is
// over capacity.
func (r *histRig) checkDatabase(dbURL string) {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	held := map[string]struct {
		rp   string
		used int64
	}{}
	for _, rp := range r.rps {
		_, allocs, err := store.Allocations.AllocationsByProvider(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		var used int64
		for _, a := range allocs {
			if _, dup := held[a.ConsumerUUID]; dup {
				t.Errorf("consumer %s holds more than one allocation", a.ConsumerUUID)
			}
			held[a.ConsumerUUID] = struct {
				rp   string
				used int64
			}{rp, a.Used}
			used += a.Used
		}
		invs, err := store.Providers.InventoryList(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		for _, inv := range invs.Inventories {
			if capacity := float64(inv.Total-inv.Reserved) * inv.AllocationRatio; float64(used) > capacity {
				// Only an inventory lowered below usage may do that:
				// the model checks that no claim was accepted beyond
				// capacity.
				t.Logf("provider %s: usage %d over capacity %.0f (an inventory write lowered it)", rp, used, capacity)
			}
		}
	}
	states := map[string]int{}
	for _, c := range r.claims {
		states[c.state]++
		h, ok := held[c.consumer]
		switch {
		case c.state == claimHeld && (!ok || h.rp != r.rps[c.rp] || h.used != 1):
			t.Errorf("acknowledged claim %s: the database holds %+v (present %v), want 1 VCPU on %s", c.consumer, h, ok, r.rps[c.rp])
		case (c.state == claimRefused || c.state == claimFreed) && ok:
			t.Errorf("%s claim %s: the database holds %+v", c.state, c.consumer, h)
		case c.state == claimLost && ok:
			rp := slices.Index(r.rps, h.rp)
			r.ops = append(r.ops, porcupine.Operation{Input: histIn{rp: rp, kind: opClaim, via: "POST /claims (lost)", proc: -1},
				Output: histOut{outcome: outcomeUnknown}, Call: c.call, Return: math.MaxInt64})
		}
	}
	t.Logf("claims by final state: %v", states)

	spot := map[string]spotHeld{}
	for _, rp := range r.spot.rps {
		_, allocs, err := store.Allocations.AllocationsByProvider(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		var used int64
		for _, a := range allocs {
			if _, dup := spot[a.ConsumerUUID]; dup {
				t.Errorf("consumer %s holds more than one allocation", a.ConsumerUUID)
			}
			spot[a.ConsumerUUID] = spotHeld{rp, a.Used}
			used += a.Used
		}
		if used > spotTotal { // no inventory write lowers these
			t.Errorf("provider %s: %d slots used of %d", rp, used, spotTotal)
		}
	}
	r.checkSpot(0, spot)
}

// histDuration is how long the clients run after the faults: short in
// the suite, BERTH_HISTORY_SECONDS for a soak.
func histDuration(def time.Duration) time.Duration {
	if s, err := strconv.Atoi(os.Getenv("BERTH_HISTORY_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return def
}

// histRounds is how many times the faults repeat: 1 in the suite,
// BERTH_HISTORY_ROUNDS for a soak.
func histRounds() int {
	if n, err := strconv.Atoi(os.Getenv("BERTH_HISTORY_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// TestHistoryKillAndPartition: three berthd processes on one database,
// the third through a proxy; berthd 0 is killed with -9 and restarted,
// then the third is cut off from PostgreSQL for a while. The history
// must be linearizable per provider, and the database must hold exactly
// what the clients were told.
func TestHistoryKillAndPartition(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	proxy, viaProxy := ledgertest.NewProxy(t, dbURL)
	r := newHistRig(t, []string{dbURL, dbURL, viaProxy})
	r.run(2*time.Second, histDuration(3*time.Second), func() {
		for range histRounds() {
			r.kill(0, time.Second)
			time.Sleep(2 * time.Second)
			proxy.Cut()
			r.event("berthd 2 cut off PostgreSQL")
			time.Sleep(3 * time.Second)
			proxy.Restore()
			r.event("berthd 2 reconnected")
			time.Sleep(2 * time.Second)
		}
	})
	r.check(dbURL)
}

// TestHistoryFailover: three berthd processes on a Patroni cluster;
// berthd 1 is killed with -9 and restarted, then the primary's
// postmaster is killed and Patroni promotes the synchronous standby.
// The same checks as TestHistoryKillAndPartition.
func TestHistoryFailover(t *testing.T) {
	c, url := startPatroni(t, patronitest.Options{})
	r := newHistRig(t, []string{url, url, url})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r.run(2*time.Second, histDuration(3*time.Second), func() {
		for range histRounds() {
			// The old primary must be back as the synchronous standby
			// before the next round's failover: until then Patroni
			// has no node to fail over to.
			if err := c.WaitSync(ctx); err != nil {
				t.Fatal(err)
			}
			r.kill(1, time.Second)
			time.Sleep(2 * time.Second)
			r.event("failover: killing the primary")
			old, primary, err := c.FailOver(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r.event("failover: node %d writable (was node %d)", primary, old)
			time.Sleep(3 * time.Second)
		}
	})
	r.check(url)
	// The catch-ups noticed the new timeline (changelog.go).
	r.mu.Lock()
	defer r.mu.Unlock()
	noticed := 0
	for _, b := range r.procs {
		noticed += strings.Count(b.stderr.String(), "on another timeline")
	}
	if noticed == 0 {
		t.Error("no berthd noticed the new timeline after the failover")
	}
}

// TestHistoryLostCommit: the commits a failover loses, made on purpose.
// Three berthd processes on a Patroni cluster, as TestHistoryFailover;
// the primary's WAL senders are stopped, so that every commit waits for
// the synchronous standby, and for 2 s (and until one did) every such
// wait is cancelled,
// which commits it on the primary alone (its client gets a 503: an
// unknown outcome). Then the primary is killed and the standby, which
// never got those commits, is promoted: they never happened. No read may
// have shown one (ledger/internal/core/replication.go, "Reads that outlive a
// failover"), so the history must be linearizable. TestHistoryFailover
// meets the same by chance: the commits under way when the postmaster
// dies are abandoned there and stay visible to its backends until they
// exit. TestHistoryReplay replays what this test recorded before Berth
// confirmed its reads.
func TestHistoryLostCommit(t *testing.T) {
	c, url := startPatroni(t, patronitest.Options{})
	r := newHistRig(t, []string{url, url, url})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cancelled := 0
	r.run(2*time.Second, histDuration(3*time.Second), func() {
		if err := c.WaitSync(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := c.Primary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.StallReplication(ctx); err != nil {
			t.Fatal(err)
		}
		r.event("replication stalled")
		// 2 s, and until a wait was cancelled (a minute at most: only
		// a hung cluster takes that long).
		start := time.Now()
		for since := time.Duration(0); since < 2*time.Second || cancelled == 0 && since < time.Minute; since = time.Since(start) {
			time.Sleep(100 * time.Millisecond)
			out, err := c.Psql(ctx, p, "berth", `SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(out)
			if err != nil {
				t.Fatalf("cancelled waits: %q", out)
			}
			cancelled += n
		}
		r.event("failover: killing the primary (%d waits for the standby cancelled)", cancelled)
		old, primary, err := c.FailOver(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.event("failover: node %d writable (was node %d)", primary, old)
	})
	if cancelled == 0 {
		t.Error("no commit waited for the standby while replication was stalled: nothing was lost")
	}
	r.check(url)
}

// explain logs, for each provider whose history is not linearizable,
// the first answer no order of the writes explains: the shortest prefix
// of the history (by time of answer; the writes not answered by then
// may or may not have happened) that is not linearizable, and the
// operations around its last.
func (r *histRig) explain() {
	model := histModel.ToModel()
	for p := range histProviders {
		ops := providerOps(r.ops, p)
		bad, ok := firstUnexplained(ops)
		if !ok {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "provider %d: the first answer not explained: [%d, %d] %s\nthe operations since 100 ms before its call:\n",
			p, bad.Call/1e6, bad.Return/1e6, model.DescribeOperation(bad.Input, bad.Output))
		slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		for _, op := range ops {
			if op.Call <= bad.Return && op.Return >= bad.Call-100e6 {
				fmt.Fprintf(&b, "  [%d, %d] %s\n", op.Call/1e6, min(op.Return, 1<<50)/1e6, model.DescribeOperation(op.Input, op.Output))
			}
		}
		r.t.Log(b.String())
	}
}

// providerOps is provider p's part of history.
func providerOps(history []porcupine.Operation, p int) []porcupine.Operation {
	var ops []porcupine.Operation
	for _, op := range history {
		if op.Input.(histIn).rp == p {
			ops = append(ops, op)
		}
	}
	return ops
}

// firstUnexplained returns, if the history ops of one provider is not
// linearizable, its first answer that no order of the writes explains:
// the last of the shortest prefix (by time of answer; the writes not
// answered by then may or may not have happened) that is not
// linearizable.
func firstUnexplained(ops []porcupine.Operation) (porcupine.Operation, bool) {
	model := histModel.ToModel()
	if porcupine.CheckOperations(model, ops) {
		return porcupine.Operation{}, false
	}
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
	prefix := func(n int) []porcupine.Operation {
		cut := ops[n-1].Return
		var out []porcupine.Operation
		for _, op := range ops {
			switch {
			case op.Return <= cut:
				out = append(out, op)
			case op.Call <= cut && isWrite(op.Input.(histIn).kind):
				op.Output, op.Return = histOut{outcome: outcomeUnknown}, math.MaxInt64
				out = append(out, op)
			}
		}
		return out
	}
	n := sort.Search(len(ops), func(n int) bool { return !porcupine.CheckOperations(model, prefix(n+1)) }) + 1
	return ops[n-1], true
}

func isWrite(kind string) bool {
	switch kind {
	case opClaim, opDelete, opInventory, opTraits, opAggregates:
		return true
	}
	return false
}
