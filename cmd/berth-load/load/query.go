package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Query is one timed GET: a name for reports and the request path.
type Query struct {
	Name string
	Path string
}

// Result is how one Query fared over its iterations.
type Result struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Stats   Stats  `json:"stats"` // of the successful iterations
	Bytes   int    `json:"bytes"` // response size of the last successful answer
	Count   int    `json:"count"` // allocation requests, or providers for /resource_providers
	CountOf string `json:"count_of"`
	// Summaries is the number of provider summaries in a candidates answer.
	Summaries int    `json:"provider_summaries,omitempty"`
	Errors    int    `json:"errors,omitempty"`
	Timeouts  int    `json:"timeouts,omitempty"`
	Error     string `json:"error,omitempty"` // the first error seen
}

// Failed reports whether no iteration succeeded.
func (r Result) Failed() bool { return r.Stats.N == 0 }

// QueryParams says how often each query runs.
type QueryParams struct {
	Warmup     int // untimed runs of each query first; default 1 (0 with NoWarmup)
	NoWarmup   bool
	Iterations int // timed runs of each query; default 10
	// StopAfterTimeout stops a query's iterations after its first timeout,
	// so that a query a server cannot answer costs one timeout, not many.
	StopAfterTimeout bool
}

func (p *QueryParams) defaults() {
	if p.Warmup <= 0 && !p.NoWarmup {
		p.Warmup = 1
	}
	if p.NoWarmup {
		p.Warmup = 0
	}
	if p.Iterations <= 0 {
		p.Iterations = 10
	}
}

// RunQueries runs each query sequentially, one at a time: its warm-up runs,
// then its timed iterations. Failed requests are counted, not timed; a
// query whose every iteration fails still yields a Result (Failed()). The
// latency measured is the client's: from sending the request to having
// read the whole body, over a kept-alive connection.
func RunQueries(ctx context.Context, c *Client, queries []Query, p QueryParams, log io.Writer) []Result {
	p.defaults()
	var results []Result
	for _, q := range queries {
		r := Result{Name: q.Name, Path: q.Path}
		var samples []time.Duration
		for i := 0; i < p.Warmup+p.Iterations && ctx.Err() == nil; i++ {
			resp, err := c.Do(ctx, http.MethodGet, q.Path, nil)
			if err != nil {
				// Warm-up failures count too: they are the same answer.
				if errors.Is(err, ErrTimeout) {
					r.Timeouts++
				} else {
					r.Errors++
				}
				if r.Error == "" {
					r.Error = err.Error()
				}
				if errors.Is(err, ErrTimeout) && p.StopAfterTimeout {
					break
				}
				continue
			}
			r.Bytes = len(resp.Body)
			r.Count, r.Summaries, r.CountOf = countAnswer(resp.Body)
			if i >= p.Warmup {
				samples = append(samples, resp.Elapsed)
			}
		}
		r.Stats = Summarize(samples)
		if log != nil {
			fmt.Fprintf(log, "%s: %s\n", q.Name, describe(r))
		}
		results = append(results, r)
	}
	return results
}

func describe(r Result) string {
	if r.Failed() {
		if r.Timeouts > 0 {
			return "timeout"
		}
		return "error: " + r.Error
	}
	return fmt.Sprintf("median %s, %d %s", ms(r.Stats.Median), r.Count, r.CountOf)
}

// countAnswer counts what an answer lists: allocation requests (and
// provider summaries) for candidates, providers for /resource_providers.
func countAnswer(body []byte) (count, summaries int, of string) {
	var a struct {
		AllocationRequests []json.RawMessage          `json:"allocation_requests"`
		ProviderSummaries  map[string]json.RawMessage `json:"provider_summaries"`
		ResourceProviders  []json.RawMessage          `json:"resource_providers"`
	}
	if json.Unmarshal(body, &a) != nil {
		return 0, 0, "unparsed"
	}
	if a.ResourceProviders != nil {
		return len(a.ResourceProviders), 0, "providers"
	}
	return len(a.AllocationRequests), len(a.ProviderSummaries), "candidates"
}

// CandidateQueries is the flat suite: (a) a plain flavor, (b) the same
// with limit=1000, (c) a required trait that one node in ten has, (d)
// membership of one aggregate in ten, (e) the provider list, (f) one
// provider of the list by uuid (the cheapest read of the snapshot, where
// what every read pays before it computes shows most).
func CandidateQueries() []Query {
	flavor := []Amount{{"VCPU", 2}, {"MEMORY_MB", 4096}, {"DISK_GB", 20}}
	return []Query{
		{"a-flavor", CandidatesQuery{Groups: []Group{{Resources: flavor}}}.Path()},
		{"b-flavor-limit1000", CandidatesQuery{Groups: []Group{{Resources: flavor}}, Limit: 1000}.Path()},
		{"c-required-trait", CandidatesQuery{Groups: []Group{{Resources: flavor[:2], Required: []string{BenchTrait}}}}.Path()},
		{"d-member-of", CandidatesQuery{Groups: []Group{{Resources: flavor[:1], MemberOf: []string{AggregateUUID(0)}}}}.Path()},
		{"e-providers", "/resource_providers"},
		{"f-provider-uuid", "/resource_providers?uuid=" + NodeUUID(0)},
	}
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/1e6)
}

// checkUp fails early, with a clear message, when the endpoint does not
// answer its root document.
func checkUp(ctx context.Context, c *Client) error {
	if _, err := c.Do(ctx, http.MethodGet, "/", nil); err != nil {
		return fmt.Errorf("endpoint not answering: %w", err)
	}
	return nil
}

// waitUp polls GET path every 50ms until it answers 2xx or timeout
// passes.
func waitUp(ctx context.Context, c *Client, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := c.Do(rctx, http.MethodGet, path, nil)
		rcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer within %s: %w", timeout, err)
		case <-t.C:
		}
	}
}
