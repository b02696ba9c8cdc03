package snapshot_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

const (
	uCN1  = "11111111-1111-1111-1111-111111111111"
	uNUMA = "22222222-2222-2222-2222-222222222222"
	uSS   = "33333333-3333-3333-3333-333333333333"
	uAgg  = "44444444-4444-4444-4444-444444444444"
)

// candidateSet renders candidates as sorted "uuid-prefix:CLASS=n" strings.
func candidateSet(c *engine.Candidates) []string {
	var out []string
	for _, ar := range c.Requests {
		var parts []string
		for _, a := range ar.Allocations {
			for _, r := range a.Resources {
				parts = append(parts, a.ProviderUUID[:4]+":"+r.Class)
			}
		}
		sort.Strings(parts)
		out = append(out, strings.Join(parts, " "))
	}
	sort.Strings(out)
	return out
}

func TestSnapshotFromDatabase(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	ctx := context.Background()
	store := ledgertest.OpenStore(t, dbURL)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("exec %q: %v", sql, err)
		}
	}
	ledgertest.MustCreate(t, store, "cn1", uCN1, "")
	ledgertest.MustCreate(t, store, "numa", uNUMA, uCN1)
	ledgertest.MustCreate(t, store, "ss", uSS, "")
	inv := func(rp, class string, total int64) {
		exec(`INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
			SELECT rp.id, rc.id, $3, 0, 1, $3, 1, 1.0 FROM resource_providers rp, resource_classes rc
			WHERE rp.uuid = $1 AND rc.name = $2`, rp, class, total)
	}
	inv(uNUMA, "VCPU", 8)
	inv(uSS, "DISK_GB", 100)
	// Usage written behind the Store's back is still read on first load.
	exec(`INSERT INTO projects (external_id) VALUES ('p')`)
	exec(`INSERT INTO users (external_id) VALUES ('u')`)
	exec(`INSERT INTO consumers (uuid, project_id, user_id) VALUES ('55555555-5555-5555-5555-555555555555', 1, 1)`)
	exec(`INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
		SELECT rp.id, 1, 0, 3 FROM resource_providers rp WHERE rp.uuid = $1`, uNUMA)
	for _, rp := range []string{uCN1, uSS} {
		if _, err := store.Providers.ProviderAggregatesReplace(ctx, rp, []string{uAgg}, resources.AggregatesReplaceParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := store.Providers.ProviderTraitsReplace(ctx, uSS, 0, []string{"MISC_SHARES_VIA_AGGREGATE"}); err != nil {
		t.Fatal(err)
	}

	query := func(s *ledger.Store) *engine.Candidates {
		t.Helper()
		c, err := s.Snapshots.AllocationCandidates(ctx, engine.CandidatesParams{NestedAware: true,
			Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 5}, {Class: "DISK_GB", Amount: 10}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := query(store)
	if got := candidateSet(c); len(got) != 1 || got[0] != "2222:VCPU 3333:DISK_GB" {
		t.Fatalf("candidates %q, want numa VCPU + ss DISK_GB", got)
	}
	for _, ps := range c.Summaries {
		if ps.UUID == uNUMA && (ps.Resources[0].Used != 3 || ps.Resources[0].Capacity != 8 || ps.ParentUUID != uCN1 || ps.RootUUID != uCN1) {
			t.Errorf("numa summary %+v", ps)
		}
	}

	// Read-your-writes: the trait change is seen by the next query.
	if _, _, err := store.Providers.ProviderTraitsReplace(ctx, uSS, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := candidateSet(query(store)); len(got) != 0 {
		t.Fatalf("after removing the sharing trait: %q, want none", got)
	}

	// A second process on the same database learns of writes through
	// PostgreSQL notifications.
	peer := ledgertest.OpenStore(t, dbURL)
	if got := candidateSet(query(peer)); len(got) != 0 {
		t.Fatalf("peer: %q, want none", got)
	}
	if _, _, err := store.Providers.ProviderTraitsReplace(ctx, uSS, 2, []string{"MISC_SHARES_VIA_AGGREGATE"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(query(peer).Requests) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("peer never saw the change")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The provider list reads the same snapshot.
	list, err := store.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{InTree: uNUMA})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].UUID != uCN1 || list[1].ParentUUID != uCN1 {
		t.Fatalf("in_tree list %+v", list)
	}
	_, err = store.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{Group: engine.RequestGroup{RequiredTraits: [][]string{{"CUSTOM_NOPE"}}}})
	var ue *engine.UnknownNameError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "No such trait(s): CUSTOM_NOPE") {
		t.Fatalf("unknown trait: %v", err)
	}

	// A trait created and deleted behind the snapshot's back is known,
	// then unknown again.
	if _, _, err := store.Providers.TraitEnsure(ctx, "CUSTOM_NEW"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{Group: engine.RequestGroup{RequiredTraits: [][]string{{"CUSTOM_NEW"}}}}); err != nil {
		t.Fatalf("new trait: %v", err)
	}
	if err := store.Providers.TraitDelete(ctx, "CUSTOM_NEW"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{Group: engine.RequestGroup{RequiredTraits: [][]string{{"CUSTOM_NEW"}}}}); err == nil {
		t.Fatal("deleted trait still resolves")
	}
}
