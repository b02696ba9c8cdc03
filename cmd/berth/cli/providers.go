package cli

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"sort"
	"sync"
)

// provider is a resource provider with its inventories and usages, as
// berth providers -o json prints it.
type provider struct {
	UUID        string               `json:"uuid"`
	Name        string               `json:"name"`
	Generation  int64                `json:"generation"`
	ParentUUID  *string              `json:"parent_provider_uuid"`
	RootUUID    string               `json:"root_provider_uuid"`
	Inventories map[string]inventory `json:"inventories"`
	Usages      map[string]int64     `json:"usages"`
}

type inventory struct {
	Total           int64   `json:"total"`
	Reserved        int64   `json:"reserved"`
	MinUnit         int64   `json:"min_unit"`
	MaxUnit         int64   `json:"max_unit"`
	StepSize        int64   `json:"step_size"`
	AllocationRatio float64 `json:"allocation_ratio"`
}

// Capacity is what Placement lets consumers allocate:
// (total - reserved) * allocation_ratio.
func (i inventory) Capacity() float64 {
	return float64(i.Total-i.Reserved) * i.AllocationRatio
}

// fetchWorkers bounds the concurrent requests of one command.
const fetchWorkers = 8

// fetchProviders lists providers (query: GET /resource_providers
// parameters) and reads each one's inventories and usages, drawing a
// progress bar on a terminal.
func fetchProviders(e *env, query url.Values) ([]*provider, error) {
	var list struct {
		Providers []*provider `json:"resource_providers"`
	}
	path := "/resource_providers"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	if _, err := e.client.JSON(e.ctx, "GET", path, nil, &list); err != nil {
		return nil, err
	}
	bar := NewProgress(e.io.Stderr, e.io.StderrTTY, "providers", len(list.Providers))
	defer bar.Clear()
	err := forEach(e.ctx, len(list.Providers), fetchWorkers, func(ctx context.Context, i int) error {
		p := list.Providers[i]
		var inv struct {
			Inventories map[string]inventory `json:"inventories"`
		}
		if _, err := e.client.JSON(ctx, "GET", "/resource_providers/"+p.UUID+"/inventories", nil, &inv); err != nil {
			return err
		}
		var use struct {
			Usages map[string]int64 `json:"usages"`
		}
		if _, err := e.client.JSON(ctx, "GET", "/resource_providers/"+p.UUID+"/usages", nil, &use); err != nil {
			return err
		}
		p.Inventories, p.Usages = inv.Inventories, use.Usages
		bar.Add(1)
		return nil
	})
	return list.Providers, err
}

// forEach runs fn(0..n-1) on up to workers goroutines and returns the
// first error; after an error no new item starts.
func forEach(parent context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	items := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range items {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case items <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(items)
	wg.Wait()
	if first == nil {
		first = parent.Err()
	}
	return first
}

func providersCommand() *command {
	return &command{
		name:    "providers",
		args:    "[--tree UUID] [--name NAME]",
		summary: "Provider trees with inventories and usage bars per resource class",
		help: `Reads GET /resource_providers, then each provider's inventories and usages
(one request each, 8 at a time; a progress bar shows on a terminal). A bar is
usage over capacity, where capacity = (total - reserved) * allocation_ratio.`,
		example: `berth providers
berth providers --tree 11111111-1111-4111-8111-111111111111
berth providers -o json | jq '.resource_providers[].name'`,
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			tree := fs.String("tree", "", "only the tree that contains provider `UUID`")
			name := fs.String("name", "", "only the provider named `NAME`")
			width := fs.Int("width", 10, "`N` cells per usage bar")
			return func(e *env, args []string) error {
				if err := argsN(args); err != nil {
					return err
				}
				if *width < 1 || *width > 100 {
					return usagef("--width must be 1..100")
				}
				q := url.Values{}
				if *tree != "" {
					q.Set("in_tree", *tree)
				}
				if *name != "" {
					q.Set("name", *name)
				}
				ps, err := fetchProviders(e, q)
				if err != nil {
					return err
				}
				if e.json() {
					return found(len(ps) > 0, e.printValue(map[string]any{"resource_providers": ps}))
				}
				if len(ps) == 0 {
					fmt.Fprintln(e.io.Stdout, "No resource providers.")
					return errNothing
				}
				return RenderTree(ps, *width).Render(e.io.Stdout)
			}
		},
	}
}

// RenderTree lays out providers as trees, roots and siblings by name, each
// provider's inventories as rows of class, bar, percentage and
// used/capacity before its children. A provider whose parent is not in
// the list is shown as a root.
func RenderTree(ps []*provider, width int) *Table {
	byUUID := map[string]*provider{}
	for _, p := range ps {
		byUUID[p.UUID] = p
	}
	children := map[string][]*provider{}
	var roots []*provider
	for _, p := range ps {
		if p.ParentUUID != nil && byUUID[*p.ParentUUID] != nil {
			children[*p.ParentUUID] = append(children[*p.ParentUUID], p)
		} else {
			roots = append(roots, p)
		}
	}
	byName := func(l []*provider) {
		sort.Slice(l, func(i, j int) bool {
			if l[i].Name != l[j].Name {
				return l[i].Name < l[j].Name
			}
			return l[i].UUID < l[j].UUID
		})
	}
	byName(roots)
	t := NewTable().AlignRight(2, 3)
	var walk func(p *provider, prefix string)
	walk = func(p *provider, prefix string) {
		kids := children[p.UUID]
		byName(kids)
		classes := sortedKeys(p.Inventories)
		n := len(classes) + len(kids)
		item := 0
		branch := func() (string, string) {
			item++
			if item == n {
				return prefix + "└─ ", prefix + "   "
			}
			return prefix + "├─ ", prefix + "│  "
		}
		for _, c := range classes {
			head, _ := branch()
			bar, pct, ratio := UsageBar(float64(p.Usages[c]), p.Inventories[c].Capacity(), width)
			t.Row(head+c, bar, pct, ratio)
		}
		for _, k := range kids {
			head, next := branch()
			t.Line(head + k.Name + "  " + k.UUID)
			walk(k, next)
		}
	}
	for _, r := range roots {
		t.Line(r.Name + "  " + r.UUID)
		walk(r, "")
	}
	return t
}

func providersTotals(ps []*provider) (used, capacity map[string]float64) {
	used, capacity = map[string]float64{}, map[string]float64{}
	for _, p := range ps {
		for c, inv := range p.Inventories {
			capacity[c] += inv.Capacity()
			used[c] += float64(p.Usages[c])
		}
	}
	return used, capacity
}
