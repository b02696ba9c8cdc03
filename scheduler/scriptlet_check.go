package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/berthd/berth/ledger/engine"
)

// CheckScriptlet is what storing a scriptlet checks: src compiles
// (CompileScriptlet, which runs its top level under the default limits),
// and each entry point it defines runs once, against a synthetic request
// and three synthetic candidates, within limits (zero fields: the
// defaults). It returns the *CompileError, or a *ScriptletLimitError for
// a run that exceeded a limit (it would on every claim of that size); nil
// otherwise. A refusal or a runtime error on the synthetic data is not an
// error here: the scriptlet may rely on what real claims carry.
func CheckScriptlet(name string, src []byte, limits ScriptletLimits) error {
	prog, err := CompileScriptlet(name, src)
	if err != nil {
		return err
	}
	limits = limits.withDefaults()
	limits.OnError = OnErrorRefuse
	limits.Metrics = nil
	var cfg PolicyConfig
	if prog.HasPlacement() {
		cfg.Scriptlet = name
	}
	if prog.HasFilter() {
		cfg.Filters = []PluginConfig{{Name: StarlarkUnitPrefix + name}}
	}
	if prog.HasWeigh() {
		cfg.Weighers = []PluginConfig{{Name: StarlarkUnitPrefix + name}}
	}
	pol, err := NewPolicy(cfg, nil, StaticScriptlets{Named: map[string]*Program{name: prog}}, limits)
	if err != nil {
		return fmt.Errorf("scriptlet %q: %w", name, err)
	}
	req, cands := checkRequest()
	_, err = pol.Rank(context.Background(), req, cands)
	var lim *ScriptletLimitError
	if errors.As(err, &lim) {
		return lim
	}
	return nil
}

// checkRequest is the synthetic claim CheckScriptlet runs: one VCPU and
// 512 MB for a named instance, and three hosts with room, one of them
// loaded.
func checkRequest() (*Request, []*Candidate) {
	hosts := make([]*Provider, 3)
	cands := make([]*Candidate, 3)
	for i := range hosts {
		name := fmt.Sprintf("check-host-%d", i+1)
		uuid := fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i+1)
		hosts[i] = &Provider{UUID: uuid, Name: name, RootUUID: uuid, Traits: []string{"HW_CPU_X86_AVX2"},
			Resources: InventoriesOf(map[string]Inventory{
				"VCPU":      {Total: 16, Capacity: 64, Used: int64(8 * i), AllocationRatio: 4, MinUnit: 1, MaxUnit: 16, StepSize: 1},
				"MEMORY_MB": {Total: 65536, Capacity: 65536, Used: int64(8192 * i), AllocationRatio: 1, MinUnit: 1, MaxUnit: 65536, StepSize: 1},
			})}
		cands[i] = &Candidate{Index: i, Roots: []string{uuid},
			Allocations: []engine.Allocation{{ProviderUUID: uuid, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}, {Class: "MEMORY_MB", Amount: 512}}}},
			Providers:   map[string]*Provider{uuid: hosts[i]}}
	}
	req := &Request{
		ConsumerUUID: "00000000-0000-4000-8000-0000000000aa", Name: "check-instance",
		ProjectID: "check-project", UserID: "check-user", Reason: "new",
		Resources: map[string]int64{"VCPU": 1, "MEMORY_MB": 512},
		Data:      checkData{hosts: hosts},
	}
	return req, cands
}

// checkData is the synthetic cloud of CheckScriptlet: the hosts, one
// instance on the first.
type checkData struct{ hosts []*Provider }

var _ CloudData = checkData{}

func (d checkData) Instances(_ context.Context, q InstancesQuery) ([]Instance, error) {
	in := Instance{UUID: "00000000-0000-4000-8000-0000000000bb", Name: "check-existing", ProjectID: "check-project",
		UserID: "check-user", Location: d.hosts[0].Name, Resources: map[string]int64{"VCPU": 2}}
	if (q.Location == "" || d.hosts[0].matches(q.Location)) && (q.Project == "" || q.Project == in.ProjectID) {
		return []Instance{in}, nil
	}
	return nil, nil
}

func (d checkData) InstancesCount(ctx context.Context, q InstancesQuery) (int, error) {
	is, err := d.Instances(ctx, q)
	return len(is), err
}

func (d checkData) Member(_ context.Context, name string) (*Provider, error) {
	for _, h := range d.hosts {
		if h.matches(name) {
			return h, nil
		}
	}
	return nil, nil
}

func (d checkData) Members(context.Context, string) ([]*Provider, error) { return d.hosts, nil }

func (d checkData) GroupMembers(context.Context, string, string) (map[string]int, error) {
	return map[string]int{}, nil
}

func (d checkData) ConsumerKeys(context.Context, string) ([]PlacementKey, error) { return nil, nil }

func (d checkData) States(_ context.Context, uuids []string) (map[string]*ProviderState, error) {
	out := map[string]*ProviderState{}
	for _, h := range d.hosts {
		if h.State != nil {
			out[h.UUID] = h.State
		}
	}
	return out, nil
}
