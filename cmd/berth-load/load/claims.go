package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/httpapi/client"
	"github.com/berthd/berth/internal/uuid"
)

// Claim modes: how a client claims.
const (
	// ModeTwoStep is Nova's way, for any Placement: GET
	// /allocation_candidates, pick one, PUT /allocations/{new consumer},
	// and start over on 409.
	ModeTwoStep = "two-step"
	// ModeClaims is Berth's POST /claims: the server picks and writes in
	// one request, retrying other candidates itself.
	ModeClaims = "claims"
)

// ClaimsParams describes a claims run: Clients concurrent schedulers, each
// claiming for new consumers in Mode, one after another, until Duration
// has passed or Claims claims have been attempted, whichever comes first.
//
// With Rounds, Claims bounds a round instead of the run: a round that
// reaches it before Duration of timed claiming has passed is followed by
// the release of every consumer it claimed (untimed) and by another round,
// until the rounds' timed claiming adds up to Duration. So a run lasts
// Duration of claiming whatever the cloud's size, on a cloud never
// fuller than Claims claims.
type ClaimsParams struct {
	Mode         string        // ModeTwoStep (default) or ModeClaims
	Clients      int           // default 16
	Duration     time.Duration // no new claim starts after this; default 60s unless Claims is set
	Claims       int           // bound on claims attempted; 0 for none (Duration then bounds)
	Resources    string        // flavor; default VCPU:4,MEMORY_MB:16384,DISK_GB:100
	Limit        int           // two-step: limit parameter of the candidates GET; default 20
	Pick         string        // two-step: "first" (default) or "random" among the answer
	Retries      int           // attempts after the first on 409; default 10
	Alternates   int           // claims: "alternates" sent in the body; negative leaves it out (the server's default, 2)
	ProjectID    string        // default a fixed benchmark project
	UserID       string        // default a fixed benchmark user
	ConsumerType string        // default INSTANCE
	Seed         uint64        // random pick seed; 0 means time-based
	Verify       bool          // check usages against capacity on every provider afterwards
	VerifyConns  int           // concurrent GETs of the check; default 8
	// Rounds repeats rounds of at most Claims claims, releasing each
	// round's consumers in between, until Duration of timed claiming
	// (see above); it needs Claims and Duration.
	Rounds bool `json:"rounds,omitempty"`
	// Release releases, at the end (after the check of Verify), every
	// consumer the run left claimed, so that the next run starts on the
	// cloud this one found.
	Release bool `json:"release,omitempty"`
	// Phases, when set and the run has Rounds or Release, is told when
	// timed claiming starts and stops (see PhaseWatcher).
	Phases PhaseWatcher `json:"-"`
}

// PhaseWatcher is told when a claims run's timed claiming starts and
// stops, so that what is measured around the run (the server's and the
// database's CPU, see MemSampler) can leave out the untimed phases: the
// overcommit checks and the releases. RunClaims calls Pause when it
// starts, Resume when a round's claiming starts and Pause when it ends.
type PhaseWatcher interface {
	Pause()
	Resume()
}

func (p *ClaimsParams) defaults() error {
	switch p.Mode {
	case "":
		p.Mode = ModeTwoStep
	case ModeTwoStep, ModeClaims:
	default:
		return fmt.Errorf("claims: --mode must be %s or %s", ModeTwoStep, ModeClaims)
	}
	if p.Clients <= 0 {
		p.Clients = 16
	}
	if p.Rounds && (p.Duration <= 0 || p.Claims <= 0) {
		return fmt.Errorf("claims: --rounds needs --claims (a round's bound) and --duration (the timed claiming)")
	}
	if p.Duration <= 0 && p.Claims <= 0 {
		p.Duration = 60 * time.Second
	}
	if p.Resources == "" {
		p.Resources = "VCPU:4,MEMORY_MB:16384,DISK_GB:100"
	}
	if p.Limit <= 0 {
		p.Limit = 20
	}
	switch p.Pick {
	case "":
		p.Pick = "first"
	case "first", "random":
	default:
		return fmt.Errorf("claims: --pick must be first or random")
	}
	if p.Retries < 0 {
		p.Retries = 0
	} else if p.Retries == 0 {
		p.Retries = 10
	}
	if p.ProjectID == "" {
		p.ProjectID = NameUUID("bench-project")
	}
	if p.UserID == "" {
		p.UserID = NameUUID("bench-user")
	}
	if p.ConsumerType == "" {
		p.ConsumerType = "INSTANCE"
	}
	if p.Seed == 0 {
		p.Seed = uint64(time.Now().UnixNano())
	}
	if p.VerifyConns <= 0 {
		p.VerifyConns = 8
	}
	return nil
}

// ClaimsResult reports a claims run.
type ClaimsResult struct {
	Mode    string `json:"mode"`
	Clients int    `json:"clients"`
	Pick    string `json:"pick"`
	// Elapsed is the time of claiming: from the first claim's start to
	// the last one's answer, or with rounds the sum of the rounds' such
	// times (the releases between rounds are not in it).
	Elapsed   time.Duration `json:"elapsed_ns"`
	Claims    int           `json:"claims"`            // successful, in all rounds
	PerSecond float64       `json:"claims_per_second"` // Claims / Elapsed
	// Rounds is how many rounds of claiming ran (with Rounds or
	// Release; 0 otherwise); Released how many consumers were released,
	// between rounds and at the end, each answered 204, in ReleaseTime
	// (untimed); Wall the run's whole time, first claim to last release.
	Rounds      int           `json:"rounds,omitempty"`
	Released    int           `json:"released,omitempty"`
	ReleaseTime time.Duration `json:"release_ns,omitempty"`
	Wall        time.Duration `json:"wall_ns,omitempty"`
	Conflicts   int           `json:"conflicts"`     // 409 answers other than "nothing fits": retried
	GaveUp      int           `json:"gave_up"`       // claims still conflicting after all retries
	NoFit       int           `json:"no_candidates"` // claims that found no candidate (cloud full)
	// NoValidHost (claims mode) counts 409 berth.no_valid_host answers. A
	// claim that gets one is retried like a conflict (the server also says
	// so when its attempts all conflicted); only a claim answered so on
	// every retry counts in NoFit and stops the run.
	NoValidHost int `json:"no_valid_host,omitempty"`
	// ServerAttempts (claims mode) adds up the "attempts" of successful
	// claims: writes the server tried, so ServerAttempts - Claims is how
	// many candidates it moved past after a conflict.
	ServerAttempts int            `json:"server_attempts,omitempty"`
	Errors         int            `json:"errors"`          // other failures
	Error          string         `json:"error,omitempty"` // the first of them
	FailedByStatus map[string]int `json:"failed_by_status,omitempty"`
	Latency        Stats          `json:"claim_latency"`            // whole claim, retries included
	GetTime        Stats          `json:"candidates_get,omitempty"` // two-step: every candidates GET
	PutTime        Stats          `json:"allocations_put"`          // every write request (PUT, or POST /claims)
	Verify         *VerifyResult  `json:"verify,omitempty"`         // the overcommit check
	// released lists the consumers released, in order (for tests).
	released []string
}

// VerifyResult is the overcommit check over every provider.
type VerifyResult struct {
	Providers    int            `json:"providers"`
	Overcommits  []Overcommit   `json:"overcommits"`
	Used         map[string]int `json:"used"`     // total usage per class over all providers
	Expected     map[string]int `json:"expected"` // successful claims times the flavor
	Elapsed      time.Duration  `json:"elapsed_ns"`
	Error        string         `json:"error,omitempty"`
	OK           bool           `json:"ok"` // checked, nothing overcommitted
	UsageMatches bool           `json:"usage_matches"`
}

type claimStats struct {
	mu        sync.Mutex
	latency   []time.Duration
	gets      []time.Duration
	puts      []time.Duration
	conflicts int
	gaveUp    int
	noFit     int
	noHost    int
	attempts  int
	errors    int
	firstErr  string
	byStatus  map[string]int
	// track keeps the consumers of successful claims in consumers, to
	// release them.
	track     bool
	consumers []string
}

// claimed records a successful claim for consumer; st.mu is held.
func (s *claimStats) claimed(consumer string, latency time.Duration) {
	s.latency = append(s.latency, latency)
	if s.track {
		s.consumers = append(s.consumers, consumer)
	}
}

// take returns the consumers claimed since the last take.
func (s *claimStats) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.consumers
	s.consumers = nil
	return out
}

func (s *claimStats) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors++
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
	key := "no answer"
	var ae *client.Error
	if errors.As(err, &ae) {
		key = fmt.Sprintf("%s %d", ae.Method, ae.Status)
	}
	if s.byStatus == nil {
		s.byStatus = map[string]int{}
	}
	s.byStatus[key]++
}

// errNoFit means the candidates answer was empty: the cloud is full for
// this flavor, so every client stops.
var errNoFit = errors.New("no allocation candidates")

// errGaveUp means a claim still conflicted after all its retries; it is
// counted apart from errors.
var errGaveUp = errors.New("claim gave up after retries")

// RunClaims runs the claims loop and then, if p.Verify, the overcommit
// check. It stops by itself: no claim starts after p.Duration or once
// p.Claims have started, and each claim makes at most 1+p.Retries attempts.
// A client stops early when the cloud has no candidate left. With
// p.Rounds, p.Claims bounds each round and the rounds go on until their
// timed claiming adds up to p.Duration (see ClaimsParams); with p.Release
// the run releases what it left claimed after the check. A release that
// is not answered 204 ends the run with an error (and the result so far).
// Progress goes to log.
func RunClaims(ctx context.Context, c *Client, p ClaimsParams, log io.Writer) (*ClaimsResult, error) {
	if err := p.defaults(); err != nil {
		return nil, err
	}
	flavor, err := ParseResources(p.Resources)
	if err != nil {
		return nil, err
	}
	phases := p.Phases
	if phases == nil || !p.Rounds && !p.Release {
		phases = noPhases{}
	}
	phases.Pause()
	// The check compares usage growth with the claims made, so it needs
	// the usage before the run (zero on a fresh cloud).
	var before map[string]int
	if p.Verify {
		v := Verify(ctx, c, p.VerifyConns, nil)
		if v.Error != "" {
			return nil, fmt.Errorf("claims: reading usages before the run: %s", v.Error)
		}
		before = v.Used
	}
	path := CandidatesQuery{Groups: []Group{{Resources: flavor}}, Limit: p.Limit}.Path()
	one := func(ctx context.Context, rng *rand.Rand, st *claimStats) error {
		return claimOne(ctx, c, path, p, rng, st)
	}
	if p.Mode == ModeClaims {
		res := map[string]int{}
		for _, a := range flavor {
			res[a.Class] += a.Units
		}
		one = func(ctx context.Context, _ *rand.Rand, st *claimStats) error {
			return postClaim(ctx, c, res, p, st)
		}
	}
	st := claimStats{track: p.Rounds || p.Release}
	var started, succeeded atomic.Int64
	var full atomic.Bool
	rngs := make([]*rand.Rand, p.Clients)
	for w := range rngs {
		rngs[w] = rand.New(rand.NewPCG(p.Seed, uint64(w)))
	}
	// round runs the clients until the deadline (zero: none) or until
	// p.Claims claims started, or the cloud is full.
	round := func(deadline time.Time) {
		started.Store(0)
		var wg sync.WaitGroup
		for _, rng := range rngs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil && !full.Load() {
					if !deadline.IsZero() && time.Now().After(deadline) {
						return
					}
					if p.Claims > 0 && started.Add(1) > int64(p.Claims) {
						return
					}
					err := one(ctx, rng, &st)
					switch {
					case err == nil:
						succeeded.Add(1)
					case errors.Is(err, errNoFit):
						full.Store(true)
					case errors.Is(err, errGaveUp):
					case ctx.Err() != nil:
					default:
						st.fail(err)
					}
				}
			}()
		}
		wg.Wait()
	}
	total := p.Claims
	if p.Rounds {
		total = 0 // the bar follows the time
	}
	var rounds atomic.Int64
	var releasing atomic.Bool // for the progress line
	meter := NewMeter(log, "claims ("+p.Mode+")", "claimed", total, p.Duration)
	stop := meter.tick(func() {
		st.mu.Lock()
		extra := fmt.Sprintf("%d conflicts, %d errors", st.conflicts, st.errors)
		st.mu.Unlock()
		if p.Rounds {
			extra = fmt.Sprintf("round %d, %s", rounds.Load(), extra)
		}
		if releasing.Load() {
			extra += ", releasing (untimed)"
		}
		meter.Show(int(succeeded.Load()), extra)
	})
	res := &ClaimsResult{Mode: p.Mode, Clients: p.Clients, Pick: p.Pick}
	start := time.Now()
	var timed time.Duration
	var lastRound int64 // successful claims of the last round
	var runErr error
	for {
		rounds.Add(1)
		was := succeeded.Load()
		phases.Resume()
		var deadline time.Time
		roundStart := time.Now()
		if p.Duration > 0 {
			deadline = roundStart.Add(p.Duration - timed)
		}
		round(deadline)
		timed += time.Since(roundStart)
		phases.Pause()
		lastRound = succeeded.Load() - was
		capped := p.Claims > 0 && started.Load() >= int64(p.Claims)
		if !p.Rounds || !capped || full.Load() || ctx.Err() != nil || timed >= p.Duration {
			break
		}
		releasing.Store(true)
		runErr = res.release(ctx, c, st.take(), p.Clients)
		releasing.Store(false)
		if runErr != nil {
			break
		}
	}
	stop()
	res.Elapsed = timed
	res.Claims = int(succeeded.Load())
	res.PerSecond = float64(res.Claims) / timed.Seconds()
	res.Conflicts, res.GaveUp, res.NoFit, res.NoValidHost, res.ServerAttempts = st.conflicts, st.gaveUp, st.noFit, st.noHost, st.attempts
	res.Errors, res.Error, res.FailedByStatus = st.errors, st.firstErr, st.byStatus
	res.Latency, res.GetTime, res.PutTime = Summarize(st.latency), Summarize(st.gets), Summarize(st.puts)
	if p.Rounds || p.Release {
		res.Rounds = int(rounds.Load())
	}
	if p.Mode == ModeClaims {
		res.Pick = "server"
	}
	if runErr == nil && p.Verify && ctx.Err() == nil {
		// What the last round left: the earlier ones were released.
		expected := map[string]int{}
		for class, n := range before {
			expected[class] = n
		}
		for _, a := range flavor {
			expected[a.Class] += a.Units * int(lastRound)
		}
		res.Verify = Verify(ctx, c, p.VerifyConns, expected)
	}
	if runErr == nil && p.Release && ctx.Err() == nil {
		runErr = res.release(ctx, c, st.take(), p.Clients)
	}
	if p.Rounds || p.Release {
		res.Wall = time.Since(start)
	}
	if runErr != nil {
		return res, runErr
	}
	return res, ctx.Err()
}

// noPhases is the PhaseWatcher of a run that tells nobody.
type noPhases struct{}

func (noPhases) Pause()  {}
func (noPhases) Resume() {}

// release deletes the allocations of consumers (DELETE
// /allocations/{uuid}) with conns concurrent requests, and counts them in
// r; every answer must be 204.
func (r *ClaimsResult) release(ctx context.Context, c *Client, consumers []string, conns int) error {
	start := time.Now()
	var mu sync.Mutex
	err := forEach(ctx, len(consumers), conns, func(ctx context.Context, i int) error {
		if _, err := c.Do(ctx, http.MethodDelete, "/allocations/"+consumers[i], nil, http.StatusNoContent); err != nil {
			return fmt.Errorf("releasing consumer %s: %w", consumers[i], err)
		}
		mu.Lock()
		r.released = append(r.released, consumers[i])
		mu.Unlock()
		return nil
	}, nil)
	r.ReleaseTime += time.Since(start)
	r.Released = len(r.released)
	return err
}

// ClaimRequest is a POST /claims body for a new consumer (Berth's API).
type ClaimRequest struct {
	ConsumerUUID       string         `json:"consumer_uuid"`
	ProjectID          string         `json:"project_id"`
	UserID             string         `json:"user_id"`
	ConsumerType       string         `json:"consumer_type,omitempty"`
	ConsumerGeneration *int           `json:"consumer_generation"`
	Resources          map[string]int `json:"resources"`
	Alternates         *int           `json:"alternates,omitempty"`
}

// claimAnswer is what the tool reads of a POST /claims answer.
type claimAnswer struct {
	Attempts int `json:"attempts"`
}

// codeNoValidHost is the error code of a claim that nothing fits.
const codeNoValidHost = "berth.no_valid_host"

// postClaim makes one claim with POST /claims. A 409 is retried, up to
// p.Retries times, with the same consumer. "No valid host" on every
// attempt means the cloud is full (errNoFit); the server also answers so
// when all its write attempts conflicted, which a retry cures.
func postClaim(ctx context.Context, c *Client, resources map[string]int, p ClaimsParams, st *claimStats) error {
	body := ClaimRequest{ConsumerUUID: uuid.New(), ProjectID: p.ProjectID, UserID: p.UserID,
		ConsumerType: p.ConsumerType, Resources: resources}
	if p.Alternates >= 0 {
		body.Alternates = &p.Alternates
	}
	start := time.Now()
	allNoHost := true
	for attempt := 0; attempt <= p.Retries; attempt++ {
		resp, err := c.Do(ctx, http.MethodPost, "/claims", body, http.StatusOK)
		if resp != nil {
			st.mu.Lock()
			st.puts = append(st.puts, resp.Elapsed)
			st.mu.Unlock()
		}
		if err == nil {
			var ans claimAnswer
			if err := json.Unmarshal(resp.Body, &ans); err != nil {
				return fmt.Errorf("POST /claims: decoding answer: %w", err)
			}
			st.mu.Lock()
			st.claimed(body.ConsumerUUID, time.Since(start))
			st.attempts += ans.Attempts
			st.mu.Unlock()
			return nil
		}
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict {
			return err
		}
		st.mu.Lock()
		if ae.Code() == codeNoValidHost {
			st.noHost++
		} else {
			allNoHost = false
			st.conflicts++
		}
		st.mu.Unlock()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if allNoHost {
		st.noFit++
		return errNoFit
	}
	st.gaveUp++
	return errGaveUp
}

// claimOne makes one claim: up to 1+p.Retries rounds of GET candidates,
// pick, PUT allocations. It returns nil once claimed, errGaveUp when every
// attempt conflicted, errNoFit when there was no candidate.
func claimOne(ctx context.Context, c *Client, path string, p ClaimsParams, rng *rand.Rand, st *claimStats) error {
	consumer := uuid.New()
	start := time.Now()
	for attempt := 0; attempt <= p.Retries; attempt++ {
		resp, err := c.Do(ctx, http.MethodGet, path, nil)
		if err != nil {
			return err
		}
		var ans CandidatesAnswer
		if err := json.Unmarshal(resp.Body, &ans); err != nil {
			return fmt.Errorf("GET %s: decoding answer: %w", path, err)
		}
		st.mu.Lock()
		st.gets = append(st.gets, resp.Elapsed)
		st.mu.Unlock()
		if len(ans.AllocationRequests) == 0 {
			st.mu.Lock()
			st.noFit++
			st.mu.Unlock()
			return errNoFit
		}
		choice := ans.AllocationRequests[0]
		if p.Pick == "random" {
			choice = ans.AllocationRequests[rng.IntN(len(ans.AllocationRequests))]
		}
		body := NewClaimBody(choice, p.ProjectID, p.UserID, p.ConsumerType)
		resp, err = c.Do(ctx, http.MethodPut, "/allocations/"+consumer, body, http.StatusNoContent)
		if resp != nil {
			st.mu.Lock()
			st.puts = append(st.puts, resp.Elapsed)
			st.mu.Unlock()
		}
		if err == nil {
			st.mu.Lock()
			st.claimed(consumer, time.Since(start))
			st.mu.Unlock()
			return nil
		}
		if !client.IsStatus(err, http.StatusConflict) {
			return err
		}
		st.mu.Lock()
		st.conflicts++
		st.mu.Unlock()
	}
	st.mu.Lock()
	st.gaveUp++
	st.mu.Unlock()
	return errGaveUp
}

// Verify reads the inventories and usages of every provider and reports
// any usage above (total - reserved) * allocation_ratio, and whether the
// total usage per class equals expected (when expected is non-nil; it only
// can on a server with no allocations but the run's).
func Verify(ctx context.Context, c *Client, conns int, expected map[string]int) *VerifyResult {
	start := time.Now()
	v := &VerifyResult{Used: map[string]int{}, Expected: expected, Overcommits: []Overcommit{}}
	rps, err := c.ListProviders(ctx)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	var mu sync.Mutex
	err = forEach(ctx, len(rps), conns, func(ctx context.Context, i int) error {
		rp := rps[i].UUID
		var inv InventoriesBody
		if _, err := c.JSON(ctx, http.MethodGet, "/resource_providers/"+rp+"/inventories", nil, &inv); err != nil {
			return err
		}
		var use UsagesBody
		if _, err := c.JSON(ctx, http.MethodGet, "/resource_providers/"+rp+"/usages", nil, &use); err != nil {
			return err
		}
		over := Overcommits(rp, inv.Inventories, use.Usages)
		mu.Lock()
		defer mu.Unlock()
		for class, n := range use.Usages {
			v.Used[class] += n
		}
		v.Overcommits = append(v.Overcommits, over...)
		return nil
	}, nil)
	v.Elapsed = time.Since(start)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	sort.Slice(v.Overcommits, func(i, j int) bool {
		a, b := v.Overcommits[i], v.Overcommits[j]
		return a.Provider < b.Provider || a.Provider == b.Provider && a.Class < b.Class
	})
	v.Providers = len(rps)
	v.OK = len(v.Overcommits) == 0
	if expected != nil {
		v.UsageMatches = true
		for class, n := range expected {
			if v.Used[class] != n {
				v.UsageMatches = false
			}
		}
	}
	return v
}
