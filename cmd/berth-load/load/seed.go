package load

import (
	"context"
	"fmt"
	"io"
	"time"
)

// BenchTrait is the custom trait that one flat node in TraitEvery carries.
const BenchTrait = "CUSTOM_BENCH_TRAIT"

// SeedParams describes the flat compute nodes that Seed creates.
type SeedParams struct {
	Nodes      int // compute nodes to create, named NodeName(i), i in [0, Nodes)
	Workers    int // concurrent HTTP workers; default 16
	Aggregates int // node i joins AggregateUUID(i % Aggregates); default 10
	TraitEvery int // node i gets BenchTrait when i % TraitEvery == 0; default 10
}

func (p *SeedParams) defaults() error {
	if p.Nodes < 1 {
		return fmt.Errorf("seed: --nodes must be at least 1")
	}
	if p.Workers <= 0 {
		p.Workers = 16
	}
	if p.Aggregates <= 0 {
		p.Aggregates = 10
	}
	if p.TraitEvery <= 0 {
		p.TraitEvery = 10
	}
	return nil
}

// SeedResult reports a seeding run.
type SeedResult struct {
	Providers   int           `json:"providers"`
	Requests    int           `json:"requests"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	PerSecond   float64       `json:"providers_per_second"`
	RequestRate float64       `json:"requests_per_second"`
}

func newSeedResult(providers, requests int, elapsed time.Duration) *SeedResult {
	s := elapsed.Seconds()
	return &SeedResult{Providers: providers, Requests: requests, Elapsed: elapsed,
		PerSecond: float64(providers) / s, RequestRate: float64(requests) / s}
}

// Seed creates p.Nodes compute nodes over the API, each with
// ComputeNodeInventory, one aggregate, and BenchTrait on one node in
// p.TraitEvery. Rerunning it against the same server completes a partial
// seed rather than failing. Progress goes to log.
func Seed(ctx context.Context, c *Client, p SeedParams, log io.Writer) (*SeedResult, error) {
	if err := p.defaults(); err != nil {
		return nil, err
	}
	start, sent := time.Now(), c.Requests()
	if err := c.EnsureTrait(ctx, BenchTrait); err != nil {
		return nil, err
	}
	inv := ComputeNodeInventory()
	err := forEach(ctx, p.Nodes, p.Workers, func(ctx context.Context, i int) error {
		rp := NodeUUID(i)
		gen, err := c.EnsureProvider(ctx, ProviderBody{UUID: rp, Name: NodeName(i)})
		if err != nil {
			return err
		}
		if gen, err = c.PutInventories(ctx, rp, gen, inv); err != nil {
			return err
		}
		if gen, err = c.PutAggregates(ctx, rp, gen, []string{AggregateUUID(i % p.Aggregates)}); err != nil {
			return err
		}
		if i%p.TraitEvery == 0 {
			if _, err = c.PutTraits(ctx, rp, gen, []string{BenchTrait}); err != nil {
				return err
			}
		}
		return nil
	}, NewMeter(log, "seed", "nodes", p.Nodes, 0))
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	return newSeedResult(p.Nodes, c.Requests()-sent, time.Since(start)), nil
}
