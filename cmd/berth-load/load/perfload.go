package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/internal/uuid"
)

// Placement's nested-perfload gate job (OpenStack Placement's
// gate/perfload-nested-runner.sh, gate/perfload-nested-loader.sh and
// gate/gabbits/nested-perfload.yaml), reproduced: Trees trees of the
// gabbit's 7 providers, then the runner's GET /allocation_candidates timed
// twice, Allocations times "write the first candidate's allocation, time
// the query twice again", and Apache Benchmark's run of the query
// (`ab -c 10 -n 500`, a connection per request) whose requests per second
// are the job's figure.

// PerfloadQuery is the runner's PLACEMENT_QUERY: disk from a root with
// COMPUTE_VOLUME_MULTI_ATTACH, compute from a NUMA node with CUSTOM_FOO,
// an FPGA in the same subtree as that compute. Each tree answers 2
// candidates (numa1 and either of its FPGAs).
const PerfloadQuery = "/allocation_candidates?resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH" +
	"&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO&resources_FPGA=FPGA:1" +
	"&group_policy=none&same_subtree=_COMPUTE,_FPGA"

// PerfloadParams is one run of the gate job; zero fields take the job's
// values.
type PerfloadParams struct {
	Trees       int // nested trees; the job's ITERATIONS, 1000
	Workers     int // concurrent seeding workers (the job: parallel -P 50%, untimed); default 8
	Allocations int // the job's ALLOCATIONS_TO_WRITE, 10
	Concurrency int // ab -c, the job's AB_CONCURRENT, 10
	Requests    int // ab -n, the job's AB_COUNT, 500
	NoSeed      bool
}

func (p *PerfloadParams) defaults() {
	if p.Trees <= 0 {
		p.Trees = 1000
	}
	if p.Workers <= 0 {
		p.Workers = 8
	}
	if p.Allocations < 0 {
		p.Allocations = 0
	}
	if p.Concurrency <= 0 {
		p.Concurrency = 10
	}
	if p.Requests <= 0 {
		p.Requests = 500
	}
}

// PerfloadResult is what the job reports: the timed queries around the
// allocations written, and Apache Benchmark's figures.
type PerfloadResult struct {
	Path        string        `json:"path"`
	Allocations int           `json:"allocations_written"`
	Timed       Stats         `json:"timed"`      // the time_candidates queries, sequential
	Candidates  int           `json:"candidates"` // in the last answer
	Bytes       int           `json:"bytes"`
	Concurrency int           `json:"concurrency"`
	Requests    int           `json:"requests"` // completed by the ab phase
	Failed      int           `json:"failed"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	PerSecond   float64       `json:"requests_per_second"`
	Latency     Stats         `json:"latency"` // of the ab phase's requests
	Error       string        `json:"error,omitempty"`
}

// perfloadTree is the gabbit's tree: the compute node, two NUMA nodes,
// fpga0_0 and pgpu0_0 under numa0, fpga1_0 and fpga1_1 under numa1.
type perfloadTree struct {
	cn, numa0, numa1, fpga00, pgpu00, fpga10, fpga11 string
}

func newPerfloadTree(t int) perfloadTree {
	id := func(what string) string { return NameUUID(fmt.Sprintf("perfload-%05d-%s", t, what)) }
	return perfloadTree{id("cn1"), id("numa0"), id("numa1"), id("fpga0_0"), id("pgpu0_0"), id("fpga1_0"), id("fpga1_1")}
}

// placementMaxUnit is Placement's default max_unit (its MAX_INT): the
// gabbit leaves max_unit out but on numa1's memory.
const placementMaxUnit = math.MaxInt32

// gabbitInventory is an inventory the gabbit writes: Placement's defaults
// (reserved 0, min_unit 1, max_unit MAX_INT, step_size 1, ratio 1) but
// where it says otherwise.
func gabbitInventory(total int, set func(*InventoryBody)) InventoryBody {
	i := InventoryBody{Total: total, MinUnit: 1, MaxUnit: placementMaxUnit, StepSize: 1, AllocationRatio: 1}
	if set != nil {
		set(&i)
	}
	return i
}

// SeedPerfload creates p.Trees trees of the gabbit over the API (after PUT
// /traits/CUSTOM_FOO, as each gabbit run starts); like Seed it resumes a
// partial run. The gate names each provider by a random UUID; here they
// are derived from the tree's number, so a rerun finds them.
func SeedPerfload(ctx context.Context, c *Client, p PerfloadParams, log io.Writer) (*SeedResult, error) {
	p.defaults()
	start, sent := time.Now(), c.Requests()
	if err := c.EnsureTrait(ctx, "CUSTOM_FOO"); err != nil {
		return nil, fmt.Errorf("perfload: %w", err)
	}
	fpga := map[string]InventoryBody{"FPGA": gabbitInventory(1, nil)}
	invs := map[string]map[string]InventoryBody{
		"cn1": {"DISK_GB": gabbitInventory(20480, nil)},
		"numa0": {
			"VCPU":      gabbitInventory(4, func(i *InventoryBody) { i.Reserved = 2 }),
			"MEMORY_MB": gabbitInventory(2048, func(i *InventoryBody) { i.MinUnit, i.StepSize = 512, 256 }),
		},
		"numa1": {
			"VCPU":      gabbitInventory(4, nil),
			"MEMORY_MB": gabbitInventory(2048, func(i *InventoryBody) { i.MinUnit, i.MaxUnit = 256, 1024 }),
		},
		"pgpu": {"VGPU": gabbitInventory(8, nil)},
	}
	err := forEach(ctx, p.Trees, p.Workers, func(ctx context.Context, t int) error {
		tr := newPerfloadTree(t)
		one := func(rp, name, parent string, inv map[string]InventoryBody, traits ...string) error {
			return c.SeedProvider(ctx, ProviderBody{UUID: rp, Name: name, ParentUUID: parent}, inv, traits...)
		}
		steps := []func() error{
			func() error { return one(tr.cn, tr.cn, "", invs["cn1"], "COMPUTE_VOLUME_MULTI_ATTACH") },
			func() error { return one(tr.numa0, "numa 0-"+tr.numa0, tr.cn, invs["numa0"], "HW_NUMA_ROOT") },
			func() error { return one(tr.fpga00, "fpga0-0-"+tr.fpga00, tr.numa0, fpga) },
			func() error { return one(tr.pgpu00, "pgpu0-0-"+tr.pgpu00, tr.numa0, invs["pgpu"]) },
			func() error {
				return one(tr.numa1, "numa 1-"+tr.numa1, tr.cn, invs["numa1"], "HW_NUMA_ROOT", "CUSTOM_FOO")
			},
			func() error { return one(tr.fpga10, "fpga1-0-"+tr.fpga10, tr.numa1, fpga) },
			func() error { return one(tr.fpga11, "fpga1-1-"+tr.fpga11, tr.numa1, fpga) },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	}, NewMeter(log, "perfload", "trees", p.Trees, 0))
	if err != nil {
		return nil, fmt.Errorf("perfload: %w", err)
	}
	return newSeedResult(7*p.Trees, c.Requests()-sent, time.Since(start)), nil
}

// RunPerfload runs the gate job's measurements on seeded trees: seq (one
// kept-alive connection) times the query and writes the allocations, conc
// (a connection per request, as ab without -k) runs the ab phase.
func RunPerfload(ctx context.Context, seq, conc *Client, p PerfloadParams, log io.Writer) *PerfloadResult {
	p.defaults()
	r := &PerfloadResult{Path: PerfloadQuery, Concurrency: p.Concurrency}
	var timed []time.Duration
	timeCandidates := func() error {
		for range 2 {
			resp, err := seq.Do(ctx, http.MethodGet, PerfloadQuery, nil)
			if err != nil {
				return err
			}
			timed = append(timed, resp.Elapsed)
			r.Bytes = len(resp.Body)
			r.Candidates, _, _ = countAnswer(resp.Body)
		}
		return nil
	}
	err := timeCandidates()
	for i := 0; err == nil && i < p.Allocations; i++ {
		if err = writePerfloadAllocation(ctx, seq); err == nil {
			r.Allocations++
			err = timeCandidates()
		}
	}
	r.Timed = Summarize(timed)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if log != nil {
		fmt.Fprintf(log, "perfload: %d candidates, median %s over %d timed queries, %d allocations written\n",
			r.Candidates, ms(r.Timed.Median), r.Timed.N, r.Allocations)
	}

	var next atomic.Int64
	var mu sync.Mutex
	var samples []time.Duration
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for range p.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(p.Requests) && ctx.Err() == nil {
				status, elapsed, err := conc.Discard(ctx, PerfloadQuery)
				if err == nil && status/100 != 2 {
					err = fmt.Errorf("GET %s: status %d", PerfloadQuery, status)
				}
				mu.Lock()
				if err != nil {
					r.Failed++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					samples = append(samples, elapsed)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.Elapsed = time.Since(start)
	r.Requests = len(samples)
	r.Latency = Summarize(samples)
	r.PerSecond = float64(r.Requests) / r.Elapsed.Seconds()
	if firstErr != nil {
		r.Error = firstErr.Error()
	}
	if log != nil {
		fmt.Fprintf(log, "perfload: %d requests, %d concurrent: %.2f requests/s (%d failed)\n", r.Requests, r.Concurrency, r.PerSecond, r.Failed)
	}
	return r
}

// writePerfloadAllocation is the runner's write_allocation: the first of
// the query's candidates (limit=5) written for a new consumer of a new
// project and user, consumer type TEST.
func writePerfloadAllocation(ctx context.Context, c *Client) error {
	resp, err := c.Do(ctx, http.MethodGet, PerfloadQuery+"&limit=5", nil)
	if err != nil {
		return err
	}
	var ans CandidatesAnswer
	if err := json.Unmarshal(resp.Body, &ans); err != nil {
		return fmt.Errorf("perfload: decoding candidates: %w", err)
	}
	if len(ans.AllocationRequests) == 0 {
		return errors.New("perfload: no candidate to write")
	}
	body := NewClaimBody(ans.AllocationRequests[0], uuid.New(), uuid.New(), "TEST")
	_, err = c.Do(ctx, http.MethodPut, "/allocations/"+uuid.New(), body, http.StatusNoContent)
	return err
}

// PrintPerfload writes r as the job's figures.
func PrintPerfload(w io.Writer, r *PerfloadResult) {
	fmt.Fprintf(w, "perfload query: %d candidates (%d bytes), median %s ms over %d sequential queries, %d allocations written\n",
		r.Candidates, r.Bytes, msf(r.Timed.Median), r.Timed.N, r.Allocations)
	fmt.Fprintf(w, "perfload ab -c %d -n %d: %.2f requests/s over %s, latency p50 %s ms p99 %s ms, %d failed\n",
		r.Concurrency, r.Requests+r.Failed, r.PerSecond, r.Elapsed.Round(time.Millisecond), msf(r.Latency.Median), msf(r.Latency.P99), r.Failed)
	if r.Error != "" {
		fmt.Fprintf(w, "  perfload: %s\n", r.Error)
	}
}
