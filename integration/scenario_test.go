package integration

import (
	"encoding/json"
	"maps"
	"reflect"
	"testing"
)

// UUIDs of the scenario's providers and consumers.
const (
	cn1UUID       = "c1000000-0000-4000-8000-000000000001"
	cn1GPUUUID    = "c1000000-0000-4000-8000-0000000000a1"
	cn2UUID       = "c2000000-0000-4000-8000-000000000002"
	agg1UUID      = "a1000000-0000-4000-8000-000000000001"
	inst1UUID     = "11000000-0000-4000-8000-000000000001"
	inst2UUID     = "11000000-0000-4000-8000-000000000002"
	inst3UUID     = "11000000-0000-4000-8000-000000000003"
	migrationUUID = "f1000000-0000-4000-8000-0000000000f1"
)

// resources is what a consumer holds on one provider, by class.
type resources map[string]int64

// allocationsDoc is GET /allocations/{consumer} at 1.38 and later.
type allocationsDoc struct {
	Allocations map[string]struct {
		Generation int64     `json:"generation"`
		Resources  resources `json:"resources"`
	} `json:"allocations"`
	ConsumerGeneration *int64 `json:"consumer_generation"`
	ProjectID          string `json:"project_id"`
	UserID             string `json:"user_id"`
	ConsumerType       string `json:"consumer_type"`
}

// byProvider flattens allocationsDoc to provider -> resources.
func (d allocationsDoc) byProvider() map[string]resources {
	out := map[string]resources{}
	for rp, a := range d.Allocations {
		out[rp] = a.Resources
	}
	return out
}

// candidatesDoc is GET /allocation_candidates.
type candidatesDoc struct {
	AllocationRequests []struct {
		Allocations map[string]struct {
			Resources resources `json:"resources"`
		} `json:"allocations"`
		Mappings map[string][]string `json:"mappings"`
	} `json:"allocation_requests"`
	ProviderSummaries map[string]struct {
		Resources map[string]struct {
			Capacity int64 `json:"capacity"`
			Used     int64 `json:"used"`
		} `json:"resources"`
		Traits []string `json:"traits"`
	} `json:"provider_summaries"`
}

// request returns allocation request i as provider -> resources.
func (d candidatesDoc) request(i int) map[string]resources {
	out := map[string]resources{}
	for rp, a := range d.AllocationRequests[i].Allocations {
		out[rp] = a.Resources
	}
	return out
}

// allocationsBody is the body of PUT /allocations/{consumer}, or one
// consumer's entry in POST /allocations.
func allocationsBody(allocs map[string]resources, project, user string, generation *int64, consumerType string) map[string]any {
	a := map[string]any{}
	for rp, res := range allocs {
		a[rp] = map[string]any{"resources": res}
	}
	return map[string]any{
		"allocations":         a,
		"project_id":          project,
		"user_id":             user,
		"consumer_generation": generation,
		"consumer_type":       consumerType,
	}
}

func gen(n int64) *int64 { return &n }

func (b *berthd) usages(t *testing.T, rp string) resources {
	t.Helper()
	var doc struct {
		Usages resources `json:"usages"`
	}
	b.must(t, 200, "GET", "/resource_providers/"+rp+"/usages", "", nil, &doc)
	return doc.Usages
}

func (b *berthd) allocations(t *testing.T, consumer string) allocationsDoc {
	t.Helper()
	var doc allocationsDoc
	b.must(t, 200, "GET", "/allocations/"+consumer, "", nil, &doc)
	return doc
}

// checkUsages fails t unless every provider's usages are want's (a class
// left out must be 0).
func (b *berthd) checkUsages(t *testing.T, step string, want map[string]resources) {
	t.Helper()
	for rp, w := range want {
		got := b.usages(t, rp)
		for class, n := range got {
			if n != w[class] {
				t.Errorf("%s: provider %s uses %d %s, want %d (usages %v)", step, rp, n, class, w[class], got)
			}
		}
		for class, n := range w {
			if got[class] != n {
				t.Errorf("%s: provider %s uses %d %s, want %d (usages %v)", step, rp, got[class], class, n, got)
			}
		}
	}
}

// TestComputeScenario plays, against the berthd binary, what a compute
// agent, the scheduler and the conductor do over an instance's life:
// report a provider tree with inventories and traits, ask for allocation
// candidates, claim one, migrate with POST /allocations to a migration
// consumer and revert, delete on reschedule, read usages per project, and
// decommission a compute node.
func TestComputeScenario(t *testing.T) {
	b := startBerthd(t)

	// The compute agents report their providers.
	b.must(t, 201, "PUT", "/traits/CUSTOM_GOLD", "", nil, nil)
	for _, p := range []map[string]any{
		{"name": "compute1", "uuid": cn1UUID},
		{"name": "compute1_gpu0", "uuid": cn1GPUUUID, "parent_provider_uuid": cn1UUID},
		{"name": "compute2", "uuid": cn2UUID},
	} {
		b.must(t, 200, "POST", "/resource_providers", "", p, nil)
	}
	inventories := map[string]map[string]any{
		cn1UUID: {
			"VCPU":      map[string]any{"total": 16, "allocation_ratio": 2.0},
			"MEMORY_MB": map[string]any{"total": 16384, "max_unit": 16384},
			"DISK_GB":   map[string]any{"total": 200, "reserved": 20},
		},
		cn1GPUUUID: {"VGPU": map[string]any{"total": 4}},
		cn2UUID: {
			"VCPU":      map[string]any{"total": 8},
			"MEMORY_MB": map[string]any{"total": 8192},
			"DISK_GB":   map[string]any{"total": 100},
		},
	}
	gens := map[string]int64{}
	for rp, inv := range inventories {
		var doc struct {
			Generation int64 `json:"resource_provider_generation"`
		}
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "",
			map[string]any{"resource_provider_generation": 0, "inventories": inv}, &doc)
		gens[rp] = doc.Generation
	}
	for rp, traits := range map[string][]string{cn1UUID: {"HW_CPU_X86_AVX2", "CUSTOM_GOLD"}, cn2UUID: {"HW_CPU_X86_AVX2"}} {
		var doc struct {
			Generation int64 `json:"resource_provider_generation"`
		}
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/traits", "",
			map[string]any{"resource_provider_generation": gens[rp], "traits": traits}, &doc)
		gens[rp] = doc.Generation
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/aggregates", "",
			map[string]any{"resource_provider_generation": gens[rp], "aggregates": []string{agg1UUID}}, &doc)
		gens[rp] = doc.Generation
	}
	var tree struct {
		Providers []struct {
			UUID string `json:"uuid"`
			Root string `json:"root_provider_uuid"`
		} `json:"resource_providers"`
	}
	b.must(t, 200, "GET", "/resource_providers?in_tree="+cn1GPUUUID, "", nil, &tree)
	if len(tree.Providers) != 2 {
		t.Fatalf("tree of compute1: %+v", tree.Providers)
	}

	// The scheduler asks for a gold host: only compute1 has the trait.
	var cands candidatesDoc
	b.must(t, 200, "GET", "/allocation_candidates?resources=VCPU:4,MEMORY_MB:2048,DISK_GB:20&required=CUSTOM_GOLD&member_of="+agg1UUID+"&limit=5", "", nil, &cands)
	inst1Source := map[string]resources{cn1UUID: {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20}}
	if len(cands.AllocationRequests) != 1 || !reflect.DeepEqual(cands.request(0), inst1Source) {
		t.Fatalf("gold candidates: %+v", cands.AllocationRequests)
	}
	if c := cands.ProviderSummaries[cn1UUID].Resources["VCPU"].Capacity; c != 32 {
		t.Errorf("compute1 VCPU capacity %d, want 32", c)
	}
	// A vGPU request: the GPU comes from compute1's child.
	var gpuCands candidatesDoc
	b.must(t, 200, "GET", "/allocation_candidates?resources=VCPU:2,MEMORY_MB:1024&resources1=VGPU:1&group_policy=isolate", "", nil, &gpuCands)
	inst2Alloc := map[string]resources{cn1UUID: {"VCPU": 2, "MEMORY_MB": 1024}, cn1GPUUUID: {"VGPU": 1}}
	if len(gpuCands.AllocationRequests) != 1 || !reflect.DeepEqual(gpuCands.request(0), inst2Alloc) {
		t.Fatalf("vGPU candidates: %+v", gpuCands.AllocationRequests)
	}

	// The conductor claims both candidates, as Nova does, mappings included.
	claim := allocationsBody(cands.request(0), "projA", "alice", nil, "INSTANCE")
	claim["mappings"] = cands.AllocationRequests[0].Mappings
	b.must(t, 204, "PUT", "/allocations/"+inst1UUID, "", claim, nil)
	b.must(t, 204, "PUT", "/allocations/"+inst2UUID, "", allocationsBody(gpuCands.request(0), "projB", "bob", nil, "INSTANCE"), nil)
	got := b.allocations(t, inst1UUID)
	if !reflect.DeepEqual(got.byProvider(), inst1Source) || got.ConsumerGeneration == nil || *got.ConsumerGeneration != 1 ||
		got.ProjectID != "projA" || got.UserID != "alice" || got.ConsumerType != "INSTANCE" {
		t.Fatalf("allocations of inst1: %+v", got)
	}
	b.checkUsages(t, "after the claims", map[string]resources{
		cn1UUID:    {"VCPU": 6, "MEMORY_MB": 3072, "DISK_GB": 20},
		cn1GPUUUID: {"VGPU": 1},
		cn2UUID:    {},
	})
	// A second claim for the same consumer with a stale generation is refused.
	if status, body := b.call(t, "PUT", "/allocations/"+inst1UUID, "", allocationsBody(inst1Source, "projA", "alice", nil, "INSTANCE")); status != 409 {
		t.Errorf("claim with a stale consumer generation: %d %s", status, body)
	}

	// Cold migration of inst1 to compute2: the scheduler targets the host,
	// the conductor moves the source allocations to the migration consumer
	// and gives the instance the destination's, in one request.
	var dest candidatesDoc
	b.must(t, 200, "GET", "/allocation_candidates?resources=VCPU:4,MEMORY_MB:2048,DISK_GB:20&in_tree="+cn2UUID, "", nil, &dest)
	inst1Dest := map[string]resources{cn2UUID: {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20}}
	if len(dest.AllocationRequests) != 1 || !reflect.DeepEqual(dest.request(0), inst1Dest) {
		t.Fatalf("candidates on compute2: %+v", dest.AllocationRequests)
	}
	b.must(t, 204, "POST", "/allocations", "", map[string]any{
		migrationUUID: allocationsBody(inst1Source, "projA", "alice", nil, "MIGRATION"),
		inst1UUID:     allocationsBody(inst1Dest, "projA", "alice", gen(1), "INSTANCE"),
	}, nil)
	if got := b.allocations(t, migrationUUID).byProvider(); !reflect.DeepEqual(got, inst1Source) {
		t.Errorf("migration consumer holds %v, want %v", got, inst1Source)
	}
	if got := b.allocations(t, inst1UUID).byProvider(); !reflect.DeepEqual(got, inst1Dest) {
		t.Errorf("inst1 holds %v, want %v", got, inst1Dest)
	}
	b.checkUsages(t, "during the migration", map[string]resources{
		cn1UUID: {"VCPU": 6, "MEMORY_MB": 3072, "DISK_GB": 20},
		cn2UUID: {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20},
	})
	var byType struct {
		Usages map[string]map[string]int64 `json:"usages"`
	}
	b.must(t, 200, "GET", "/usages?project_id=projA", "", nil, &byType)
	if want := map[string]map[string]int64{
		"INSTANCE":  {"consumer_count": 1, "VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20},
		"MIGRATION": {"consumer_count": 1, "VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20},
	}; !reflect.DeepEqual(byType.Usages, want) {
		t.Errorf("usages of projA during the migration: %v, want %v", byType.Usages, want)
	}

	// Revert: the instance gets the source allocations back from the
	// migration consumer, which is left with nothing.
	b.must(t, 204, "POST", "/allocations", "", map[string]any{
		inst1UUID:     allocationsBody(inst1Source, "projA", "alice", gen(2), "INSTANCE"),
		migrationUUID: allocationsBody(nil, "projA", "alice", gen(1), "MIGRATION"),
	}, nil)
	if got := b.allocations(t, migrationUUID); len(got.Allocations) != 0 {
		t.Errorf("migration consumer after the revert: %+v", got)
	}
	if got := b.allocations(t, inst1UUID).byProvider(); !reflect.DeepEqual(got, inst1Source) {
		t.Errorf("inst1 after the revert holds %v, want %v", got, inst1Source)
	}
	b.checkUsages(t, "after the revert", map[string]resources{
		cn1UUID: {"VCPU": 6, "MEMORY_MB": 3072, "DISK_GB": 20},
		cn2UUID: {},
	})

	// inst2's build failed on compute1: the conductor deletes its
	// allocations before rescheduling.
	b.must(t, 204, "DELETE", "/allocations/"+inst2UUID, "", nil, nil)
	if got := b.allocations(t, inst2UUID); len(got.Allocations) != 0 {
		t.Errorf("inst2 after delete: %+v", got)
	}
	b.checkUsages(t, "after the reschedule", map[string]resources{
		cn1UUID:    {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20},
		cn1GPUUUID: {},
	})
	// And lands on compute2.
	b.must(t, 204, "PUT", "/allocations/"+inst2UUID, "", allocationsBody(map[string]resources{cn2UUID: {"VCPU": 2, "MEMORY_MB": 1024}},
		"projB", "bob", nil, "INSTANCE"), nil)
	b.must(t, 204, "PUT", "/allocations/"+inst3UUID, "", allocationsBody(map[string]resources{cn2UUID: {"VCPU": 1}},
		"projB", "carol", nil, "INSTANCE"), nil)

	// Usages per project, and per user, as quotas read them.
	for _, c := range []struct {
		query, version string
		want           map[string]int64
	}{
		{"project_id=projA", "1.9", map[string]int64{"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20}},
		{"project_id=projB", "1.9", map[string]int64{"VCPU": 3, "MEMORY_MB": 1024}},
		{"project_id=projB&user_id=carol", "1.9", map[string]int64{"VCPU": 1}},
		{"project_id=nobody", "1.9", map[string]int64{}},
	} {
		var doc struct {
			Usages map[string]int64 `json:"usages"`
		}
		b.must(t, 200, "GET", "/usages?"+c.query, c.version, nil, &doc)
		if !maps.Equal(doc.Usages, c.want) {
			t.Errorf("usages %s: %v, want %v", c.query, doc.Usages, c.want)
		}
	}

	// Decommissioning compute2 is refused while instances use it.
	if status, body := b.call(t, "DELETE", "/resource_providers/"+cn2UUID, "", nil); status != 409 {
		t.Errorf("delete a provider in use: %d %s", status, body)
	}
	for _, inst := range []string{inst2UUID, inst3UUID} {
		b.must(t, 204, "DELETE", "/allocations/"+inst, "", nil, nil)
	}
	b.must(t, 204, "DELETE", "/resource_providers/"+cn2UUID, "", nil, nil)
	var list struct {
		Providers []json.RawMessage `json:"resource_providers"`
	}
	b.must(t, 200, "GET", "/resource_providers", "", nil, &list)
	if len(list.Providers) != 2 {
		t.Errorf("%d providers left, want 2", len(list.Providers))
	}
}
