package compose

import (
	"context"
	"testing"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/scheduler"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// Build wires the components to each other: the claimer resolves policies
// through the catalogue, whose fallback is the configured scheduler policy, and
// the enforcer defaults to the admin rule set.
func TestBuild(t *testing.T) {
	ctx := context.Background()
	store := ledgertest.NewStore(t)
	fallback, err := scheduler.NewPolicy(scheduler.PolicyConfig{Weighers: []scheduler.PluginConfig{{Name: scheduler.PackName}}},
		nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(Config{Store: store, SchedulerPolicy: fallback})
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != store || c.Claimer == nil || c.Catalog == nil || c.Cloud == nil || c.Logger == nil {
		t.Fatalf("components missing: %+v", c)
	}
	if p, _, err := c.Catalog.Policy(ctx, ""); err != nil || p != fallback {
		t.Errorf("default policy = %p, %v; want the fallback %p", p, err, fallback)
	}
	admin := authz.Credentials{Roles: []string{"admin"}, ProjectID: "p"}
	member := authz.Credentials{Roles: []string{"member"}, ProjectID: "p"}
	target := authz.Target{"project_id": "p"}
	if !c.Authz.Allowed("berth:claims:create", admin, target) || c.Authz.Allowed("berth:claims:create", member, target) {
		t.Error("the default enforcer is not the admin rule set")
	}

	secure, err := authz.New(authz.SetSecure, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Build(Config{Store: store, Authz: secure}); err != nil || c.Authz != secure {
		t.Errorf("Build kept not the given enforcer: %v", err)
	}
}
