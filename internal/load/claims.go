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
	Mode      string        `json:"mode"`
	Clients   int           `json:"clients"`
	Pick      string        `json:"pick"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Claims    int           `json:"claims"` // successful
	PerSecond float64       `json:"claims_per_second"`
	Conflicts int           `json:"conflicts"`     // 409 answers other than "nothing fits": retried
	GaveUp    int           `json:"gave_up"`       // claims still conflicting after all retries
	NoFit     int           `json:"no_candidates"` // claims that found no candidate (cloud full)
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
}

func (s *claimStats) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors++
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
	key := "no answer"
	var se *StatusError
	if errors.As(err, &se) {
		key = fmt.Sprintf("%s %d", se.Method, se.Code)
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
// A client stops early when the cloud has no candidate left. Progress
// goes to log.
func RunClaims(ctx context.Context, c *Client, p ClaimsParams, log io.Writer) (*ClaimsResult, error) {
	if err := p.defaults(); err != nil {
		return nil, err
	}
	flavor, err := ParseResources(p.Resources)
	if err != nil {
		return nil, err
	}
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
	var st claimStats
	var started, succeeded atomic.Int64
	var full atomic.Bool
	start := time.Now()
	var deadline time.Time
	if p.Duration > 0 {
		deadline = start.Add(p.Duration)
	}
	var wg sync.WaitGroup
	for w := 0; w < p.Clients; w++ {
		wg.Add(1)
		rng := rand.New(rand.NewPCG(p.Seed, uint64(w)))
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
	meter := NewMeter(log, "claims ("+p.Mode+")", "claimed", p.Claims, p.Duration)
	stop := meter.tick(func() {
		st.mu.Lock()
		extra := fmt.Sprintf("%d conflicts, %d errors", st.conflicts, st.errors)
		st.mu.Unlock()
		meter.Show(int(succeeded.Load()), extra)
	})
	wg.Wait()
	stop()
	elapsed := time.Since(start)
	res := &ClaimsResult{
		Mode: p.Mode, Clients: p.Clients, Pick: p.Pick, Elapsed: elapsed,
		Claims: int(succeeded.Load()), PerSecond: float64(succeeded.Load()) / elapsed.Seconds(),
		Conflicts: st.conflicts, GaveUp: st.gaveUp, NoFit: st.noFit, NoValidHost: st.noHost, ServerAttempts: st.attempts,
		Errors: st.errors, Error: st.firstErr, FailedByStatus: st.byStatus,
		Latency: Summarize(st.latency), GetTime: Summarize(st.gets), PutTime: Summarize(st.puts),
	}
	if p.Mode == ModeClaims {
		res.Pick = "server"
	}
	if p.Verify && ctx.Err() == nil {
		expected := map[string]int{}
		for class, n := range before {
			expected[class] = n
		}
		for _, a := range flavor {
			expected[a.Class] += a.Units * res.Claims
		}
		res.Verify = Verify(ctx, c, p.VerifyConns, expected)
	}
	return res, ctx.Err()
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

// errorAnswer is Placement's error body.
type errorAnswer struct {
	Errors []struct {
		Code string `json:"code"`
	} `json:"errors"`
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
			st.latency = append(st.latency, time.Since(start))
			st.attempts += ans.Attempts
			st.mu.Unlock()
			return nil
		}
		if !IsStatus(err, http.StatusConflict) {
			return err
		}
		var ea errorAnswer
		_ = json.Unmarshal(resp.Body, &ea)
		st.mu.Lock()
		if len(ea.Errors) > 0 && ea.Errors[0].Code == codeNoValidHost {
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
			st.latency = append(st.latency, time.Since(start))
			st.mu.Unlock()
			return nil
		}
		if !IsStatus(err, http.StatusConflict) {
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
