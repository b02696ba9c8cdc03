package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/berthd/berth/httpapi/client"
)

// FloodParams is an overload run: many clients repeat one expensive GET
// (by default an allocation candidates query without limit) for a
// duration, while one client times small requests alongside, to see
// whether the server keeps its memory and its small requests' latency.
type FloodParams struct {
	Clients       int           // concurrent expensive clients; default 500
	Duration      time.Duration // default 30s
	Path          string        // the expensive GET
	ProbeInterval time.Duration // pause between two small requests; default 50ms
}

// DefaultFloodPath is an allocation candidates query every seeded node
// answers, without limit: at 10,000 nodes, 10,000 candidates.
const DefaultFloodPath = "/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10"

// FloodProbes are the small requests timed during a flood: the version
// document and the first seeded node.
func FloodProbes() []Query {
	return []Query{
		{Name: "probe-root", Path: "/"},
		{Name: "probe-provider", Path: "/resource_providers/" + NodeUUID(0)},
	}
}

// RunFlood runs p with heavy for the expensive clients and probe (one
// kept-alive connection) for the small requests. It returns one Result
// for the expensive GET (Count: its 503 answers) and one per probe.
func RunFlood(ctx context.Context, heavy, probe *Client, p FloodParams, log io.Writer) []Result {
	if p.Clients <= 0 {
		p.Clients = 500
	}
	if p.Duration <= 0 {
		p.Duration = 30 * time.Second
	}
	if p.Path == "" {
		p.Path = DefaultFloodPath
	}
	if p.ProbeInterval <= 0 {
		p.ProbeInterval = 50 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, p.Duration)
	defer cancel()

	var mu sync.Mutex
	main := Result{Name: "flood", Path: p.Path, CountOf: "503 answers"}
	var samples []time.Duration
	var wg sync.WaitGroup
	for range p.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r, err := heavy.Do(ctx, http.MethodGet, p.Path, nil)
				if ctx.Err() != nil {
					return // cut by the end of the run: not counted
				}
				mu.Lock()
				switch {
				case err == nil:
					samples = append(samples, r.Elapsed)
					main.Bytes = len(r.Body)
				case client.IsStatus(err, http.StatusServiceUnavailable):
					main.Count++
				case errors.Is(err, ErrTimeout):
					main.Timeouts++
				default:
					main.Errors++
					if main.Error == "" {
						main.Error = err.Error()
					}
				}
				mu.Unlock()
				if err != nil && !client.IsStatus(err, http.StatusServiceUnavailable) {
					// A refused connection or a timeout: do not spin.
					select {
					case <-time.After(100 * time.Millisecond):
					case <-ctx.Done():
					}
				}
			}
		}()
	}

	probes := FloodProbes()
	probeResults := make([]Result, len(probes))
	probeSamples := make([][]time.Duration, len(probes))
	for i, q := range probes {
		probeResults[i] = Result{Name: q.Name, Path: q.Path}
	}
	start := time.Now()
	for n := 0; ctx.Err() == nil; n++ {
		i := n % len(probes)
		r, err := probe.Do(ctx, http.MethodGet, probes[i].Path, nil)
		switch {
		case ctx.Err() != nil:
		case err == nil:
			probeSamples[i] = append(probeSamples[i], r.Elapsed)
		case errors.Is(err, ErrTimeout):
			probeResults[i].Timeouts++
		default:
			probeResults[i].Errors++
			if probeResults[i].Error == "" {
				probeResults[i].Error = err.Error()
			}
		}
		if n%100 == 0 {
			mu.Lock()
			fmt.Fprintf(log, "flood: %s: %d answered, %d refused (503); probes %d\n",
				time.Since(start).Round(time.Second), len(samples), main.Count, n)
			mu.Unlock()
		}
		select {
		case <-time.After(p.ProbeInterval):
		case <-ctx.Done():
		}
	}
	wg.Wait()
	main.Stats = Summarize(samples)
	out := []Result{main}
	for i := range probes {
		probeResults[i].Stats = Summarize(probeSamples[i])
		out = append(out, probeResults[i])
	}
	return out
}
