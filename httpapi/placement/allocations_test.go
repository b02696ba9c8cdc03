package placement

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

const (
	rpA = "8d830468-6395-46b0-b56a-f934a1d60bbe"
	rpB = "ed6ea55d-01ce-4e11-ba97-13a4e5540b3e"
)

// TestAllocationSchemasByMicroversion checks what each microversion's
// PUT /allocations/{consumer_uuid} body accepts.
func TestAllocationSchemasByMicroversion(t *testing.T) {
	list := `"allocations": [{"resource_provider": {"uuid": "` + rpA + `"}, "resources": {"VCPU": 1}}]`
	dict := `"allocations": {"` + rpA + `": {"resources": {"VCPU": 1}}}`
	owner := `, "project_id": "p", "user_id": "u"`
	tests := []struct {
		minor int
		body  string
		want  string // "" accepts
	}{
		{0, `{` + list + `}`, ""},
		{7, `{` + list + owner + `}`, "Additional properties are not allowed"},
		{8, `{` + list + `}`, "'project_id' is a required property"},
		{8, `{` + list + owner + `}`, ""},
		{11, `{"allocations": []` + owner + `}`, "[] is too short"},
		{12, `{` + list + owner + `}`, "is not of type 'object'"},
		{12, `{` + dict + owner + `}`, ""},
		{12, `{"allocations": {}` + owner + `}`, "{} does not have enough properties"},
		{27, `{` + dict + owner + `, "consumer_generation": 1}`, "'consumer_generation' was unexpected"},
		{28, `{` + dict + owner + `}`, "'consumer_generation' is a required property"},
		{28, `{` + dict + owner + `, "consumer_generation": null}`, ""},
		{28, `{"allocations": {}` + owner + `, "consumer_generation": 3}`, ""},
		{28, `{` + dict + owner + `, "consumer_generation": "1"}`, "'1' is not of type 'integer', 'null'"},
		{33, `{` + dict + owner + `, "consumer_generation": null, "mappings": {"": ["` + rpA + `"]}}`, "'mappings' was unexpected"},
		{34, `{` + dict + owner + `, "consumer_generation": null, "mappings": {"": ["` + rpA + `"]}}`, ""},
		{34, `{` + dict + owner + `, "consumer_generation": null, "mappings": {"x": "y"}}`, "'y' is not of type 'array'"},
		// Placement's group pattern is unanchored: a key without any group
		// character is not checked, a longer one is.
		{34, `{` + dict + owner + `, "consumer_generation": null, "mappings": {"!!": "y"}}`, ""},
		{34, `{` + dict + owner + `, "consumer_generation": null, "mappings": {"` + strings.Repeat("x", 70) + `": "y"}}`, "'y' is not of type 'array'"},
		{34, `{` + dict + owner + `, "consumer_generation": null, "mappings": {"g": ["nope"]}}`, "'nope' is not a 'uuid'"},
		{37, `{` + dict + owner + `, "consumer_generation": null, "consumer_type": "INSTANCE"}`, "'consumer_type' was unexpected"},
		{38, `{` + dict + owner + `, "consumer_generation": null}`, "'consumer_type' is a required property"},
		{38, `{` + dict + owner + `, "consumer_generation": null, "consumer_type": "instance"}`, "'instance' does not match '^[A-Z0-9_]+$'"},
		{38, `{` + dict + owner + `, "consumer_generation": null, "consumer_type": "INSTANCE"}`, ""},
		{39, `{"allocations": {"` + rpA + `": {"resources": {"VCPU": 0}}}` + owner + `, "consumer_generation": null, "consumer_type": "X"}`, "0 is less than the minimum of 1"},
	}
	for _, tt := range tests {
		err := wire.DecodeJSON([]byte(tt.body), putAllocationsSchema(wire.Version{Major: 1, Minor: tt.minor}), nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("1.%d %s: %v", tt.minor, tt.body, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("1.%d %s: got %v, want %q", tt.minor, tt.body, err, tt.want)
		}
	}
}

// TestConsumerBodyOrder checks that writes keep the client's order and
// that the list form keeps the last resources of a provider listed twice,
// in its first position, as Placement's dict conversion does.
func TestConsumerBodyOrder(t *testing.T) {
	var b consumerBody
	body := `{"allocations": [
		{"resource_provider": {"uuid": "` + rpB + `"}, "resources": {"VCPU": 1}},
		{"resource_provider": {"uuid": "` + rpA + `"}, "resources": {"DISK_GB": 5, "VCPU": 2}},
		{"resource_provider": {"uuid": "` + rpB + `"}, "resources": {"MEMORY_MB": 3}}]}`
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	w, err := b.toLedger("c", wire.Version{Major: 1, Minor: 7})
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Allocation{
		{ProviderUUID: rpB, Resources: []engine.ResourceAmount{{Class: "MEMORY_MB", Amount: 3}}},
		{ProviderUUID: rpA, Resources: []engine.ResourceAmount{{Class: "DISK_GB", Amount: 5}, {Class: "VCPU", Amount: 2}}},
	}
	if got, _ := json.Marshal(w.Allocations); string(got) != mustJSON(t, want) {
		t.Errorf("got %s, want %s", got, mustJSON(t, want))
	}
	if w.CheckGeneration || w.ConsumerType != "" {
		t.Errorf("1.7 write checks generation or sets a type: %+v", w)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInventoryDefaultsAndRendering checks Placement's defaults for absent
// fields and that allocation ratios render as Python floats.
func TestInventoryDefaultsAndRendering(t *testing.T) {
	var b inventoryBody
	if err := json.Unmarshal([]byte(`{"total": 10, "reserved": 2}`), &b); err != nil {
		t.Fatal(err)
	}
	inv := b.inventory("VCPU")
	want := engine.Inventory{ResourceClass: "VCPU", Total: 10, Reserved: 2, MinUnit: 1,
		MaxUnit: resources.MaxInventoryValue, StepSize: 1, AllocationRatio: 1}
	if inv != want {
		t.Errorf("got %+v, want %+v", inv, want)
	}
	got := mustJSON(t, renderInventory(inv, nil, nil))
	if !strings.Contains(got, `"allocation_ratio":1.0`) || strings.Contains(got, "generation") {
		t.Errorf("rendered %s", got)
	}
	inv.AllocationRatio = 1.5
	gen := int64(4)
	if got := mustJSON(t, renderInventory(inv, &gen, nil)); !strings.Contains(got, `"allocation_ratio":1.5`) ||
		!strings.Contains(got, `"resource_provider_generation":4`) {
		t.Errorf("rendered %s", got)
	}
}
