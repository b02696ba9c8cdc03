package placement

import (
	"encoding/json"
	"strings"
	"testing"
)

// A write's answer echoes numbers as Placement's does: an integer ratio
// stays an integer, an integral float total stays a float; a read prints
// what is stored.
func TestInventoryEcho(t *testing.T) {
	var b inventoryBody
	if err := json.Unmarshal([]byte(`{"total": 4.0, "reserved": 1, "allocation_ratio": 16}`), &b); err != nil {
		t.Fatal(err)
	}
	inv := b.inventory("DISK_GB")
	if inv.Total != 4 || inv.Reserved != 1 || inv.AllocationRatio != 16 {
		t.Fatalf("inventory %+v", inv)
	}
	if got := mustJSON(t, renderInventory(inv, nil, b.literals())); !strings.Contains(got, `"total":4.0,"reserved":1,`) || !strings.Contains(got, `"allocation_ratio":16}`) {
		t.Errorf("echo %s", got)
	}
	if got := mustJSON(t, renderInventory(inv, nil, nil)); !strings.Contains(got, `"total":4,"reserved":1,`) || !strings.Contains(got, `"allocation_ratio":16.0}`) {
		t.Errorf("read %s", got)
	}
	if err := json.Unmarshal([]byte(`{"total": 4.5}`), &b); err == nil {
		t.Error("4.5 taken for an integer")
	}
}
