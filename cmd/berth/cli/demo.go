package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/http"

	"github.com/berthd/berth/httpapi/client"
)

// The demo cloud's names: the README and docs/cli.md use them, and
// TestDemoSession checks that their commands print what they show.
const (
	demoAggA = "7b1e0000-0000-4000-8000-00000000000a" // compute-1, compute-2
	demoAggB = "7b1e0000-0000-4000-8000-00000000000b" // compute-3, compute-4
	demoGPU  = "0c0a1b2c-0000-4000-8000-000000000041" // compute-4's child
)

// demoCompute is the uuid of compute-N.
func demoCompute(n int) string { return fmt.Sprintf("0c0a1b2c-0000-4000-8000-%012d", n) }

// demoStep is one request of the demo's seed.
type demoStep struct {
	method, path string
	body         any
}

// demoSteps seeds four compute nodes (32 VCPU at ratio 4, 128 GiB of
// memory with 4 GiB reserved, 2000 GB of disk with 100 reserved) in two
// aggregates, AVX2 on the first two, a GPU child under compute-4 with
// 4 CUSTOM_GPU_A100, and five instances: four of project demo, one of ops.
func demoSteps() []demoStep {
	var s []demoStep
	add := func(method, path string, body any) { s = append(s, demoStep{method, path, body}) }
	add("PUT", "/resource_classes/CUSTOM_GPU_A100", nil)
	for n := 1; n <= 4; n++ {
		rp := demoCompute(n)
		add("POST", "/resource_providers", map[string]any{"name": fmt.Sprintf("compute-%d", n), "uuid": rp})
		add("PUT", "/resource_providers/"+rp+"/inventories", map[string]any{
			"resource_provider_generation": 0,
			"inventories": map[string]any{
				"VCPU":      map[string]any{"total": 32, "allocation_ratio": 4.0},
				"MEMORY_MB": map[string]any{"total": 131072, "reserved": 4096},
				"DISK_GB":   map[string]any{"total": 2000, "reserved": 100},
			}})
		traits := []string{"COMPUTE_VOLUME_MULTI_ATTACH"}
		agg := demoAggB
		if n <= 2 {
			traits = append(traits, "HW_CPU_X86_AVX2")
			agg = demoAggA
		}
		add("PUT", "/resource_providers/"+rp+"/traits", map[string]any{"resource_provider_generation": 1, "traits": traits})
		add("PUT", "/resource_providers/"+rp+"/aggregates", map[string]any{"resource_provider_generation": 2, "aggregates": []string{agg}})
	}
	add("POST", "/resource_providers", map[string]any{"name": "compute-4-gpu0", "uuid": demoGPU, "parent_provider_uuid": demoCompute(4)})
	add("PUT", "/resource_providers/"+demoGPU+"/inventories", map[string]any{
		"resource_provider_generation": 0,
		"inventories":                  map[string]any{"CUSTOM_GPU_A100": map[string]any{"total": 4}}})
	instance := func(n int, project, user string, allocs map[string]any) {
		add("PUT", fmt.Sprintf("/allocations/d0000000-0000-4000-8000-%012d", n), map[string]any{
			"allocations": allocs, "project_id": project, "user_id": user,
			"consumer_generation": nil, "consumer_type": "INSTANCE"})
	}
	res := func(vcpu, mem, disk int) map[string]any {
		return map[string]any{"resources": map[string]any{"VCPU": vcpu, "MEMORY_MB": mem, "DISK_GB": disk}}
	}
	instance(1, "demo", "alice", map[string]any{demoCompute(1): res(16, 32768, 200)})
	instance(2, "demo", "alice", map[string]any{demoCompute(1): res(16, 32768, 200)})
	instance(3, "demo", "bob", map[string]any{demoCompute(2): res(8, 16384, 100)})
	instance(4, "demo", "bob", map[string]any{demoCompute(4): res(8, 16384, 80),
		demoGPU: map[string]any{"resources": map[string]any{"CUSTOM_GPU_A100": 2}}})
	instance(5, "ops", "carol", map[string]any{demoCompute(3): res(64, 98304, 500)})
	return s
}

func demoCommand() *command {
	return &command{
		name:    "demo",
		summary: "Seed a small demo cloud on an empty server (the one the README and docs/cli.md use)",
		help: `Creates, through the Placement API: compute-1 to compute-4
(0c0a1b2c-0000-4000-8000-00000000000N; VCPU 128, MEMORY_MB 126976,
DISK_GB 1900 of capacity each) in aggregates 7b1e0000-...-00000000000a
(compute-1, compute-2: HW_CPU_X86_AVX2) and 7b1e0000-...-00000000000b,
compute-4-gpu0 under compute-4 with 4 CUSTOM_GPU_A100, and five instances
of projects demo and ops. Refuses to run twice.`,
		example: "berth demo && berth providers",
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			return func(e *env, args []string) error {
				if err := argsN(args); err != nil {
					return err
				}
				steps := demoSteps()
				for i, st := range steps {
					if _, err := e.client.JSON(e.ctx, st.method, st.path, st.body, nil); err != nil {
						var ae *client.Error
						if i <= 1 && errors.As(err, &ae) && ae.Status == http.StatusConflict {
							return fmt.Errorf("the demo cloud is already there (%w)", err)
						}
						return err
					}
				}
				fmt.Fprintf(e.io.Stdout, "Seeded the demo cloud: 5 providers, 5 instances (%d requests). Try: berth providers\n", len(steps))
				return nil
			}
		},
	}
}
