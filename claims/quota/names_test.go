package quota

import (
	"fmt"
	"testing"

	"github.com/berthd/berth/internal/keystone"
	"github.com/berthd/berth/ledger/quotas"
)

// Keystone's names are Nova's: class:X is the class X, servers the
// consumers; other names are not Berth's.
func TestResourceNames(t *testing.T) {
	for name, want := range map[string]string{
		"class:VCPU": "VCPU", "class:CUSTOM_GOLD": "CUSTOM_GOLD", "servers": quotas.ResourceConsumers,
		"class:": "", "server_groups": "", "cores": "", "VCPU": "",
	} {
		got, ok := Resource(name)
		if got != want || ok != (want != "") {
			t.Errorf("Resource(%q) = %q, %v; want %q", name, got, ok, want)
		}
		if ok && KeystoneName(got) != name {
			t.Errorf("KeystoneName(%q) = %q, want %q", got, KeystoneName(got), name)
		}
	}
}

// Of limits of one resource in several regions the smallest holds, -1
// (unlimited) the least; a project's own limit overrides the registered
// one resource by resource, and -1 there lifts it.
func TestLimitsMerged(t *testing.T) {
	got := berthLimits([]keystone.Limit{
		{Resource: "class:VCPU", Limit: 10, Region: "a"}, {Resource: "class:VCPU", Limit: 4, Region: "b"},
		{Resource: "servers", Limit: -1, Region: "a"}, {Resource: "servers", Limit: 7, Region: "b"},
		{Resource: "class:DISK_GB", Limit: -1}, {Resource: "ram", Limit: 1},
	})
	if want := (quotas.Limits{"VCPU": 4, quotas.ResourceConsumers: 7, "DISK_GB": -1}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("berthLimits = %v, want %v", got, want)
	}
	eff := Effective(quotas.Limits{"VCPU": 8, "DISK_GB": -1}, quotas.Limits{"VCPU": 2, "DISK_GB": 100, "MEMORY_MB": 512})
	if want := (quotas.Limits{"VCPU": 8, "MEMORY_MB": 512}); fmt.Sprint(eff) != fmt.Sprint(want) {
		t.Fatalf("Effective = %v, want %v", eff, want)
	}
}
