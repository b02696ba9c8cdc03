package scriptlet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// The scheduler's test helpers the runtime's tests use too: candidates,
// a CloudData over fixed values, a ranking's order.

// cand builds a candidate on root r taking amount of VCPU from a provider
// with capacity cap and used in use.
func cand(index int, r string, capacity, used, amount int64, traits ...string) *scheduler.Candidate {
	p := &scheduler.ProviderView{Provider: engine.Provider{UUID: r, Name: r, RootUUID: r}, Traits: traits,
		Resources: scheduler.ResourcesOf(map[string]engine.InventoryUsage{"VCPU": {Capacity: capacity, Used: used, Inventory: engine.Inventory{Total: capacity}}})}
	return &scheduler.Candidate{
		Index:       index,
		Roots:       []string{r},
		Allocations: []engine.Allocation{{ProviderUUID: r, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: amount}}}},
		Providers:   map[string]*scheduler.ProviderView{r: p},
	}
}

// with applies fn to the candidate's root provider and returns c.
func with(c *scheduler.Candidate, fn func(p *scheduler.ProviderView)) *scheduler.Candidate {
	fn(c.RootProvider())
	return c
}

// fakeData is a CloudData over fixed values; it counts GroupMembers
// and ConsumerKeys calls.
type fakeData struct {
	members   []*scheduler.ProviderView
	instances []scheduler.Instance
	groups    map[string]map[string]int // "key=value" -> root -> count
	keys      map[string][]scheduler.PlacementKey
	err       error
	calls     atomic.Int64
	listed    atomic.Int64 // consumers the last Instances call read
}

func (d *fakeData) Instances(_ context.Context, q scheduler.InstancesQuery) ([]scheduler.Instance, error) {
	var out []scheduler.Instance
	for _, in := range d.instances {
		if q.Max > 0 && len(out) > q.Max {
			break
		}
		if (q.Location == "" || in.Location == q.Location) && (q.Project == "" || in.ProjectID == q.Project) {
			if !q.Documents {
				in.Instance = nil
			}
			out = append(out, in)
		}
	}
	d.listed.Store(int64(len(out)))
	return out, d.err
}

func (d *fakeData) InstancesCount(ctx context.Context, q scheduler.InstancesQuery) (int, error) {
	is, err := d.Instances(ctx, scheduler.InstancesQuery{Location: q.Location, Project: q.Project})
	return len(is), err
}

func (d *fakeData) Member(_ context.Context, name string) (*scheduler.ProviderView, error) {
	for _, p := range d.members {
		if p.Matches(name) {
			return p, d.err
		}
	}
	return nil, d.err
}

func (d *fakeData) Members(_ context.Context, aggregate string) ([]*scheduler.ProviderView, error) {
	var out []*scheduler.ProviderView
	for _, p := range d.members {
		if aggregate == "" || strings.Contains(strings.Join(p.Aggregates, ","), aggregate) {
			out = append(out, p)
		}
	}
	return out, d.err
}

func (d *fakeData) GroupMembers(_ context.Context, key, value string) (map[string]int, error) {
	d.calls.Add(1)
	return d.groups[key+"="+value], d.err
}

func (d *fakeData) ConsumerKeys(_ context.Context, consumer string) ([]scheduler.PlacementKey, error) {
	d.calls.Add(1)
	return d.keys[consumer], d.err
}

// order ranks cands with a policy of cfg and returns the roots, best
// first.
func order(t *testing.T, cfg string, req *scheduler.Request, cands []*scheduler.Candidate) string {
	t.Helper()
	pc, err := scheduler.ParsePolicyConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := scheduler.NewPolicy(pc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Rank(context.Background(), req, cands)
	if err != nil {
		t.Fatal(err)
	}
	return roots(r)
}

func roots(r *scheduler.Ranking) string {
	var out []string
	for _, s := range r.Ranked {
		out = append(out, s.Cand.Root())
	}
	return strings.Join(out, ",")
}

func (d *fakeData) PreemptibleUsage(_ context.Context, uuids []string) (map[string][]engine.PreemptibleUsage, error) {
	d.calls.Add(1)
	out := map[string][]engine.PreemptibleUsage{}
	for _, p := range d.members {
		if len(p.Preemptible) > 0 && slices.Contains(uuids, p.UUID) {
			out[p.UUID] = p.Preemptible
		}
	}
	return out, d.err
}

func (d *fakeData) States(_ context.Context, uuids []string) (map[string]*engine.ProviderState, error) {
	d.calls.Add(1)
	out := map[string]*engine.ProviderState{}
	for _, p := range d.members {
		if p.State != nil && slices.Contains(uuids, p.UUID) {
			out[p.UUID] = p.State
		}
	}
	return out, d.err
}

func inst(uuid, location string, vcpu, mem int64) scheduler.Instance {
	return scheduler.Instance{UUID: uuid, Location: location, Resources: map[string]int64{"VCPU": vcpu, "MEMORY_MB": mem}}
}

// benchCands builds n single-root candidates with VCPU, MEMORY_MB and
// DISK_GB, consumer counts, a placement key and a trait on every tenth.
func benchCands(n int) []*scheduler.Candidate {
	cands := make([]*scheduler.Candidate, n)
	for i := range cands {
		r := fmt.Sprintf("rp%05d", i)
		p := &scheduler.ProviderView{Provider: engine.Provider{UUID: r, Name: r, RootUUID: r}, Consumers: i % 17,
			Keys: []scheduler.PlacementKey{{Name: "zone", Value: float64(i%10) / 10}},
			Resources: scheduler.ResourcesOf(map[string]engine.InventoryUsage{
				"VCPU":      {Capacity: 64, Used: int64(i % 60), Inventory: engine.Inventory{Total: 32}},
				"MEMORY_MB": {Capacity: 262144, Used: int64(i%200) * 1024, Inventory: engine.Inventory{Total: 262144}},
				"DISK_GB":   {Capacity: 2000, Used: int64(i % 1500), Inventory: engine.Inventory{Total: 2000}},
			})}
		if i%10 == 0 {
			p.Traits = []string{"CUSTOM_OLD"}
		}
		cands[i] = &scheduler.Candidate{Index: i, Roots: []string{r}, Providers: map[string]*scheduler.ProviderView{r: p},
			Allocations: []engine.Allocation{{ProviderUUID: r, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 2}, {Class: "MEMORY_MB", Amount: 4096}, {Class: "DISK_GB", Amount: 20}}}}}
	}
	return cands
}

// cpuTime is the CPU time the process used so far (user and system, all
// threads): on a shared machine it measures the work where wall time
// measures the neighbours too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
