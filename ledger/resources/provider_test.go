package resources_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// wantError checks that err is a *fault.Error of kind with code (empty:
// any code) whose message contains substr.
func wantError(t *testing.T, err error, kind error, code, substr string) {
	t.Helper()
	var le *fault.Error
	if !errors.As(err, &le) {
		t.Fatalf("got error %v (%T), want a *fault.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q is not %v", le.Msg, kind)
	}
	if code != "" && le.Code != code {
		t.Errorf("error %q has code %q, want %q", le.Msg, le.Code, code)
	}
	if !strings.Contains(le.Msg, substr) {
		t.Errorf("error %q does not contain %q", le.Msg, substr)
	}
}

const (
	uuidA = "aaaaaaaa-0000-4000-8000-000000000001"
	uuidB = "bbbbbbbb-0000-4000-8000-000000000002"
	uuidC = "cccccccc-0000-4000-8000-000000000003"
	uuidD = "dddddddd-0000-4000-8000-000000000004"
)

func TestProviderCreateAndGet(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()

	// A dashless, upper-case uuid is stored in canonical form.
	p := ledgertest.MustCreate(t, s, "a", strings.ToUpper(strings.ReplaceAll(uuidA, "-", "")), "")
	if p.UUID != uuidA || p.RootUUID != uuidA || p.ParentUUID != "" || p.Generation != 0 {
		t.Errorf("created %+v", p)
	}
	got, err := s.Providers.ProviderGet(ctx, uuidA)
	if err != nil || got != p {
		t.Errorf("get: %+v, %v; want %+v", got, err, p)
	}

	_, err = s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{UUID: uuidB, Name: "a"})
	wantError(t, err, fault.ErrConflict, fault.CodeDuplicateName, "Conflicting resource provider name: a already exists")
	// Both taken: the name is reported, as Placement's insert does.
	_, err = s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{UUID: uuidA, Name: "a"})
	wantError(t, err, fault.ErrConflict, fault.CodeDuplicateName, "Conflicting resource provider name: a already exists")
	_, err = s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{UUID: strings.ReplaceAll(uuidA, "-", ""), Name: "other"})
	wantError(t, err, fault.ErrConflict, fault.CodeDuplicateName, "Conflicting resource provider uuid: "+uuidA+" already exists")

	gen := ledgertest.MustCreate(t, s, "generated", "", "")
	if len(gen.UUID) != 36 {
		t.Errorf("generated uuid %q", gen.UUID)
	}

	// A lookup compares the uuid as it is, as Placement's does: another
	// spelling of a stored uuid finds nothing.
	for _, other := range []string{strings.ToUpper(uuidA), strings.ReplaceAll(uuidA, "-", "")} {
		_, err = s.Providers.ProviderGet(ctx, other)
		wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid "+other+" found")
		_, _, err = s.Providers.ProviderTraits(ctx, other)
		wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid "+other+" found")
	}

	_, err = s.Providers.ProviderGet(ctx, "random_sauce")
	wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid random_sauce found")
	_, err = s.Providers.ProviderGet(ctx, uuidD)
	wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid "+uuidD+" found")
}

func TestProviderCreateChild(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	ledgertest.MustCreate(t, s, "root", uuidA, "")
	child := ledgertest.MustCreate(t, s, "child", uuidB, uuidA)
	grandchild := ledgertest.MustCreate(t, s, "grandchild", uuidC, uuidB)
	if child.ParentUUID != uuidA || child.RootUUID != uuidA {
		t.Errorf("child %+v", child)
	}
	if grandchild.ParentUUID != uuidB || grandchild.RootUUID != uuidA {
		t.Errorf("grandchild %+v", grandchild)
	}

	_, err := s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{UUID: uuidD, Name: "self", ParentUUID: uuidD})
	wantError(t, err, fault.ErrInvalid, "", `Unable to create resource provider "self", `+uuidD+`: `+
		`Object action create failed because: parent provider UUID cannot be same as UUID`)
	_, err = s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: "orphan", ParentUUID: uuidD})
	wantError(t, err, fault.ErrInvalid, "", "parent provider UUID does not exist.")
}

func TestProviderUpdate(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	ledgertest.MustCreate(t, s, "parent", uuidA, "")
	ledgertest.MustCreate(t, s, "child", uuidB, "")
	ledgertest.MustCreate(t, s, "grandchild", uuidC, uuidB)
	ledgertest.MustCreate(t, s, "other", uuidD, "")
	name := func(n string) *string { return &n }
	update := func(uuid string, p resources.ProviderUpdateParams) (engine.Provider, error) {
		return s.Providers.ProviderUpdate(ctx, uuid, p)
	}

	p, err := update(uuidB, resources.ProviderUpdateParams{Name: name("renamed")})
	if err != nil || p.Name != "renamed" || p.Generation != 0 {
		t.Fatalf("rename: %+v, %v", p, err)
	}
	_, err = update(uuidB, resources.ProviderUpdateParams{Name: name("parent")})
	wantError(t, err, fault.ErrConflict, fault.CodeDuplicateName, "parent already exists")

	// Giving a root a parent is allowed at any microversion, and moves the
	// whole subtree.
	p, err = update(uuidB, resources.ProviderUpdateParams{SetParent: true, ParentUUID: uuidA})
	if err != nil || p.ParentUUID != uuidA || p.RootUUID != uuidA {
		t.Fatalf("parent: %+v, %v", p, err)
	}
	if gc, _ := s.Providers.ProviderGet(ctx, uuidC); gc.RootUUID != uuidA || gc.ParentUUID != uuidB {
		t.Errorf("grandchild after move: %+v", gc)
	}
	// Naming the same parent again is no change.
	if _, err = update(uuidB, resources.ProviderUpdateParams{SetParent: true, ParentUUID: uuidA}); err != nil {
		t.Errorf("same parent: %v", err)
	}

	// Before 1.37 an existing parent cannot be changed or removed.
	_, err = update(uuidB, resources.ProviderUpdateParams{SetParent: true, ParentUUID: uuidD})
	wantError(t, err, fault.ErrInvalid, "", "Unable to save resource provider "+uuidB+
		": Object action update failed because: re-parenting a provider is not currently allowed.")
	_, err = update(uuidB, resources.ProviderUpdateParams{SetParent: true})
	wantError(t, err, fault.ErrInvalid, "", "un-parenting a provider is not currently allowed.")
	_, err = update(uuidB, resources.ProviderUpdateParams{SetParent: true, ParentUUID: "ffffffff-0000-4000-8000-000000000000"})
	wantError(t, err, fault.ErrInvalid, "", "parent provider UUID does not exist.")

	// Loops are refused: a provider under itself or under a descendant.
	for _, parent := range []string{uuidA, uuidB, uuidC} {
		_, err = update(uuidA, resources.ProviderUpdateParams{SetParent: true, ParentUUID: parent, AllowReparent: true})
		wantError(t, err, fault.ErrInvalid, "", "creating loop in the provider tree is not allowed.")
	}

	// From 1.37: re-parent to another tree, then un-parent.
	p, err = update(uuidB, resources.ProviderUpdateParams{SetParent: true, ParentUUID: uuidD, AllowReparent: true})
	if err != nil || p.ParentUUID != uuidD || p.RootUUID != uuidD {
		t.Fatalf("re-parent: %+v, %v", p, err)
	}
	if gc, _ := s.Providers.ProviderGet(ctx, uuidC); gc.RootUUID != uuidD {
		t.Errorf("grandchild after re-parent: %+v", gc)
	}
	p, err = update(uuidB, resources.ProviderUpdateParams{SetParent: true, AllowReparent: true})
	if err != nil || p.ParentUUID != "" || p.RootUUID != uuidB {
		t.Fatalf("un-parent: %+v, %v", p, err)
	}
	if gc, _ := s.Providers.ProviderGet(ctx, uuidC); gc.RootUUID != uuidB {
		t.Errorf("grandchild after un-parent: %+v", gc)
	}

	_, err = update(uuidA[:8], resources.ProviderUpdateParams{Name: name("x")})
	wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid")
}

func TestProviderDelete(t *testing.T) {
	s, exec := newTestStore(t)
	ctx := context.Background()
	root := ledgertest.MustCreate(t, s, "root", uuidA, "")
	child := ledgertest.MustCreate(t, s, "child", uuidB, uuidA)

	err := s.Providers.ProviderDelete(ctx, uuidA)
	wantError(t, err, fault.ErrConflict, fault.CodeProviderCannotDelete,
		"Unable to delete parent resource provider "+uuidA+": It has child resource providers.")

	// A provider with allocations cannot go; one with inventory, traits
	// and aggregates can, and takes them along.
	exec(`INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
	      VALUES ($1, 0, 8, 0, 1, 8, 1, 1.0)`, child.ID)
	exec(`INSERT INTO projects (external_id) VALUES ('p')`)
	exec(`INSERT INTO users (external_id) VALUES ('u')`)
	exec(`INSERT INTO consumers (uuid, project_id, user_id) VALUES ($1, 1, 1)`, uuidD)
	exec(`INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) VALUES ($1, 1, 0, 2)`, child.ID)
	err = s.Providers.ProviderDelete(ctx, uuidB)
	wantError(t, err, fault.ErrConflict, fault.CodeProviderInUse, "Unable to delete resource provider "+uuidB)

	exec(`DELETE FROM allocations`)
	if _, _, err := s.Providers.ProviderTraitsReplace(ctx, uuidB, 0, []string{"HW_CPU_X86_AVX"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Providers.ProviderAggregatesReplace(ctx, uuidB, []string{uuidC}, resources.AggregatesReplaceParams{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Providers.ProviderDelete(ctx, uuidB); err != nil {
		t.Fatalf("delete child: %v", err)
	}
	if err := s.Providers.ProviderDelete(ctx, root.UUID); err != nil {
		t.Fatalf("delete root: %v", err)
	}
	err = s.Providers.ProviderDelete(ctx, uuidB)
	wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid "+uuidB+" found for delete")
	err = s.Providers.ProviderDelete(ctx, "not-a-uuid")
	wantError(t, err, fault.ErrNotFound, "", "found for delete")
}

// TestProviderReparentConcurrently moves providers between trees from many
// goroutines and checks that every provider ends with the root of its
// parent chain.
func TestProviderReparentConcurrently(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	roots := []string{uuidA, uuidB}
	for i, u := range roots {
		ledgertest.MustCreate(t, s, "root"+string(rune('0'+i)), u, "")
	}
	var kids []string
	for i := 0; i < 6; i++ {
		kids = append(kids, ledgertest.MustCreate(t, s, "kid"+string(rune('0'+i)), "", roots[i%2]).UUID)
	}
	var wg sync.WaitGroup
	for i, kid := range kids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				parent := roots[(i+j)%2]
				if j%2 == 1 && i > 0 {
					parent = kids[i-1] // sometimes nest under a sibling
				}
				_, err := s.Providers.ProviderUpdate(ctx, kid, resources.ProviderUpdateParams{
					SetParent: true, ParentUUID: parent, AllowReparent: true})
				if err != nil && !errors.Is(err, fault.ErrInvalid) && !errors.Is(err, fault.ErrConflict) {
					t.Errorf("move %s: %v", kid, err)
				}
			}
		}()
	}
	wg.Wait()
	byUUID := map[string]engine.Provider{}
	for _, u := range append(roots, kids...) {
		p, err := s.Providers.ProviderGet(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		byUUID[u] = p
	}
	for _, p := range byUUID {
		top := p
		for steps := 0; top.ParentUUID != ""; steps++ {
			if steps > len(byUUID) {
				t.Fatalf("loop above %s", p.UUID)
			}
			top = byUUID[top.ParentUUID]
		}
		if p.RootUUID != top.UUID {
			t.Errorf("provider %s has root %s, but its top ancestor is %s", p.UUID, p.RootUUID, top.UUID)
		}
	}
}

// TestProviderDeleteSeesAllocationsCommittedWhileItWaits: allocations
// have no foreign key to their provider (migrations/0020), so a delete
// must find the allocations a writer committed while the delete waited
// for the provider's lock. The general path (the fast one is off here)
// checks in a statement after its lock, whose snapshot holds them.
func TestProviderDeleteSeesAllocationsCommittedWhileItWaits(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	f := newFixtureOn(t, dbURL)
	resources.SetGeneralWrites(f.Store.Providers, true)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 8))
	f.Known([]string{"proj"}, []string{"user"}, nil)

	conn, err := pgx.Connect(f.Ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(f.Ctx, `
		WITH p AS (SELECT id FROM resource_providers WHERE uuid = $1 FOR UPDATE),
		c AS (INSERT INTO consumers (uuid, project_id, user_id)
		      SELECT $2, (SELECT id FROM projects WHERE external_id = 'proj'), (SELECT id FROM users WHERE external_id = 'user')
		      RETURNING id)
		INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
		SELECT c.id, p.id, 0, 1 FROM c, p`, rp, uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- f.Store.Providers.ProviderDelete(f.Ctx, rp) }()
	ledgertest.WaitFor(t, func() bool {
		var waiting bool
		err := f.DB.QueryRow(f.Ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%' AND pid <> pg_backend_pid())`).Scan(&waiting)
		return err == nil && waiting
	})
	if err := tx.Commit(f.Ctx); err != nil {
		t.Fatal(err)
	}
	wantError(t, <-deleted, fault.ErrConflict, fault.CodeProviderInUse,
		"Unable to delete resource provider "+rp+": Resource provider has allocations.")
	var orphans int
	if err := f.DB.QueryRow(f.Ctx, `SELECT count(*) FROM allocations a
		WHERE NOT EXISTS (SELECT 1 FROM resource_providers p WHERE p.id = a.resource_provider_id)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d allocations without their provider (%v)", orphans, err)
	}
}

// TestProviderDeleteRacesClaims races claimers, which keep what they
// write, against a deleter that removes every allocation of a provider
// and then tries to delete the provider, until every provider is gone,
// by the fast path and by the general one. No allocation may outlive its
// provider, and no claim may fail with anything but a 4xx.
func TestProviderDeleteRacesClaims(t *testing.T) {
	for _, general := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast", true: "general"}[general], func(t *testing.T) {
			f := newFixture(t)
			resources.SetGeneralWrites(f.Store.Providers, general)
			f.Known([]string{"proj"}, []string{"user"}, []string{"INSTANCE"})
			var rps []string
			for i := range 4 {
				rps = append(rps, f.Provider("rp"+strconv.Itoa(i), ledgertest.Inv("VCPU", 1000)))
			}
			const claimers, rounds = 6, 20
			var wg sync.WaitGroup
			errs := make(chan error, claimers*rounds+len(rps))
			for w := range claimers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range rounds {
						c := ledgertest.NewClaim(uuid.NewString(), rps[(w+i)%len(rps)], ledgertest.Res("VCPU", 1))
						var le *fault.Error
						if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{c}); err != nil && !errors.As(err, &le) {
							errs <- err // not a 4xx answer
						}
					}
				}()
			}
			var held sync.Mutex // f.DB is one connection
			for _, rp := range rps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for f.Ctx.Err() == nil {
						held.Lock()
						rows, _ := f.DB.Query(f.Ctx, `SELECT DISTINCT c.uuid::text FROM consumers c
							JOIN allocations a ON a.consumer_id = c.id
							JOIN resource_providers p ON p.id = a.resource_provider_id WHERE p.uuid = $1`, rp)
						consumers, err := pgx.CollectRows(rows, pgx.RowTo[string])
						held.Unlock()
						if err != nil {
							errs <- err
							return
						}
						for _, c := range consumers {
							if err := f.Store.Allocations.AllocationsDelete(f.Ctx, c); err != nil && !errors.Is(err, fault.ErrNotFound) {
								errs <- err
								return
							}
						}
						err = f.Store.Providers.ProviderDelete(f.Ctx, rp)
						if err == nil {
							return
						}
						if !errors.Is(err, fault.ErrConflict) {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("claim or delete: %v", err)
			}
			var orphans, providers int
			if err := f.DB.QueryRow(f.Ctx, `SELECT (SELECT count(*) FROM allocations a
				WHERE NOT EXISTS (SELECT 1 FROM resource_providers p WHERE p.id = a.resource_provider_id)),
				(SELECT count(*) FROM resource_providers)`).Scan(&orphans, &providers); err != nil {
				t.Fatal(err)
			}
			if orphans != 0 || providers != 0 {
				t.Fatalf("%d allocations without their provider, %d providers left", orphans, providers)
			}
		})
	}
}
