package quota

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/berthd/berth/internal/keystone"
	"github.com/berthd/berth/internal/testing/keystonetest"
	"github.com/berthd/berth/ledger/quotas"
)

// One Keystone serves every test of the package that needs one.
func TestMain(m *testing.M) { keystonetest.Main(m) }

// TestLimitsReader reads the registered limits and project limits of a
// service from a real Keystone with a system-scoped token of Berth's
// service user, and maps Nova's names to Berth's resources.
func TestLimitsReader(t *testing.T) {
	k := keystonetest.Shared(t)
	name, id := k.LimitsService(t, map[string]int{"class:VCPU": 8, "servers": 2, "class:MEMORY_MB": -1, "server_groups": 10})
	demo := k.ProjectIDs[keystonetest.DemoProject]
	k.ProjectLimit(t, id, demo, "class:VCPU", 4)
	c, err := keystone.New(context.Background(), keystone.Config{AuthURL: k.URL, Username: keystonetest.Placement,
		Password: keystonetest.Password(keystonetest.Placement), ProjectName: keystonetest.ServiceProject, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.LimitsReader(name, "")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewKeystone(KeystoneConfig{Reader: r})
	if err != nil {
		t.Fatal(err)
	}
	own, registered, err := src.Limits(context.Background(), demo)
	if err != nil {
		t.Fatal(err)
	}
	wantReg := quotas.Limits{"VCPU": 8, quotas.ResourceConsumers: 2, "MEMORY_MB": -1}
	if fmt.Sprint(own) != fmt.Sprint(quotas.Limits{"VCPU": 4}) || fmt.Sprint(registered) != fmt.Sprint(wantReg) {
		t.Fatalf("demo's limits: own %v, registered %v; want own VCPU 4, registered %v", own, registered, wantReg)
	}
	q, err := src.Quota(context.Background(), demo, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(q.Given[demo]) != fmt.Sprint(quotas.Limits{"VCPU": 4, quotas.ResourceConsumers: 2}) ||
		fmt.Sprint(q.Given["someone-else"]) != fmt.Sprint(quotas.Limits{"VCPU": 8, quotas.ResourceConsumers: 2}) {
		t.Fatalf("quota: %v", q.Given)
	}
	bad, err := c.LimitsReader("no-such-service", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Registered(context.Background()); !errors.Is(err, keystone.ErrNoService) {
		t.Fatalf("limits of a service that does not exist: %v", err)
	}
}
