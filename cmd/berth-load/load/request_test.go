package load

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestCandidateQueriesPaths(t *testing.T) {
	agg0 := AggregateUUID(0)
	want := map[string]string{
		"a-flavor":           "/allocation_candidates?resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20",
		"b-flavor-limit1000": "/allocation_candidates?resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20&limit=1000",
		"c-required-trait":   "/allocation_candidates?resources=VCPU:2,MEMORY_MB:4096&required=CUSTOM_BENCH_TRAIT",
		"d-member-of":        "/allocation_candidates?resources=VCPU:2&member_of=" + agg0,
		"e-providers":        "/resource_providers",
		"f-provider-uuid":    "/resource_providers?uuid=" + NodeUUID(0),
	}
	qs := CandidateQueries()
	if len(qs) != len(want) {
		t.Fatalf("%d queries, want %d", len(qs), len(want))
	}
	for _, q := range qs {
		if q.Path != want[q.Name] {
			t.Errorf("%s: path %s, want %s", q.Name, q.Path, want[q.Name])
		}
	}
}

func TestCandidatesQueryPath(t *testing.T) {
	tests := []struct {
		name string
		q    CandidatesQuery
		want string
	}{
		{"granular same_subtree", CandidatesQuery{
			Groups: []Group{
				{Suffix: "_COMPUTE", Resources: []Amount{{"VCPU", 1}, {"MEMORY_MB", 256}}, Required: []string{"HW_NUMA_ROOT", "!CUSTOM_X"}},
				{Suffix: "_ACC", Resources: []Amount{{"FPGA", 1}}},
			},
			GroupPolicy: "none", SameSubtree: []string{"_COMPUTE", "_ACC"}, Limit: 5,
		}, "/allocation_candidates?resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=HW_NUMA_ROOT,%21CUSTOM_X" +
			"&resources_ACC=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_ACC&limit=5"},
		{"member_of any of several", CandidatesQuery{Groups: []Group{{Resources: []Amount{{"VCPU", 1}}, MemberOf: []string{"a", "b"}}}},
			"/allocation_candidates?resources=VCPU:1&member_of=in:a,b"},
		{"odd characters are escaped", CandidatesQuery{Groups: []Group{{Suffix: "1", Resources: []Amount{{"A&B", 1}}}}},
			"/allocation_candidates?resources1=A%26B:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.Path(); got != tt.want {
				t.Errorf("Path() =\n %s\nwant\n %s", got, tt.want)
			}
		})
	}
}

func TestNestedAndWideQueries(t *testing.T) {
	qs := NestedQueries()
	if qs[0].Path != "/allocation_candidates?resources_COMPUTE=VCPU:1,MEMORY_MB:256&resources_ACC=FPGA:1"+
		"&resources_GPU=VGPU:1&group_policy=none&same_subtree=_COMPUTE,_ACC,_GPU" {
		t.Errorf("same-subtree path %s", qs[0].Path)
	}
	w := WideQuery(WideParams{Children: 21, Groups: 8})
	if got := strings.Count(w.Path, "=CUSTOM_WIDE_0:1"); got != 8 {
		t.Errorf("wide query has %d groups, want 8: %s", got, w.Path)
	}
	if !strings.Contains(w.Path, "resources8=CUSTOM_WIDE_0:1&group_policy=none") || w.Name != "wide-21x8-none" {
		t.Errorf("wide query %s %s", w.Name, w.Path)
	}
	w = WideQuery(WideParams{Groups: 3, Classes: 2, GroupPolicy: "isolate"})
	if !strings.HasSuffix(w.Path, "resources1=CUSTOM_WIDE_0:1&resources2=CUSTOM_WIDE_1:1&resources3=CUSTOM_WIDE_0:1&group_policy=isolate") {
		t.Errorf("wide query with classes: %s", w.Path)
	}
}

func TestParseResources(t *testing.T) {
	got, err := ParseResources("VCPU:4, MEMORY_MB:16384,DISK_GB:100")
	if err != nil {
		t.Fatal(err)
	}
	if formatResources(got) != "VCPU:4,MEMORY_MB:16384,DISK_GB:100" {
		t.Errorf("round trip gave %s", formatResources(got))
	}
	for _, bad := range []string{"", "VCPU", "VCPU:", "VCPU:0", "VCPU:-1", ":3", "VCPU:x"} {
		if _, err := ParseResources(bad); err == nil {
			t.Errorf("ParseResources(%q) accepted", bad)
		}
	}
}

func TestNewClaimBody(t *testing.T) {
	var ar AllocationRequest
	if err := json.Unmarshal([]byte(`{"allocations":{"rp1":{"resources":{"VCPU":4,"DISK_GB":100}}},"mappings":{"":["rp1"]}}`), &ar); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(NewClaimBody(ar, "proj", "user", "INSTANCE"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"allocations":{"rp1":{"resources":{"DISK_GB":100,"VCPU":4}}},"project_id":"proj","user_id":"user","consumer_generation":null,"consumer_type":"INSTANCE"}`
	if string(b) != want {
		t.Errorf("claim body\n %s\nwant\n %s", b, want)
	}
}

func TestComputeNodeInventory(t *testing.T) {
	inv := ComputeNodeInventory()
	caps := map[string]float64{"VCPU": 256, "MEMORY_MB": 258048, "DISK_GB": 3900}
	for class, want := range caps {
		if got := inv[class].Capacity(); got != want {
			t.Errorf("%s capacity %g, want %g", class, got, want)
		}
	}
	b, _ := json.Marshal(InventoriesBody{ResourceProviderGeneration: 3, Inventories: map[string]InventoryBody{"VCPU": inv["VCPU"]}})
	want := `{"resource_provider_generation":3,"inventories":{"VCPU":{"total":64,"reserved":0,"min_unit":1,"max_unit":64,"step_size":1,"allocation_ratio":4}}}`
	if string(b) != want {
		t.Errorf("inventories body %s, want %s", b, want)
	}
}

func TestOvercommits(t *testing.T) {
	inv := ComputeNodeInventory()
	tests := []struct {
		name   string
		usages map[string]int
		want   []string
	}{
		{"empty", map[string]int{}, nil},
		{"at capacity is fine", map[string]int{"VCPU": 256, "MEMORY_MB": 258048, "DISK_GB": 3900}, nil},
		{"one over", map[string]int{"VCPU": 257, "MEMORY_MB": 1}, []string{"VCPU"}},
		{"reserved counts", map[string]int{"DISK_GB": 3901, "MEMORY_MB": 258049}, []string{"DISK_GB", "MEMORY_MB"}},
		{"usage without inventory", map[string]int{"VGPU": 1}, []string{"VGPU"}},
		{"zero usage without inventory is fine", map[string]int{"VGPU": 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Overcommits("rp", inv, tt.usages)
			var classes []string
			for _, o := range got {
				classes = append(classes, o.Class)
			}
			if strings.Join(classes, ",") != strings.Join(tt.want, ",") {
				t.Errorf("overcommitted %v, want %v", classes, tt.want)
			}
		})
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-([45])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestUUIDs(t *testing.T) {
	a, b := NodeUUID(7), NodeUUID(7)
	if a != b {
		t.Errorf("NodeUUID not deterministic: %s %s", a, b)
	}
	if m := uuidRE.FindStringSubmatch(a); m == nil || m[1] != "5" {
		t.Errorf("NodeUUID %s is not a version 5 UUID", a)
	}
	if NodeUUID(7) == NodeUUID(8) || AggregateUUID(0) == AggregateUUID(1) || AggregateUUID(0) == NodeUUID(0) {
		t.Error("distinct names share a UUID")
	}
	if NodeName(42) != "bench-cn-00042" {
		t.Errorf("NodeName(42) = %s", NodeName(42))
	}
}
