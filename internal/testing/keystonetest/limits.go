package keystonetest

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// serviceSeq names each test's limits service apart: a Keystone (and its
// limits) is shared by a package's tests.
var serviceSeq atomic.Int64

// LimitsService creates a service of a name of its own in Keystone, with
// registered limits (Keystone's names: class:VCPU, servers), gives
// Berth's service user the reader role on the system, and returns the
// service's name and id.
func (k *Keystone) LimitsService(t testing.TB, registered map[string]int) (name, id string) {
	t.Helper()
	name = fmt.Sprintf("placement-quota-%d-%d", time.Now().UnixNano(), serviceSeq.Add(1))
	var svc struct {
		Service struct{ ID string } `json:"service"`
	}
	k.Admin(t, http.MethodPost, "/services", map[string]any{"service": map[string]any{"type": name, "name": name}}, &svc, http.StatusCreated)
	var rls []map[string]any
	for r, v := range registered {
		rls = append(rls, map[string]any{"service_id": svc.Service.ID, "resource_name": r, "default_limit": v})
	}
	k.Admin(t, http.MethodPost, "/registered_limits", map[string]any{"registered_limits": rls}, nil, http.StatusCreated)
	k.GrantSystemReader(t, Placement)
	return name, svc.Service.ID
}

// ProjectLimit creates project's limit of resource (Keystone's name) for
// the service and returns its id.
func (k *Keystone) ProjectLimit(t testing.TB, serviceID, project, resource string, limit int) string {
	t.Helper()
	var created struct {
		Limits []struct{ ID string } `json:"limits"`
	}
	k.Admin(t, http.MethodPost, "/limits", map[string]any{"limits": []map[string]any{{
		"service_id": serviceID, "project_id": project, "resource_name": resource, "resource_limit": limit}}}, &created, http.StatusCreated)
	if len(created.Limits) != 1 {
		t.Fatalf("keystone created %d limits", len(created.Limits))
	}
	return created.Limits[0].ID
}

// ChangeLimit sets the project limit id to limit.
func (k *Keystone) ChangeLimit(t testing.TB, id string, limit int) {
	t.Helper()
	k.Admin(t, http.MethodPatch, "/limits/"+id, map[string]any{"limit": map[string]any{"resource_limit": limit}}, nil, http.StatusOK)
}
