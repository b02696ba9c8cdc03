package placement_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestInventoryBelowUsage: as in Placement, PUT .../inventories may leave
// usage above capacity (200, and a warning naming provider and class);
// then nothing more fits there, and GET /capacity lists the class.
func TestInventoryBelowUsage(t *testing.T) {
	ctx := context.Background()
	var logs proctest.Buffer
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: ledgertest.NewDB(t), MaxConns: 4,
		AcquireTimeout: ledgertest.AcquireTimeout, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	rp := ledgertest.Provider(t, store, "cn1", resources.DefaultInventory("VCPU", 8), resources.DefaultInventory("DISK_GB", 100))
	if err := store.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{{ConsumerUUID: "c0000000-0000-4000-8000-000000000001",
		ProjectID: "p", UserID: "u", Allocations: []engine.Allocation{{ProviderUUID: rp,
			Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 6}, {Class: "DISK_GB", Amount: 50}}}}}}); err != nil {
		t.Fatal(err)
	}
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	code, body := apitest.Call(t, s, http.MethodPut, "/resource_providers/"+rp+"/inventories", "admin",
		`{"resource_provider_generation": 2, "inventories": {"VCPU": {"total": 4}, "DISK_GB": {"total": 100}}}`)
	if code != http.StatusOK {
		t.Fatalf("PUT inventories below usage: %d %v", code, body)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "resource_provider="+rp) ||
		!strings.Contains(l, "resource_class=VCPU") || strings.Contains(l, "resource_class=DISK_GB") {
		t.Errorf("warning: %s", l)
	}
	code, body = apitest.Call(t, s, http.MethodPut, "/allocations/c0000000-0000-4000-8000-000000000002", "admin",
		`{"allocations": {"`+rp+`": {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`)
	if code != http.StatusConflict {
		t.Errorf("a new allocation on the over-capacity class: %d %v", code, body)
	}
	code, body = apitest.Call(t, s, http.MethodGet, "/capacity?resources=DISK_GB:10", "admin", "")
	got, _ := json.Marshal(body["over_capacity"])
	want := `[{"capacity":4,"resource_class":"VCPU","resource_provider_uuid":"` + rp + `","used":6}]`
	if code != http.StatusOK || string(got) != want {
		t.Errorf("GET /capacity over_capacity: %d %s, want %s", code, got, want)
	}
	if n, err := store.Providers.OverCapacityCount(ctx); err != nil || n != 1 {
		t.Errorf("OverCapacityCount: %d %v", n, err)
	}
	// Deleting a class in use stays a conflict.
	code, body = apitest.Call(t, s, http.MethodDelete, "/resource_providers/"+rp+"/inventories/VCPU", "admin", "")
	if code != http.StatusConflict {
		t.Errorf("DELETE a class in use: %d %v", code, body)
	}
}
