package load

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/berthd/berth/httpapi/client"
)

// newGeneration is the part of a PUT's answer that the writers use: the
// provider's new generation. Decoding only it (the decoder skips the rest)
// spares the load tool building the echoed inventories, aggregates or
// traits of every answer.
type newGeneration struct {
	ResourceProviderGeneration int `json:"resource_provider_generation"`
}

// EnsureProvider creates provider p and returns its generation. If a
// provider with p's UUID already exists (a rerun), it returns that
// provider's generation instead, so seeding can be resumed; a name taken by
// another UUID is an error.
func (c *Client) EnsureProvider(ctx context.Context, p ProviderBody) (int, error) {
	var out ProviderBody
	_, err := c.JSON(ctx, http.MethodPost, "/resource_providers", p, &out)
	if err == nil {
		return out.Generation, nil
	}
	if !client.IsStatus(err, http.StatusConflict) {
		return 0, err
	}
	if _, gerr := c.JSON(ctx, http.MethodGet, "/resource_providers/"+p.UUID, nil, &out); gerr != nil {
		return 0, fmt.Errorf("%w (and reading it back: %v)", err, gerr)
	}
	return out.Generation, nil
}

// SeedProvider ensures provider p (EnsureProvider), then puts its
// inventories and, if any are given, its traits, each at the generation
// the previous answer returned.
func (c *Client) SeedProvider(ctx context.Context, p ProviderBody, inv map[string]InventoryBody, traits ...string) error {
	gen, err := c.EnsureProvider(ctx, p)
	if err != nil {
		return err
	}
	if gen, err = c.PutInventories(ctx, p.UUID, gen, inv); err != nil {
		return err
	}
	if len(traits) > 0 {
		_, err = c.PutTraits(ctx, p.UUID, gen, traits)
	}
	return err
}

// PutInventories replaces the provider's inventories at generation gen and
// returns the new generation.
func (c *Client) PutInventories(ctx context.Context, rp string, gen int, inv map[string]InventoryBody) (int, error) {
	var out newGeneration
	_, err := c.JSON(ctx, http.MethodPut, "/resource_providers/"+rp+"/inventories",
		InventoriesBody{ResourceProviderGeneration: gen, Inventories: inv}, &out)
	return out.ResourceProviderGeneration, err
}

// PutAggregates replaces the provider's aggregates at generation gen (1.19+)
// and returns the new generation.
func (c *Client) PutAggregates(ctx context.Context, rp string, gen int, aggs []string) (int, error) {
	var out newGeneration
	_, err := c.JSON(ctx, http.MethodPut, "/resource_providers/"+rp+"/aggregates",
		AggregatesBody{Aggregates: aggs, ResourceProviderGeneration: gen}, &out)
	return out.ResourceProviderGeneration, err
}

// PutTraits replaces the provider's traits at generation gen and returns
// the new generation.
func (c *Client) PutTraits(ctx context.Context, rp string, gen int, traits []string) (int, error) {
	var out newGeneration
	_, err := c.JSON(ctx, http.MethodPut, "/resource_providers/"+rp+"/traits",
		TraitsBody{Traits: traits, ResourceProviderGeneration: gen}, &out)
	return out.ResourceProviderGeneration, err
}

// EnsureTrait creates a custom trait (201) or accepts that it exists (204).
func (c *Client) EnsureTrait(ctx context.Context, name string) error {
	_, err := c.Do(ctx, http.MethodPut, "/traits/"+name, nil, http.StatusCreated, http.StatusNoContent)
	return err
}

// EnsureResourceClass creates a custom resource class (201, 1.7+) or
// accepts that it exists (204).
func (c *Client) EnsureResourceClass(ctx context.Context, name string) error {
	_, err := c.Do(ctx, http.MethodPut, "/resource_classes/"+name, nil, http.StatusCreated, http.StatusNoContent)
	return err
}

// ListProviders returns every resource provider (GET /resource_providers).
func (c *Client) ListProviders(ctx context.Context) ([]ProviderBody, error) {
	var out struct {
		ResourceProviders []ProviderBody `json:"resource_providers"`
	}
	_, err := c.JSON(ctx, http.MethodGet, "/resource_providers", nil, &out)
	return out.ResourceProviders, err
}

// forEach calls fn(ctx, i) for i in [0, n) on workers goroutines. The first
// error cancels the calls not yet started and is returned. meter, when
// non-nil, is shown the number of finished calls every meter.Every().
func forEach(ctx context.Context, n, workers int, fn func(context.Context, int) error, meter *Meter) error {
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	stop := meter.tick(func() { meter.Show(int(done.Load()), "") })
	wg.Wait()
	stop()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return ctx.Err()
}
