package scriptlet

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// Check is what storing a scriptlet checks: src compiles
// (Compile, which runs its top level under the default limits),
// and each entry point it defines runs once, against a synthetic request
// and three synthetic candidates (gang_placement: a gang of one in
// three domains), within limits (zero fields: the defaults). It returns the *CompileError, or a *LimitError for
// a run that exceeded a limit (it would on every claim of that size); nil
// otherwise. A refusal or a runtime error on the synthetic data is not an
// error here: the scriptlet may rely on what real claims carry.
func Check(name string, src []byte, limits Limits) error {
	prog, err := Compile(name, src)
	if err != nil {
		return err
	}
	limits = limits.withDefaults()
	limits.OnError = OnErrorRefuse
	limits.Metrics = nil
	var cfg scheduler.PolicyConfig
	if prog.HasPlacement() || prog.HasGangPlacement() {
		cfg.Scriptlet = name
	}
	if prog.HasFilter() {
		cfg.Filters = []scheduler.PluginConfig{{Name: scheduler.StarlarkUnitPrefix + name}}
	}
	if prog.HasWeigh() {
		cfg.Weighers = []scheduler.PluginConfig{{Name: scheduler.StarlarkUnitPrefix + name}}
	}
	pol, err := scheduler.NewPolicy(cfg, nil, NewRuntime(Static{Named: map[string]*Program{name: prog}}, limits))
	if err != nil {
		return fmt.Errorf("scriptlet %q: %w", name, err)
	}
	req, cands := checkRequest()
	var lim *LimitError
	if prog.HasPlacement() || prog.HasFilter() || prog.HasWeigh() {
		if _, err = pol.Rank(context.Background(), req, cands); errors.As(err, &lim) {
			return lim
		}
	}
	if prog.HasGangPlacement() {
		if _, err = pol.RankGang(context.Background(), req, checkGang(cands)); errors.As(err, &lim) {
			return lim
		}
	}
	return nil
}

// checkGang is the synthetic gang Check runs gang_placement on: the
// request's instance as a gang of one, in three domains of one host
// each.
func checkGang(cands []*scheduler.Candidate) []*scheduler.GangPlacement {
	out := make([]*scheduler.GangPlacement, len(cands))
	for i, c := range cands {
		out[i] = &scheduler.GangPlacement{Domain: fmt.Sprintf("00000000-0000-4000-8000-0000000000d%d", i+1), Index: i,
			Hosts: []*scheduler.Candidate{c}, Members: []scheduler.GangMemberPlace{{ConsumerUUID: "00000000-0000-4000-8000-0000000000aa",
				Name: "check-instance", Allocations: c.Allocations}}}
	}
	return out
}

// checkRequest is the synthetic claim Check runs: one VCPU and
// 512 MB for a named instance, and three hosts with room, one of them
// loaded.
func checkRequest() (*scheduler.Request, []*scheduler.Candidate) {
	hosts := make([]*scheduler.ProviderView, 3)
	cands := make([]*scheduler.Candidate, 3)
	for i := range hosts {
		name := fmt.Sprintf("check-host-%d", i+1)
		uuid := fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i+1)
		hosts[i] = &scheduler.ProviderView{Provider: engine.Provider{UUID: uuid, Name: name, RootUUID: uuid}, Traits: []string{"HW_CPU_X86_AVX2"},
			Resources: scheduler.ResourcesOf(map[string]engine.InventoryUsage{
				"VCPU":      {Inventory: engine.Inventory{Total: 16, AllocationRatio: 4, MinUnit: 1, MaxUnit: 16, StepSize: 1}, Capacity: 64, Used: int64(8 * i)},
				"MEMORY_MB": {Inventory: engine.Inventory{Total: 65536, AllocationRatio: 1, MinUnit: 1, MaxUnit: 65536, StepSize: 1}, Capacity: 65536, Used: int64(8192 * i)},
			})}
		cands[i] = &scheduler.Candidate{Index: i, Roots: []string{uuid},
			Allocations: []engine.Allocation{{ProviderUUID: uuid, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}, {Class: "MEMORY_MB", Amount: 512}}}},
			Providers:   map[string]*scheduler.ProviderView{uuid: hosts[i]}}
	}
	req := &scheduler.Request{
		ConsumerUUID: "00000000-0000-4000-8000-0000000000aa", Name: "check-instance",
		ProjectID: "check-project", UserID: "check-user", Reason: "new",
		Resources: map[string]int64{"VCPU": 1, "MEMORY_MB": 512},
		Data:      checkData{hosts: hosts},
	}
	return req, cands
}

// checkData is the synthetic cloud of Check: the hosts, one
// instance on the first.
type checkData struct{ hosts []*scheduler.ProviderView }

var _ scheduler.CloudData = checkData{}

func (d checkData) Instances(_ context.Context, q scheduler.InstancesQuery) ([]scheduler.Instance, error) {
	in := scheduler.Instance{UUID: "00000000-0000-4000-8000-0000000000bb", Name: "check-existing", ProjectID: "check-project",
		UserID: "check-user", Location: d.hosts[0].Name, Resources: map[string]int64{"VCPU": 2}}
	if (q.Location == "" || d.hosts[0].Matches(q.Location)) && (q.Project == "" || q.Project == in.ProjectID) {
		return []scheduler.Instance{in}, nil
	}
	return nil, nil
}

func (d checkData) InstancesCount(ctx context.Context, q scheduler.InstancesQuery) (int, error) {
	is, err := d.Instances(ctx, q)
	return len(is), err
}

func (d checkData) Member(_ context.Context, name string) (*scheduler.ProviderView, error) {
	for _, h := range d.hosts {
		if h.Matches(name) {
			return h, nil
		}
	}
	return nil, nil
}

func (d checkData) Members(context.Context, string) ([]*scheduler.ProviderView, error) {
	return d.hosts, nil
}

func (d checkData) GroupMembers(context.Context, string, string) (map[string]int, error) {
	return map[string]int{}, nil
}

func (d checkData) ConsumerKeys(context.Context, string) ([]scheduler.PlacementKey, error) {
	return nil, nil
}

func (d checkData) PreemptibleUsage(_ context.Context, uuids []string) (map[string][]engine.PreemptibleUsage, error) {
	out := map[string][]engine.PreemptibleUsage{}
	for _, h := range d.hosts {
		if len(h.Preemptible) > 0 && slices.Contains(uuids, h.UUID) {
			out[h.UUID] = h.Preemptible
		}
	}
	return out, nil
}

func (d checkData) States(_ context.Context, uuids []string) (map[string]*engine.ProviderState, error) {
	out := map[string]*engine.ProviderState{}
	for _, h := range d.hosts {
		if h.State != nil {
			out[h.UUID] = h.State
		}
	}
	return out, nil
}
